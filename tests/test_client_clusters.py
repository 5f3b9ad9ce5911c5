"""client.clusters: a cluster name resolves through Iris's own ``connect_controller`` (manifests in
``~/.config/marin/clusters``, credentials from rigging's store), every call carries the current
token, an expired login is one line, the resolution lives as long as the client.

Real parts: a local-kind manifest starts a genuine Iris local cluster; the IAP path runs against a
real Iris controller behind a recording edge. IAP itself (Google's token endpoint, the real edge)
cannot be reached here: the tests stop at the token provider's boundary, replacing only the OAuth
refresh call rigging's provider makes (``tests/cluster_child.py``)."""

from __future__ import annotations

import importlib.metadata
import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fray_jupyter.client import clusters, parity
from fray_jupyter.client.clusters import CLUSTER_ENV, MARIN_CLUSTER_ENV, chosen_cluster
from fray_jupyter.client.discovery import URL_ENV, connect
from fray_jupyter.client.errors import ClusterUnavailable
from fray_jupyter.controller.iris_local import unavailable_reason
from fray_jupyter.file_lock import exclusive
from tests.marin_home import EDGE_DASHBOARD, REPO, TWIN_MANIFEST, child_env, marin_home, run_child
from tests.real_iris import real_iris_controller

needs_iris = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))


@pytest.fixture(scope="module")
def iris_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if unavailable_reason() is not None:
        pytest.skip(str(unavailable_reason()))
    with real_iris_controller(tmp_path_factory.mktemp("iris")) as url:
        yield url


# -- which cluster --------------------------------------------------------------------------------
@pytest.mark.parametrize(("cluster", "url", "env", "chosen"), [
    ("a", None, {CLUSTER_ENV: "b"}, "a"),
    ("a", "http://x:1", {}, "a"),
    (None, "http://x:1", {CLUSTER_ENV: "b"}, None),
    (None, None, {CLUSTER_ENV: "b", MARIN_CLUSTER_ENV: "c"}, "b"),
    (None, None, {MARIN_CLUSTER_ENV: "c"}, "c"),
    (None, None, {}, None),
])
def test_a_named_cluster_beats_a_url_at_the_same_level_and_the_environment_comes_last(
        monkeypatch: pytest.MonkeyPatch, cluster: str | None, url: str | None, env: dict[str, str],
        chosen: str | None) -> None:
    for name in (CLUSTER_ENV, MARIN_CLUSTER_ENV, URL_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert chosen_cluster(cluster, url) == chosen


def test_connect_follows_a_url_in_the_environment_before_a_cluster_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(URL_ENV, "http://127.0.0.1:9")
    monkeypatch.setenv(CLUSTER_ENV, "b")
    with connect(start=False) as client:
        assert client.cluster is None and client.url == "http://127.0.0.1:9"


def test_without_marin_naming_a_cluster_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_version = importlib.metadata.version

    def version(name: str) -> str:
        if name == "marin-iris":
            raise importlib.metadata.PackageNotFoundError(name)
        return real_version(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    with pytest.raises(ClusterUnavailable) as caught:
        clusters.connect_cluster("marin")
    assert str(caught.value) == ("cluster marin: named clusters need Marin's Iris (marin-iris is not installed): "
                                 "pip install 'fray-jupyter[marin]'")
    assert clusters.list_clusters() == []


@needs_iris
def test_an_unknown_cluster_is_one_line_from_iris() -> None:
    with pytest.raises(ClusterUnavailable) as caught:
        clusters.connect_cluster("no-such-cluster-anywhere")
    assert str(caught.value) == ("cluster no-such-cluster-anywhere: Unknown cluster 'no-such-cluster-anywhere'. "
                                 "Run `iris cluster list` to see available clusters.")


# -- a local-kind manifest, resolved by name ----------------------------------------------------------
@needs_iris
def test_a_local_kind_manifest_in_the_users_config_dir_runs_jobs_and_closes_with_the_client(tmp_path: Path) -> None:
    seen = run_child("twin", marin_home(tmp_path, {"twin": TWIN_MANIFEST}))
    assert seen["name"] == "twin" and seen["kind"] == "local"
    assert seen["dashboard_is_url"]  # no public dashboard_url: the controller serves its own dashboard
    assert seen["lines"] == ["hello-from-twin"] and seen["state"] == "JOB_STATE_SUCCEEDED"
    assert seen["listed"] == ["/alice/hello", "/alice/sleeper"]
    assert seen["cancelled"] == "JOB_STATE_KILLED"
    # a session on the named cluster: state kept on both hosts, reached through the controller's proxy
    assert seen["session_values"] == ["21", "21"] and seen["session_pulled"] == [1, 2, 20]
    assert seen["session_through_proxy"] == [True] and seen["session_ended"] == "JOB_STATE_KILLED"
    assert seen["resolutions"] == ["twin"]  # one resolution for every call of the client
    assert seen["clusters"] == [["twin", True]]  # Iris's local cluster wrote its credential record
    assert seen["answers_after_close"] is False  # the local cluster was closed with the client


@needs_iris
def test_a_cell_sends_the_current_directory_and_iris_s_setup_as_iris_job_run_does(tmp_path: Path) -> None:
    """``%%fray --cluster twin`` from a uv project: the genuine Iris stores a bundle, the task finds
    the project's files in its work dir, and the setup commands are those Iris's own client builds
    for a job without setup scripts; ``--no-workspace`` sends neither; a coordinator cell's step
    shows in its lines and its final snapshot's tree; a directory over the cap is one line."""
    from iris.cluster.runtime.entrypoint import build_runtime_entrypoint
    from iris.cluster.types import Entrypoint as IrisEntrypoint
    from iris.cluster.types import EnvironmentSpec

    seen = run_child("cells", marin_home(tmp_path, {"twin": TWIN_MANIFEST}), IRIS_USER="alice")
    iris_own = build_runtime_entrypoint(IrisEntrypoint.from_command("true"), EnvironmentSpec().to_proto())
    assert seen["task_lines"] == {"bundled": "has-helper True bundle-id True", "bare": "has-helper False bundle-id False"}
    assert "bundled every file under it (minus caches and venvs): 2 files, 0.0 MiB zipped" in seen["stdout"]
    assert seen["bundled"]["bundle_id"] != ""
    assert seen["bundled"]["setup_commands"] == list(iris_own.setup_commands)  # uv sync, then runtime deps
    assert len(seen["bundled"]["setup_commands"]) == 2
    assert seen["bare"] == {"bundle_id": "", "setup_commands": [], "setup_scripts": []}
    assert "[step/0] step ran" in seen["coord_stdout"] and "job /alice/coord SUCCEEDED" in seen["coord_stdout"]
    assert 'data-job-id="/alice/coord" data-state="succeeded" data-final="true"' in seen["coord_snapshot"]
    assert 'data-job-id="/alice/coord/step"' in seen["coord_snapshot"]  # the tree, as the named cluster lists it
    over_cap = seen["over_cap"]
    assert "\n" not in over_cap and over_cap.startswith("%%fray: the current directory ")
    assert "/tmp/big is sent as the workspace by default (as `iris job run` does), but it bundles to " \
           "more than the 25.0 MiB cap (26.0 MiB); pass --workspace DIR to send a smaller directory, --exclude " \
           "PATTERN to leave files out, or --no-workspace to send none" in over_cap


class Child:
    """``tests/cluster_child.py race`` with a private HOME, its stdout lines read as they come."""

    def __init__(self, home: Path, log: Path) -> None:
        self.log = log
        self.process = subprocess.Popen(
            [sys.executable, str(REPO / "tests" / "cluster_child.py"), "race"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=log.open("w"), text=True, env=child_env(home))
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.strip())
        self.lines.put("")  # the child closed its stdout: exited

    def line(self) -> str:
        line = self.lines.get(timeout=180)
        assert line, f"the child exited ({self.process.wait()}): {self.log.read_text()[-3000:]}"
        return line

    def say(self, word: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(word + "\n")
        self.process.stdin.flush()


@needs_iris
def test_processes_resolving_one_local_kind_name_at_the_same_instant_share_one_cluster(tmp_path: Path) -> None:
    home = marin_home(tmp_path, {"twin": TWIN_MANIFEST})
    children = [Child(home, tmp_path / f"child-{i}.log") for i in range(2)]
    try:
        assert [child.line() for child in children] == ["ready", "ready"]
        for child in children:
            child.say("go")
        seen = [json.loads(child.line()) for child in children]
        for child in children:
            child.say("close")
        assert [json.loads(child.line()) for child in children] == [{"closed": True}] * 2
    finally:
        for child in children:
            if child.process.poll() is None:
                child.process.kill()
            child.process.wait(timeout=60)
    assert sorted(found["starts"] for found in seen) == [0, 1]  # one Iris local cluster started
    assert seen[0]["url"] == seen[1]["url"]


@needs_iris
def test_a_resolution_that_cannot_take_the_lock_in_time_is_one_line(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))
    lock = clusters.resolve_lock_file("held")
    assert lock == tmp_path / "fray-cluster-held.lock"
    with exclusive(lock), pytest.raises(ClusterUnavailable) as caught:
        clusters.NamedCluster("held", lock_timeout=0.2)
    assert str(caught.value) == (f"cluster held: another process has been resolving this cluster for over 0.2 s "
                                 f"(it holds {lock}); try again once it is done")


# -- an IAP-fronted manifest: the credential store, token refresh, expired logins ---------------------
def edge_home(tmp_path: Path) -> Path:
    return marin_home(tmp_path, {}, {"edge": {"endpoint": "https://edge.example", "edge_refresh_token": "refresh-1"}})


def test_every_call_carries_the_edge_token_minted_from_the_stored_login(tmp_path: Path, iris_url: str) -> None:
    seen = run_child("edge", edge_home(tmp_path), UPSTREAM=iris_url, MARIN_CLUSTER_TOKEN="app-token")
    assert "error" not in seen and seen["url_is_edge"]
    assert seen["dashboard"] == EDGE_DASHBOARD  # the manifest's public dashboard, its trailing slash dropped
    assert [call["proxy-authorization"] for call in seen["seen"]] == ["Bearer idtoken-1"] * 3
    assert [call["authorization"] for call in seen["seen"]] == ["Bearer app-token"] * 3
    assert seen["minted"] == ["idtoken-1"]  # cached while valid
    assert seen["resolutions"] == ["edge"]


def test_a_token_about_to_expire_is_refreshed_before_the_call(tmp_path: Path, iris_url: str) -> None:
    seen = run_child("edge", edge_home(tmp_path), UPSTREAM=iris_url, LIFETIME="120")  # inside the margin
    assert [call["proxy-authorization"] for call in seen["seen"]] == [
        "Bearer idtoken-1", "Bearer idtoken-2", "Bearer idtoken-3"]
    assert all(call["authorization"] is None for call in seen["seen"])


def test_an_expired_login_is_one_line_saying_to_log_in(tmp_path: Path, iris_url: str) -> None:
    seen = run_child("edge", edge_home(tmp_path), UPSTREAM=iris_url, EXPIRED="1")
    kind, message = seen["error"]
    assert kind == "LoginRequired" and "\n" not in message
    assert message.startswith("not logged in to cluster 'edge', or the login expired (")
    assert message.endswith("; run `iris --cluster edge login`")
    assert seen["seen"] == []  # nothing was sent without a token
    assert seen["resolutions"] == ["edge", "edge"]  # re-resolved once (a new login may be in the store)


def test_a_session_through_the_edge_sends_fresh_credentials_and_renews_refused_ones(tmp_path: Path,
                                                                                   iris_url: str) -> None:
    """A session on an IAP-fronted cluster reaches its host through the edge and the controller's actor
    proxy: each call carries the token of that moment (here each lives inside the refresh margin, so
    every call mints one), and a call the edge refuses as stale renews the login and is sent again."""
    seen = run_child("edge_session", edge_home(tmp_path), UPSTREAM=iris_url, LIFETIME="120", REJECT_FIRST="1")
    assert seen["values"] == ["21", "22"]
    calls = seen["proxied"]
    assert [method for method, _ in calls] == ["Call"] * 4, calls  # three cells, the refused first sent again
    tokens = [token for _, token in calls]
    assert len(set(tokens)) == len(tokens) and all(token in [f"Bearer {t}" for t in seen["minted"]] for token in tokens)


def test_a_call_the_edge_refuses_re_resolves_the_cluster_once_and_is_sent_again(tmp_path: Path,
                                                                                 iris_url: str) -> None:
    seen: dict[str, Any] = run_child("edge", edge_home(tmp_path), UPSTREAM=iris_url, REJECT_FIRST="1")
    assert "error" not in seen
    assert len(seen["seen"]) == 4  # the refused call, then the three calls
    assert seen["resolutions"] == ["edge", "edge"]


@needs_iris
def test_a_named_cluster_gets_the_revision_date_of_the_installed_iris(monkeypatch: pytest.MonkeyPatch) -> None:
    from iris import version

    monkeypatch.setattr(version, "_CACHED", None)
    monkeypatch.setenv("IRIS_REVISION_DATE", "2031-02-03")
    assert parity.parity_for("any").revision_date == version.client_revision_date() == "2031-02-03"
    monkeypatch.setattr(version, "_CACHED", None)
