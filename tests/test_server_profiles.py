"""The server extension's profile history (``fray_jupyter.server.look_inside`` and ``server.captures``)
through a real Jupyter server (pytest-jupyter) against a real embedded controller profiling a real
task: each capture the server makes is listed under its task and reopens byte for byte; a capture
the controller keeps in ``iris.profile`` that this server did not make is listed too (and one it
did make, once); a thread dump reopens as lines with the task's own frames picked out; a capture
that cannot read the task (py-spy on a non-Python task) says why; and a bad or unknown capture id
is a clear 400 / 404. Each path the sidebar calls has one route. pytest-jupyter's fixtures are
imported into this module only."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple
from urllib.parse import unquote, urlencode

import pytest
from jupyter_server.utils import url_path_join
from pytest_jupyter.jupyter_server import *

from fray_jupyter.client import FrayClient
from fray_jupyter.controller.runtime import profiling
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.server.extension import routes
from tests.controller_harness import ControllerProcess, launch_request
from tests.fray_rest import announced, job_path, jp_server_config, no_controller_env  # noqa: F401 - fixtures
from tests.waiting import until

BUSY = ("exec python -c 'import time\ndef busy_loop():\n    while True: time.sleep(0.001); sum(range(200000))\n"
        "busy_loop()'")
pytestmark = pytest.mark.skipif(profiling.tool("py-spy") is None, reason="py-spy is not installed")


class Answer(NamedTuple):
    code: int
    headers: dict[str, str]
    body: bytes


@pytest.fixture(scope="module")
def busy(controller: ControllerProcess) -> Iterator[str]:
    """alice's running busy-loop task (Python): its job id."""
    wire = controller.wire()
    job_id = wire.launch(launch_request(f"busy-{time.monotonic_ns()}", BUSY))
    wire.wait(job_id, {job_pb2.JOB_STATE_RUNNING})
    yield job_id
    wire.call("TerminateJob", controller_pb2.Controller.TerminateJobRequest(job_id=job_id))
    wire.close()


@pytest.fixture
def api(http_server_client: Any, jp_base_url: str, jp_auth_header: dict[str, str],
        jp_asyncio_loop: Any) -> Callable[..., Answer]:
    """One request to ``<base_url>/fray/<path>``: its status, headers and raw body."""
    def call(path: str, *, method: str = "GET", params: dict[str, Any] | None = None) -> Answer:
        async def send() -> Any:
            return await http_server_client.fetch(
                url_path_join(jp_base_url, "fray", path) + (f"?{urlencode(params)}" if params else ""),
                method=method, headers=dict(jp_auth_header), body=b"" if method == "POST" else None,
                raise_error=False, request_timeout=60, allow_nonstandard_methods=True)
        response = jp_asyncio_loop.run_until_complete(send())
        return Answer(response.code, dict(response.headers), response.body)
    return call


def as_json(answer: Answer) -> Any:
    import json

    return json.loads(answer.body)


def test_each_capture_is_listed_under_its_task_and_reopens(api: Callable[..., Answer], busy: str) -> None:
    since = int(time.time() * 1000)
    dump = until(lambda: (d := api(job_path(busy, "tasks", "0", "profile"), method="POST",
                                   params={"kind": "threads"})).body.count(b"busy_loop") and d,
                 "a thread dump naming the busy loop")
    flame = api(job_path(busy, "tasks", "0", "profile"), method="POST", params={"kind": "cpu", "seconds": 1})
    assert flame.code == 200 and b"busy_loop" in flame.body and b'id="frames"' in flame.body
    assert flame.headers["X-Fray-Profile-Format"] == "cpu/flamegraph"
    assert flame.headers["Content-Security-Policy"] == "sandbox allow-scripts allow-modals"
    assert "X-Fray-Profile-Empty" not in flame.headers

    history = as_json(api(job_path(busy, "profiles")))
    mine = [c for c in history["captures"] if c["origin"] == "server"]
    assert [(c["capture_id"], c["kind"], c["task_index"]) for c in mine[:2]] == [
        (flame.headers["X-Fray-Capture"], "cpu", 0), (dump.headers["X-Fray-Capture"], "threads", 0)]
    assert mine[0]["seconds"] == 1 and mine[0]["size"] == len(flame.body) and mine[0]["note"] == ""
    # The controller keeps both in iris.profile too: listed once, as this server's.
    assert len([c for c in history["captures"] if c["kind"] == "cpu" and c["captured_ms"] >= since]) == 1, history

    again = api(job_path(busy, "profiles", flame.headers["X-Fray-Capture"]))
    assert again.code == 200 and again.body == flame.body and again.headers["Content-Type"] == "image/svg+xml"
    lines = as_json(api(job_path(busy, "profiles", dump.headers["X-Fray-Capture"]), params={"view": "lines"}))
    own = [text for text, kind in zip(lines["lines"], lines["kinds"], strict=True) if kind == "own"]
    assert lines["own_frames"] == len(own) and any("busy_loop" in text for text in own)
    assert "thread" in lines["kinds"]


def test_the_controller_s_own_captures_are_listed_and_reopen(api: Callable[..., Answer], busy: str,
                                                             client: FrayClient) -> None:
    since = int(time.time() * 1000)
    made = client.profile(f"{busy}/0", "threads")  # by a kernel, not this server: only iris.profile has it
    history = as_json(api(job_path(busy, "profiles")))
    kept = [c for c in history["captures"] if c["origin"] == "controller" and c["captured_ms"] >= since]
    assert history["note"] == "" and len(kept) == 1, history
    assert kept[0]["kind"] == "threads" and kept[0]["trigger"] == "on_demand" and kept[0]["size"] == 0
    assert kept[0]["capture_id"].startswith("c-0-")
    again = api(job_path(busy, "profiles", kept[0]["capture_id"]))
    assert again.code == 200 and again.body == made.data and again.headers["X-Fray-Profile-Format"] == "threads/text"


def test_a_capture_that_cannot_read_the_task_says_why(api: Callable[..., Answer], controller: ControllerProcess) -> None:
    wire = controller.wire()
    job_id = wire.launch(launch_request(f"shell-{time.monotonic_ns()}", "exec sleep 300"))
    try:
        wire.wait(job_id, {job_pb2.JOB_STATE_RUNNING})
        stub = api(job_path(job_id, "tasks", "0", "profile"), method="POST", params={"kind": "cpu", "seconds": 1})
        assert stub.code == 200
        reason = unquote(stub.headers["X-Fray-Profile-Empty"])
        assert reason.startswith("no CPU profile: py-spy record failed"), reason
        listed = as_json(api(job_path(job_id, "profiles")))["captures"]
        assert listed[0]["capture_id"] == stub.headers["X-Fray-Capture"] and listed[0]["note"] == reason
    finally:
        wire.call("TerminateJob", controller_pb2.Controller.TerminateJobRequest(job_id=job_id))
        wire.close()


@pytest.mark.parametrize(("capture", "params", "code", "message"), [
    ("not-an-id", None, 400, "must be an id the history lists"),
    ("s-999999", None, 404, "has no profile 's-999999'"),
    ("c-0-1-cpu", None, 404, "has no profile 'c-0-1-cpu'"),
    ("s-1", {"view": "svg"}, 400, "view='svg' must be one of"),
])
def test_bad_or_unknown_captures_are_refused_clearly(api: Callable[..., Answer], busy: str, capture: str,
                                                     params: dict[str, str] | None, code: int, message: str) -> None:
    refused = api(job_path(busy, "profiles", capture), params=params)
    assert refused.code == code and message in as_json(refused)["message"]


def test_view_lines_is_for_thread_dumps_only(api: Callable[..., Answer], busy: str) -> None:
    flame = api(job_path(busy, "tasks", "0", "profile"), method="POST", params={"kind": "cpu", "seconds": 1})
    refused = api(job_path(busy, "profiles", flame.headers["X-Fray-Capture"]), params={"view": "lines"})
    assert refused.code == 400 and "view=lines is for thread dumps" in as_json(refused)["message"]
    assert api(job_path("/alice/no-such-job", "profiles")).code == 404


def test_each_profile_path_has_one_route() -> None:
    patterns = [re.compile(pattern + "$") for pattern, _ in routes("/")]
    for path in (job_path("/alice/x", "profiles"), job_path("/alice/x", "profiles", "s-1"),
                 job_path("/alice/x", "profiles", "c-0-1796429687010-thread"), job_path("/alice/x", "resubmit"),
                 job_path("/alice/x", "tasks", "0", "profile"), "capacity"):
        assert len([p for p in patterns if p.match(f"/fray/{path}")]) == 1, path
