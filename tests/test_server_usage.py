"""The server extension's usage and timeline routes (``fray_jupyter.server.usage``) through a real
Jupyter server (pytest-jupyter) against a real embedded controller that samples a real task: a
task holding ~300 MiB with a 256 MiB request reads its memory, its peak, the over-request warning
and its last output, and the answer carries the server's silence threshold; after a cancel the
timeline holds Iris's ``JobFinalizedTaskKilled`` event and the task's own state changes, newest
first. pytest-jupyter's fixtures are imported into this module only."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *

from fray_jupyter.client import ControllerUnreachable, InvalidRequest
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.usage import Sample
from fray_jupyter.resources import ResourceConfig
from fray_jupyter.runtime_file import ControllerInfo, runtime_file_path, write_runtime_file
from fray_jupyter.server.usage import extra, spark_samples
from tests.controller_harness import ControllerProcess, launch_request
from tests.fray_rest import Reply, fetch, job_path, jp_server_config, no_controller_env  # noqa: F401 - fixtures

HOLDER = ("exec python -c \"import time\nheld = b'x' * (300 * 2**20)\nprint('holding', flush=True)\n"
          "time.sleep(600)\"")
"""Holds ~300 MiB (written, so resident) and says so once."""
WAIT_S = 60.0


@pytest.fixture(scope="module")
def job_id(controller: ControllerProcess) -> Iterator[str]:
    """alice's running task holding ~300 MiB against a 256 MiB request."""
    wire = controller.wire()
    resources = ResourceConfig(cpu=1, ram="256m", disk="1g")
    launched = wire.launch(launch_request(f"usage-{time.monotonic_ns()}", HOLDER, resources=resources))
    wire.wait(launched, {job_pb2.JOB_STATE_RUNNING})
    yield launched
    wire.close()


@pytest.fixture(autouse=True)
def announced(controller: ControllerProcess, jp_environ: Any) -> None:
    """The controller, announced in this server's runtime dir (the only one it finds)."""
    info = controller.info
    write_runtime_file(ControllerInfo(url=info.url, grpc_url=info.grpc_url, token=info.token, pid=info.pid,
                                      instance=info.instance), runtime_file_path())


@pytest.fixture
def api(http_server_client: Any, jp_base_url: str, jp_auth_header: dict[str, str],
        jp_asyncio_loop: Any) -> Callable[..., Reply]:
    def call(path: str, *, method: str = "GET", auth: bool = True) -> Reply:
        return fetch(http_server_client, jp_asyncio_loop, jp_base_url, path, method=method,
                     headers=dict(jp_auth_header) if auth else None)
    return call


def until(read: Callable[[], Reply], done: Callable[[Any], bool]) -> Any:
    """``read()`` again until its body is ``done`` (bounded: a controller that never samples fails)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        reply = read()
        assert reply.code == 200, reply
        if done(reply.body):
            return reply.body
        assert time.monotonic() < deadline, reply.body


def test_a_task_over_its_request_reads_its_memory_peak_warning_and_output(
        api: Callable[..., Reply], job_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRAY_SILENCE_AFTER", "2.5")
    body = until(lambda: api(job_path(job_id, "usage")),
                 lambda b: (b["tasks"][0]["now_memory_mb"] or 0) >= 290 and b["tasks"][0]["last_output_ms"])
    task = body["tasks"][0]
    assert task["task_id"] == f"{job_id}/0" and task["index"] == 0 and task["state"] == "running"
    assert 290 <= task["now_memory_mb"] <= 400 and task["peak_memory_mb"] >= task["now_memory_mb"]
    assert (task["requested_memory_mb"], task["requested_cpu_millicores"], task["requested_cpu_text"]) == (256, 1000, "1 core")
    assert task["cpu_text"].endswith(("core", "cores"))
    assert "is over the 256 MiB requested: a cluster would OOM-kill this task" in task["warning"]
    assert task["memory_text"].endswith("of 256 MiB requested") and "now · peak" in task["memory_text"]
    assert task["samples"] and task["samples"][-1]["mem"] == task["now_memory_mb"]
    assert [s["ts"] for s in task["samples"]] == sorted(s["ts"] for s in task["samples"])
    assert task["quiet_since_ms"] >= task["last_output_ms"] > 0 and task["status_ms"] is None
    assert body["note"] == "" and body["silence_after_ms"] == 2500 and body["totals"]["tasks"] == 1 and body["totals"]["peak_memory_mb"] == task["peak_memory_mb"]
    assert body["totals"]["text"].startswith("CPU ") and ", wall " in body["totals"]["text"]


def test_after_a_cancel_the_timeline_has_iris_s_event_and_the_state_changes_newest_first(
        api: Callable[..., Reply], job_id: str) -> None:
    assert api(job_path(job_id, "cancel"), method="POST").code == 200
    body = until(lambda: api(job_path(job_id, "events")),
                 lambda b: any(e["reason"] == "JobFinalizedTaskKilled" for e in b["events"])
                 and any(e["kind"] == "state" and e["reason"] == "AttemptKilled" for e in b["events"]))
    events = body["events"]
    assert [e["ts_ms"] for e in events] == sorted((e["ts_ms"] for e in events), reverse=True)
    killed = next(e for e in events if e["reason"] == "JobFinalizedTaskKilled")
    assert (killed["kind"], killed["type"], killed["message"]) == ("event", "Warning", "Terminated by user")
    reasons = [e["reason"] for e in events if e["kind"] == "state"]
    assert reasons[-2:] == ["AttemptStarted", "Submitted"] and reasons[0] == "AttemptKilled"
    after = api(job_path(job_id, "usage")).body["tasks"][0]
    assert after["state"] == "killed" and after["quiet_since_ms"] is None and after["peak_memory_mb"] >= 290


def test_an_unknown_job_is_404_and_nobody_is_refused(api: Callable[..., Reply]) -> None:
    for verb in ("usage", "events"):
        missing = api(job_path("/alice/no-such-job", verb))
        assert (missing.code, missing.body["code"]) == (404, "not_found")
        assert api(job_path("/alice/no-such-job", verb), auth=False).code == 403


def test_stats_that_cannot_be_read_are_empty_with_a_note_but_an_unreachable_controller_is_an_error() -> None:
    def refused() -> list[int]:
        raise InvalidRequest("table iris.task is not queryable here", url="http://x", method="Query", code="invalid")

    def gone() -> list[int]:
        raise ControllerUnreachable("no controller answers at http://x", url="http://x", method="Query")
    notes: list[str] = []
    assert extra(refused, [], notes) == [] and notes[0].endswith("table iris.task is not queryable here")
    with pytest.raises(ControllerUnreachable):
        extra(gone, [], notes)


def test_a_long_history_is_thinned_evenly_keeping_the_newest_sample() -> None:
    samples = [Sample(ts, 0, ts, ts, ts, 0) for ts in range(3600)]
    thinned = spark_samples(samples, most=600)
    assert len(thinned) == 600 and thinned[-1]["ts"] == 3599 and thinned[0]["ts"] == 5
    assert {b["ts"] - a["ts"] for a, b in itertools.pairwise(thinned)} == {6}
    assert [point["ts"] for point in spark_samples(samples[:10], most=600)] == list(range(10))
