"""``iris.wire``'s proxy paths against Iris's own (``rigging.connect.proxy_path``, marin's installed
package, the spec): where a controller relays an endpoint, and the link a browser opens it by."""

from __future__ import annotations

import pytest

from fray_jupyter.iris.wire import proxy_link, proxy_url

NAMES = ["/alice/train/xprof", "/system/log-server", "alice/actor", "/bob/job/session-0"]


@pytest.mark.parametrize("name", NAMES)
def test_a_proxy_url_is_the_path_iris_s_own_client_builds(name: str) -> None:
    connect = pytest.importorskip("rigging.connect")
    assert proxy_url("http://ctl:10000/", name) == "http://ctl:10000" + connect.proxy_path(name)


def test_a_link_opens_the_endpoint_under_the_dashboard_and_there_is_none_without_one() -> None:
    assert proxy_link("https://iris.example.com", "/alice/train/xprof") == \
        "https://iris.example.com/proxy/alice.train.xprof/"
    assert proxy_link(None, "/alice/train/xprof") == proxy_link("", "/alice/train/xprof") == ""
