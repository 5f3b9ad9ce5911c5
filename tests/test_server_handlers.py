"""The server extension's REST API (``fray_jupyter.server``) against a real embedded controller
subprocess, through a real Jupyter server (pytest-jupyter) that refuses unauthenticated access.

pytest-jupyter's fixtures are imported into this module only (not registered as a plugin), so its
autouse fixtures and async hooks touch no other test file; the tests are plain functions that drive
the server's event loop through the ``api`` fixture.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import socket
import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
import tornado.web
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import JupyterServerAuthWarning
from pytest_jupyter.jupyter_server import *

from fray_jupyter.client.discovery import URL_ENV
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.request import resolve_user
from fray_jupyter.runtime_file import read_runtime_file, runtime_file_path, write_runtime_file
from fray_jupyter.server.extension import routes
from tests.controller_harness import (
    ControllerProcess,
    launch_request,
    start_controller,
    status_text_rows,
    stop_quietly,
)
from tests.fray_rest import Reply, fetch, job_path, jp_server_config, no_controller_env  # noqa: F401 - fixtures
from tests.waiting import HANG_GUARD_S, until

HOSTILE_NAME = "<img_src=x_onerror=alert(1)>"
"""Submitted through plan(), which keeps Fray's no-spaces rule, so this is the closest hostile name it
takes (the browser test sends the literal ``<img src=x onerror=alert(1)>`` past Fray by raw RPC)."""


@pytest.fixture(scope="session")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    """One embedded controller subprocess for the module."""
    process = start_controller(tmp_path_factory.mktemp("server-handlers") / "state", "--slots", "8",
                               "--max-log-lines", str(DOWNLOAD_LINES + 10))
    yield process
    stop_quietly(process)


@pytest.fixture
def shared(controller: ControllerProcess, jp_environ: Any) -> ControllerProcess:
    """The controller, announced in this server's runtime dir exactly as it announces itself to
    kernels (``<jupyter runtime dir>/fray-controller.json``)."""
    write_runtime_file(controller.info, runtime_file_path())
    return controller


@pytest.fixture
def api(http_server_client: Any, jp_base_url: str, jp_auth_header: dict[str, str],
        jp_asyncio_loop: Any) -> Callable[..., Reply]:
    """``api("jobs", params=..., method=..., auth=...)`` → ``Reply(code, json)``. Paths are given
    already encoded (a job id is one ``%2F``-encoded segment), which ``jp_fetch`` would re-encode."""

    def call(path: str, *, method: str = "GET", params: dict[str, Any] | None = None, auth: bool = True) -> Reply:
        return fetch(http_server_client, jp_asyncio_loop, jp_base_url,
                     path + (f"?{urlencode(params)}" if params else ""), method=method,
                     headers=dict(jp_auth_header) if auth else None)

    return call


def submit(controller: ControllerProcess, command: str, *, name: str | None = None, replicas: int = 2,
           wait_for: set[int] | None = None) -> str:
    wire = controller.wire()
    try:
        request = launch_request(f"t-{uuid.uuid4().hex[:8]}", command, replicas=replicas)
        if name is not None:
            request.name = f"/alice/{name}"
        job_id = wire.launch(request)
        if wait_for:
            wire.wait(job_id, wait_for)
        return job_id
    finally:
        wire.close()


FINISHED = {job_pb2.JOB_STATE_SUCCEEDED, job_pb2.JOB_STATE_FAILED}
DOWNLOAD_LINES = 200_000
RUNNING = {job_pb2.JOB_STATE_RUNNING}


# -- happy paths ----------------------------------------------------------------------------------
def test_status_names_the_controller_the_kernels_use(api: Callable[..., Reply], shared: ControllerProcess) -> None:
    reply = api("status")
    assert reply == (200, {"url": shared.info.url, "reachable": True, "error": None, "user": resolve_user(),
                           "cluster": None, "dashboard_url": None})


def test_jobs_lists_every_job_with_what_the_sidebar_shows(api: Callable[..., Reply], shared: ControllerProcess) -> None:
    job_id = submit(shared, "echo hi", wait_for=FINISHED)
    reply = api("jobs", params={"limit": 500})
    assert reply.code == 200
    listed = {job["job_id"]: job for job in reply.body["jobs"]}
    job = listed[job_id]
    assert job["name"] == job_id.rpartition("/")[2]
    assert (job["user"], job["state"], job["terminal"], job["replicas"], job["completed"]) == (
        "alice", "succeeded", True, 2, 2)
    assert job["task_state_counts"] == {"succeeded": 2}
    assert job["submitted_ms"] <= job["started_ms"] <= job["finished_ms"]
    assert (job["device"], job["cpu_millicores"], job["memory_bytes"]) == ("cpu", 1000, 512 * 2**20)
    assert reply.body["total"] >= 1 and reply.body["has_more"] is False


def test_jobs_filters_sorts_and_pages(api: Callable[..., Reply], shared: ControllerProcess) -> None:
    tag = uuid.uuid4().hex[:6]
    ok = submit(shared, "true", name=f"{tag}-b-ok", replicas=1, wait_for=FINISHED)
    bad = submit(shared, "exit 3", name=f"{tag}-a-bad", replicas=1, wait_for=FINISHED)
    assert [j["job_id"] for j in api("jobs", params={"name": tag}).body["jobs"]] == [bad, ok]  # newest first
    assert [j["job_id"] for j in api("jobs", params={"name": tag, "sort": "name", "order": "asc"}).body["jobs"]] == [
        bad, ok]
    failed = api("jobs", params={"name": tag, "state": "failed"}).body
    assert ([j["job_id"] for j in failed["jobs"]], failed["total"]) == ([bad], 1)
    assert failed["jobs"][0]["exit_code"] == 0 and failed["jobs"][0]["error"]  # Iris never sets a job's exit code
    first = api("jobs", params={"name": tag, "limit": 1}).body
    second = api("jobs", params={"name": tag, "limit": 1, "offset": 1}).body
    assert (first["total"], first["has_more"], second["has_more"]) == (2, True, False)
    assert [first["jobs"][0]["job_id"], second["jobs"][0]["job_id"]] == [bad, ok]


def test_jobs_list_roots_or_one_jobs_children_as_the_controller_says(api: Callable[..., Reply],
                                                                     shared: ControllerProcess) -> None:
    """The seams of the sidebar's tree: ``scope=roots`` leaves children out and marks parents,
    ``scope=children&parent=`` lists one job's children (labelled by their own name), a child's
    detail names its parent."""
    tag = uuid.uuid4().hex[:6]
    coord = submit(shared, "sleep 30", name=f"{tag}-coord", replicas=1, wait_for=RUNNING)
    wire = shared.wire()
    try:
        request = launch_request("step", "true")
        request.name = f"{coord}/step-1"
        step = wire.launch(request)
        wire.wait(step, FINISHED)
    finally:
        wire.close()
    roots = {j["job_id"]: j for j in api("jobs", params={"scope": "roots", "name": tag}).body["jobs"]}
    assert list(roots) == [coord] and roots[coord]["has_children"] and roots[coord]["parent_job_id"] == ""
    children = api("jobs", params={"scope": "children", "parent": coord}).body
    assert [(j["job_id"], j["name"], j["parent_job_id"], j["has_children"]) for j in children["jobs"]] == [
        (step, "step-1", coord, False)]
    assert (children["total"], children["has_more"]) == (1, False)
    assert api(job_path(step)).body["job"]["parent_job_id"] == coord
    every = {j["job_id"]: j["parent_job_id"] for j in api("jobs", params={"name": tag}).body["jobs"]}
    assert every == {coord: "", step: coord}
    api(job_path(coord, "cancel"), method="POST")


def test_jobs_of_one_user_are_their_id_prefix_and_users_lists_who_has_work(api: Callable[..., Reply],
                                                                           shared: ControllerProcess) -> None:
    """``user=`` is Iris's ``job_id_prefix="/<user>/"`` (another user whose name starts the same is
    not theirs), with the scope, the filters and ``total`` applied on the controller; ``users`` is
    ``ListUsers``."""
    tag = uuid.uuid4().hex[:6]
    wire = shared.wire()
    try:
        ids = {}
        for user in ("bob", "bobby"):
            request = launch_request(f"{tag}-{user}", "sleep 30", user=user, replicas=1)
            ids[user] = wire.launch(request)
        child = launch_request("step", "true", user="bob")
        child.name = f"{ids['bob']}/step"
        step = wire.launch(child)
    finally:
        wire.close()
    mine = api("jobs", params={"user": "bob", "name": tag}).body
    assert ([j["job_id"] for j in mine["jobs"]], mine["total"]) == ([step, ids["bob"]], 2)
    roots = api("jobs", params={"user": "bob", "name": tag, "scope": "roots"}).body
    assert ([j["job_id"] for j in roots["jobs"]], roots["total"]) == ([ids["bob"]], 1)
    everyone = {j["job_id"] for j in api("jobs", params={"name": tag, "scope": "roots"}).body["jobs"]}
    assert everyone == set(ids.values())
    users = {u["user"]: u for u in api("users").body["users"]}
    assert {"bob", "bobby"} <= set(users)
    assert users["bobby"]["job_state_counts"]["running"] + users["bobby"]["job_state_counts"]["pending"] >= 1
    assert set(users["bob"]["task_state_counts"]) >= {"running", "pending", "succeeded"}
    for job_id in ids.values():
        api(job_path(job_id, "cancel"), method="POST")


def test_job_detail_has_its_tasks(api: Callable[..., Reply], shared: ControllerProcess) -> None:
    job_id = submit(shared, 'echo task "${IRIS_TASK_ID##*/}"', replicas=3, wait_for=FINISHED)
    reply = api(job_path(job_id))
    assert reply.code == 200
    assert reply.body["job"]["job_id"] == job_id
    tasks = reply.body["tasks"]
    assert [(t["index"], t["state"], t["exit_code"]) for t in tasks] == [(0, "succeeded", 0), (1, "succeeded", 0),
                                                                       (2, "succeeded", 0)]
    assert tasks[0]["task_id"] == f"{job_id}/0" and tasks[0]["attempts"] == 1


FAILING = ("printf '  3%%|#  | 30/1000 [00:01<00:33, 29.5it/s]\\nTraceback (most recent call last):\\n' >&2; "
           "echo \"KeyError: 'lr' (attempt ${IRIS_TASK_ID##*:})\" >&2; exit 2")


def test_job_detail_explains_why_a_task_failed_and_each_attempt(api: Callable[..., Reply],
                                                                 shared: ControllerProcess) -> None:
    """Each retry is an attempt; the counts are read against the job's limits; a failed task's root
    cause ends with its exception line; a task's reported status text rides along; the task route
    answers the same for one task."""
    wire = shared.wire()
    try:
        request = launch_request(f"t-{uuid.uuid4().hex[:8]}", FAILING, replicas=1, max_retries_failure=1,
                                 max_task_failures=1)
        job_id = wire.launch(request)
        wire.wait(job_id, FINISHED)
        wire.call("WriteRows", status_text_rows([f"{job_id}/0"], [1], ["[W&B](https://wandb.ai/r)"], ["step 9"]))
    finally:
        wire.close()
    detail = api(job_path(job_id)).body
    limits = {"max_task_failures": 1, "max_retries_failure": 1,
              "max_retries_preemption": request.max_retries_preemption}
    assert (detail["job"]["failure_count"], detail["limits"]) == (2, limits)
    (task,) = detail["tasks"]
    assert [(a["attempt_id"], a["state"], a["exit_code"]) for a in task["history"]] == [(0, "failed", 2), (1, "failed", 2)]
    assert all(a["started_ms"] <= a["finished_ms"] for a in task["history"])
    assert (task["failure_count"], task["preemption_count"]) == (2, 0)
    # a memory line leads when the sampler caught the short task holding memory (usage.memory_root_cause)
    memory = [line for line in task["root_cause"] if line.startswith("peak memory ")]
    assert all(line.endswith(" of 512 MiB requested") for line in memory), memory
    assert [line for line in task["root_cause"] if line not in memory] == [
        "Traceback (most recent call last):", "KeyError: 'lr' (attempt 0)",
        "Traceback (most recent call last):", "KeyError: 'lr' (attempt 1)"]
    assert (task["status_text"], task["status_summary"]) == ("[W&B](https://wandb.ai/r)", "step 9")
    one = api(job_path(job_id, "tasks", "0")).body
    assert one == {"task": task, "limits": limits}
    assert api(job_path(job_id, "tasks", "5")).code == 404


def test_logs_page_by_cursor_and_tail(api: Callable[..., Reply], shared: ControllerProcess) -> None:
    job_id = submit(shared, "for i in 1 2 3; do echo line $i; done", replicas=1, wait_for=FINISHED)
    page = api(job_path(job_id, "logs")).body
    assert [e["data"] for e in page["entries"]] == ["line 1", "line 2", "line 3"]
    assert {(e["task_id"], e["attempt"], e["source"]) for e in page["entries"]} == {(f"{job_id}/0", 0, "stdout")}
    assert page["cursor"] == page["entries"][-1]["seq"]
    assert api(job_path(job_id, "logs"), params={"cursor": page["cursor"]}).body == {
        "entries": [], "cursor": page["cursor"]}
    tail = api(job_path(job_id, "logs"), params={"tail": "1", "max_lines": 1}).body
    assert [e["data"] for e in tail["entries"]] == ["line 3"]


def test_logs_filter_on_the_controller_and_page_back(api: Callable[..., Reply], shared: ControllerProcess) -> None:
    """``substring`` and ``min_level`` (Iris's levels: stdout INFO, stderr ERROR, a glog prefix
    wins) run on the controller; ``before`` + ``tail`` is the page before a line; lines carry levels."""
    job_id = submit(shared, "echo one; echo W0101 two >&2; echo three >&2; echo four", replicas=1, wait_for=FINISHED)
    every = api(job_path(job_id, "logs")).body["entries"]  # stdout and stderr interleave as they were read
    assert {e["data"]: e["level"] for e in every} == {"one": "info", "W0101 two": "warning", "three": "error",
                                                      "four": "info"}

    def shown(**params: object) -> list[str]:
        return [e["data"] for e in api(job_path(job_id, "logs"), params=params).body["entries"]]

    assert sorted(shown(min_level="warning")) == ["W0101 two", "three"]
    assert sorted(shown(substring="o")) == ["W0101 two", "four", "one"]
    assert shown(before=every[3]["seq"], tail="1", max_lines=2) == [every[1]["data"], every[2]["data"]]


def test_bad_min_level_names_the_value_and_the_levels(api: Callable[..., Reply], shared: ControllerProcess) -> None:
    reply = api(job_path("/alice/x", "logs"), params={"min_level": "LOUD"})
    assert reply == (400, {"message": "min_level='LOUD' must be one of: (empty), debug, info, warning, error, critical",
                           "code": "bad_parameter"})


def test_the_full_log_downloads_whole_in_chunks(http_server_client: Any, jp_base_url: str,
                                                jp_auth_header: dict[str, str], jp_asyncio_loop: Any,
                                                shared: ControllerProcess) -> None:
    script = f"python3 -c \"import sys; sys.stdout.writelines(f'row {{i}}\\\\n' for i in range({DOWNLOAD_LINES}))\""
    job_id = submit(shared, script, replicas=1, wait_for=FINISHED)
    chunks: list[bytes] = []

    async def download() -> Any:
        return await http_server_client.fetch(f"{jp_base_url}fray/{job_path(job_id, 'logs', 'download')}",
                                              headers=jp_auth_header, streaming_callback=chunks.append,
                                              request_timeout=HANG_GUARD_S)

    response = jp_asyncio_loop.run_until_complete(download())
    assert response.code == 200 and response.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert response.headers["Content-Disposition"] == f'attachment; filename="{job_id.strip("/").replace("/", "-")}.log"'
    lines = b"".join(chunks).decode().splitlines()
    assert lines == [f"[0] row {i}" for i in range(DOWNLOAD_LINES)]
    assert len(chunks) >= DOWNLOAD_LINES // 5000  # streamed a page at a time, not built whole


def test_cancel_stops_a_running_job_and_leaves_a_finished_one(api: Callable[..., Reply],
                                                              shared: ControllerProcess) -> None:
    job_id = submit(shared, "sleep 60", wait_for=RUNNING)
    reply = api(job_path(job_id, "cancel"), method="POST")
    assert reply.code == 200 and reply.body["job"]["state"] == "killed"
    assert api(job_path(job_id)).body["job"]["state"] == "killed"
    assert api(job_path(job_id, "cancel"), method="POST").body["job"]["state"] == "killed"


def test_endpoints_lists_what_a_job_s_tasks_registered(api: Callable[..., Reply], shared: ControllerProcess) -> None:
    from fray_jupyter.client import FrayClient
    from fray_jupyter.client.errors import FrayError
    from fray_jupyter.iris.proto.controller_pb2 import Controller

    job_id = submit(shared, "sleep 60", replicas=1, wait_for=RUNNING)
    try:
        with FrayClient(shared.info.url, shared.info.token) as client:
            client.register_endpoint(Controller.RegisterEndpointRequest(
                name=f"{job_id}/ctr-0", address="http://127.0.0.1:9", task_id=f"{job_id}/0", endpoint_id="e-1"))
        # the embedded controller has no proxy a browser could open it through: no link
        registered = [{"name": f"{job_id}/ctr-0", "address": "http://127.0.0.1:9", "task_id": f"{job_id}/0",
                       "link": ""}]
    except FrayError as error:  # a controller without an endpoint registry lists none
        assert error.code == "unimplemented"
        registered = []
    reply = api(job_path(job_id, "endpoints"))
    assert reply.code == 200 and reply.body == {"endpoints": registered}
    api(job_path(job_id, "cancel"), method="POST")


def test_job_provided_text_is_passed_as_data(api: Callable[..., Reply], shared: ControllerProcess) -> None:
    job_id = submit(shared, "echo '<img src=x onerror=alert(1)>'", name=HOSTILE_NAME, replicas=1, wait_for=FINISHED)
    listed = api("jobs", params={"name": "onerror"}).body["jobs"]
    assert [job["name"] for job in listed] == [HOSTILE_NAME]
    assert api(job_path(job_id)).body["job"]["job_id"] == f"/alice/{HOSTILE_NAME}"
    assert api(job_path(job_id, "logs")).body["entries"][0]["data"] == "<img src=x onerror=alert(1)>"


# -- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("path", "method"), [("", "GET"), ("logs", "GET"), ("logs/download", "GET"),
                                              ("cancel", "POST")])
def test_unknown_job_is_404_with_a_message(api: Callable[..., Reply], shared: ControllerProcess,
                                           path: str, method: str) -> None:
    reply = api(job_path("/alice/no-such-job", *filter(None, [path])), method=method)
    assert reply.code == 404
    assert reply.body["code"] == "not_found"
    assert "/alice/no-such-job" in reply.body["message"] and "\n" not in reply.body["message"]


@pytest.mark.parametrize(("path", "params"), [
    ("jobs", {"state": "bogus"}), ("jobs", {"sort": "size"}), ("jobs", {"order": "up"}), ("jobs", {"start": "yes"}),
    ("jobs", {"limit": "-1"}), ("jobs", {"limit": "1000"}), ("jobs", {"offset": "x"}), ("jobs", {"offset": "5001"}),
    ("jobs", {"scope": "tree"}), ("jobs", {"scope": "children"}), ("jobs", {"parent": "/alice/x"}),
    ("jobs", {"parent": "/alice/x", "scope": "roots"}), ("jobs", {"user": "a/b"}), ("jobs", {"user": "a b"}),
    ("jobs", {"user": "bob", "scope": "children", "parent": "/alice/x"}),
    (job_path("/alice/x", "logs"), {"cursor": "-5"}), (job_path("/alice/x", "logs"), {"tail": "maybe"}),
    (job_path("/alice/x", "logs"), {"max_lines": "99999"}), (job_path("/alice/x", "logs"), {"before": "-1"}),
    (job_path("/alice/x", "logs"), {"min_level": "warn"}),
])
def test_bad_parameters_are_400(api: Callable[..., Reply], shared: ControllerProcess, path: str,
                                params: dict[str, str]) -> None:
    reply = api(path, params=params)
    assert reply.code == 400, reply
    name = next(iter(params))
    assert reply.body["code"] == "bad_parameter" and reply.body["message"].startswith(f"{name}=")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


CONTROLLER_ROUTES = [("jobs", "GET"), ("users", "GET"), (job_path("/alice/x"), "GET"),
                     (job_path("/alice/x", "logs"), "GET"), (job_path("/alice/x", "logs", "download"), "GET"),
                     (job_path("/alice/x", "cancel"), "POST"), (job_path("/alice/x", "tasks", "0"), "GET"),
                     (job_path("/alice/x", "endpoints"), "GET")]


@pytest.mark.parametrize(("path", "method"), CONTROLLER_ROUTES)
def test_controller_down_is_503_with_the_clients_message(api: Callable[..., Reply], monkeypatch: pytest.MonkeyPatch,
                                                         path: str, method: str) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    monkeypatch.setenv(URL_ENV, url)
    reply = api(path, method=method)
    assert reply.code == 503
    assert reply.body["code"] == "controller_unreachable"
    assert reply.body["message"].startswith(f"cannot reach the Fray controller at {url}")
    status = api("status").body
    assert (status["url"], status["reachable"]) == (url, False)
    assert status["error"].startswith(f"cannot reach the Fray controller at {url}")


def test_no_controller_at_all_is_503_and_a_status_without_url(api: Callable[..., Reply]) -> None:
    assert read_runtime_file() is None
    reply = api("jobs")
    assert reply.code == 503 and "no controller is configured or running" in reply.body["message"]
    status = api("status").body
    assert (status["url"], status["reachable"]) == ("", False)
    assert "fray-jupyter controller" in status["error"]


def _server_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(record.levelno, record.getMessage()) for record in caplog.records
            if "fray" in record.getMessage() or "User-Agent" in record.getMessage()]


def test_no_controller_yet_is_one_debug_line_not_an_error_with_headers(api: Callable[..., Reply],
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    """The sidebar's background poll meets "no controller yet" all the time: a normal state."""
    caplog.set_level(logging.DEBUG)
    assert api("jobs").code == 503
    lines = _server_lines(caplog)
    assert [level for level, _ in lines if level >= logging.WARNING] == []
    assert any(level == logging.DEBUG and "no controller is configured or running" in text for level, text in lines)
    assert not any("User-Agent" in text for _, text in lines)


def test_a_real_controller_failure_is_logged_once_without_headers(api: Callable[..., Reply],
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv(URL_ENV, f"http://127.0.0.1:{free_port()}")
    assert api("jobs").code == 503
    loud = [text for level, text in _server_lines(caplog) if level >= logging.WARNING]
    assert len(loud) == 1 and "cannot reach the Fray controller" in loud[0]
    assert not any("User-Agent" in text for _, text in _server_lines(caplog))


def test_start_1_starts_the_embedded_controller_when_allowed(api: Callable[..., Reply], jp_web_app: Any) -> None:
    """``c.FrayServer.start_controller = True`` (the default) lets a request with ``start=1`` (the
    open sidebar's) start the embedded controller, announced in the runtime file for the kernels;
    a plain request never starts one, and with the setting off neither does ``start=1``."""
    assert api("status", params={"start": "1"}).body["reachable"] is False  # the setting is off here
    jp_web_app.settings["fray_link"].start = True
    assert api("jobs").code == 503 and read_runtime_file() is None
    try:
        status = api("status", params={"start": "1"}).body
        info = read_runtime_file()
        assert info is not None and status == {"url": info.url, "reachable": True, "error": None,
                                               "user": resolve_user(), "cluster": None, "dashboard_url": None}
        assert api("jobs").body == {"jobs": [], "total": 0, "has_more": False}
    finally:
        if (info := read_runtime_file()) is not None:
            os.kill(info.pid, signal.SIGTERM)
            until(lambda: read_runtime_file() is None, "the started controller stops (its runtime file removed)")


# -- authentication -------------------------------------------------------------------------------
@pytest.mark.parametrize(("path", "method"), [("status", "GET"), *CONTROLLER_ROUTES])
def test_unauthenticated_requests_are_refused(api: Callable[..., Reply], shared: ControllerProcess,
                                              path: str, method: str) -> None:
    reply = api(path, method=method, auth=False)
    assert reply.code == 403


def test_loading_the_extension_raises_no_auth_warning(jp_configurable_serverapp: Callable[..., Any],
                                                      jp_server_config: dict[str, Any]) -> None:  # noqa: F811 - the fixture
    """The template's check_auth: a server with unauthenticated access disallowed warns about every
    extension handler method without ``@tornado.web.authenticated``; loading ours must not (and the
    check does catch one that lacks it)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app = jp_configurable_serverapp(config=jp_server_config)
        class Open(APIHandler):
            def get(self) -> None:
                self.finish("{}")
        app.web_app.add_handlers(".*$", [("/open-on-purpose", Open)])
    auth_warnings = [str(w.message) for w in caught if issubclass(w.category, JupyterServerAuthWarning)]
    assert len(auth_warnings) == 1 and "/open-on-purpose" in auth_warnings[0], auth_warnings
    assert "fray" not in auth_warnings[0]
    assert isinstance(app.web_app.settings["fray_link"].start, bool)


def test_every_path_the_sidebar_calls_has_one_route_under_base_url() -> None:
    """Under any base URL: each REST path (a job id as one encoded segment) matches exactly one
    route, and only under ``<base>fray/``."""
    for base in ("/", "/base/"):
        patterns = [(re.compile(pattern + "$"), handler) for pattern, handler in routes(base)]
        assert all(pattern.pattern.startswith(f"{base}fray/") for pattern, _ in patterns)
        for path, _ in [("status", "GET"), ("clusters", "GET"), ("events", "GET"), (job_path("/alice/x", "outputs"), "GET"),
                        (job_path("/alice/x", "outputs", "0", "plots/a.png"), "GET"), *CONTROLLER_ROUTES]:
            matching = [handler for pattern, handler in patterns if pattern.match(f"{base}fray/{path}")]
            assert len(matching) == 1 and issubclass(matching[0], tornado.web.RequestHandler), path
        assert not any(pattern.match(f"{base}fray/jobs/a/b/c") for pattern, _ in patterns)


@pytest.mark.parametrize("jp_base_url", ["/user/alice/", "/a%40b/"])  # JupyterHub's, and pytest-jupyter's own
def test_the_api_answers_under_the_servers_base_url_and_nothing_at_the_root(
        api: Callable[..., Reply], shared: ControllerProcess, http_server_client: Any, jp_base_url: str,
        jp_auth_header: dict[str, str], jp_asyncio_loop: Any) -> None:
    job_id = submit(shared, "echo hi", replicas=1, wait_for=FINISHED)
    paths = ["status", "clusters", "jobs", job_path(job_id), job_path(job_id, "logs"), job_path(job_id, "logs", "download"),
             job_path(job_id, "tasks", "0"), job_path(job_id, "outputs")]
    assert [api(path).code for path in paths] == [200] * len(paths)
    at_root = [fetch(http_server_client, jp_asyncio_loop, "/", path, headers=dict(jp_auth_header)).code
               for path in [*paths, "events"]]
    assert at_root == [404] * len(at_root)


def test_outputs_list_each_tasks_files_and_serve_them_safely(
        api: Callable[..., Reply], shared: ControllerProcess, http_server_client: Any, jp_base_url: str,
        jp_auth_header: dict[str, str], jp_asyncio_loop: Any) -> None:
    script = ('mkdir -p "$IRIS_OUTPUT_DIR/plots"; echo "loss 0.25" > "$IRIS_OUTPUT_DIR/metrics.txt"; '
              'echo "<svg xmlns=\'http://www.w3.org/2000/svg\'/>" > "$IRIS_OUTPUT_DIR/plots/loss.svg"; '
              'echo "<script>alert(1)</script>" > "$IRIS_OUTPUT_DIR/page.html"')
    job_id = submit(shared, script, replicas=1, wait_for=FINISHED)
    reply = api(job_path(job_id, "outputs"))
    assert reply.code == 200
    (task,) = reply.body["tasks"]
    assert (task["task_id"], task["attempt"], task["note"]) == (f"{job_id}/0", 0, "")
    assert task["uri"].startswith("file://") and task["uri"].endswith("/outputs.tar.zst")
    assert [(f["name"], f["size"], f["kind"]) for f in task["files"]] == [
        ("metrics.txt", 10, "file"), ("page.html", 26, "file"), ("plots", 0, "dir"), ("plots/loss.svg", 42, "file")]

    def get(path: str) -> Any:
        return jp_asyncio_loop.run_until_complete(http_server_client.fetch(
            f"{jp_base_url}fray/{job_path(job_id, 'outputs', '0', path)}", headers=jp_auth_header, raise_error=False,
            request_timeout=HANG_GUARD_S))

    text, svg, html, missing = get("metrics.txt"), get("plots/loss.svg"), get("page.html"), get("nope.txt")
    assert (text.code, text.body, text.headers["Content-Type"]) == (200, b"loss 0.25\n", "text/plain; charset=utf-8")
    assert svg.headers["Content-Type"] == "image/svg+xml"
    assert html.headers["Content-Type"] == "application/octet-stream"  # never rendered as a page here
    assert "attachment" in html.headers["Content-Disposition"]
    assert all(r.headers["Content-Security-Policy"] == "sandbox" and r.headers["X-Content-Type-Options"] == "nosniff"
               for r in (text, svg, html))
    assert missing.code == 404
    nothing = submit(shared, "true", replicas=1, wait_for=FINISHED)
    assert api(job_path(nothing, "outputs")).body["tasks"][0]["note"] == "the task wrote no output files"
