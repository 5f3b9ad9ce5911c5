"""``POST /fray/jobs/<id>/resubmit`` (``fray_jupyter.server.resubmit``) through a real Jupyter server
(pytest-jupyter) against a real embedded controller: the stored request is sent again beside the old
job as ``<name>-r2``, then ``-r3``, or under a given name; a name that is taken or not one path
component is refused with the client's one line and nothing is sent; an unknown job is 404 and an
unauthenticated request 403. pytest-jupyter's fixtures are imported into this module only."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from pytest_jupyter.jupyter_server import *

from fray_jupyter.client import FrayClient
from tests.controller_harness import launch_request
from tests.fray_rest import Reply, announced, job_path, jp_server_config, no_controller_env, rest  # noqa: F401 - fixtures


@pytest.fixture
def resubmit(rest: Callable[..., Reply]) -> Callable[..., Reply]:  # noqa: F811
    def call(job_id: str, *, name: str | None = None, auth: bool = True) -> Reply:
        return rest(job_path(job_id, "resubmit"), method="POST", query={"name": name} if name is not None else None,
                    auth=auth)
    return call


def test_resubmit_sends_the_stored_request_again_under_a_fresh_name(resubmit: Callable[..., Reply],
                                                                    client: FrayClient) -> None:
    old = client.submit(launch_request(f"echo-{time.monotonic_ns()}", "echo resubmitted"))
    client.wait(old, timeout=60)
    first = resubmit(old)
    assert first.code == 200, first.body
    assert first.body["job_id"] == f"{old}-r2" and first.body["job"]["job_id"] == f"{old}-r2"
    assert first.body["job"]["user"] == "alice"
    assert client.job(f"{old}-r2").request.entrypoint == client.job(old).request.entrypoint
    assert resubmit(old).body["job_id"] == f"{old}-r3"
    named = resubmit(old, name="again")
    assert named.code == 200 and named.body["job_id"] == f"{old.rpartition('/')[0]}/again"


@pytest.mark.parametrize(("name", "message"), [
    ("taken", "already exists; give another name"),
    ("a/b", "must be one path component"),
])
def test_a_refused_resubmit_says_why_and_sends_nothing(resubmit: Callable[..., Reply], client: FrayClient,
                                                        name: str, message: str) -> None:
    old = client.submit(launch_request(f"echo-{time.monotonic_ns()}", "true"))
    client.submit(launch_request("taken", "true"))
    before = client.list(user=None, scope="all", limit=500).total
    refused = resubmit(old, name=name)
    assert refused.code == 400 and message in refused.body["message"], refused.body
    assert refused.body["message"].startswith(f"cannot resubmit {old}")
    assert client.list(user=None, scope="all", limit=500).total == before


def test_unknown_jobs_and_strangers_are_refused(resubmit: Callable[..., Reply]) -> None:
    missing = resubmit("/alice/no-such-job")
    assert missing.code == 404 and missing.body["code"] == "not_found"
    assert resubmit("/alice/no-such-job", auth=False).code == 403
