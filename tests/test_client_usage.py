"""A job's usage and events, read as Iris's dashboard and CLI read them (``client.usage``), from the
real embedded controller: its sampler's numbers are the task's real ones, the dashboard's two
``iris.task`` queries and Iris's own finelog client answer, Marin's ``iris task events`` /
``iris attempt events`` print the controller's events unchanged, and ``diagnose()`` says how much
memory a killed task held against its request."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from fray_jupyter.client import usage
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.diagnostics import diagnose
from fray_jupyter.iris.states import is_job_finished
from tests.controller_harness import ControllerProcess, launch_request
from tests.marin_cli import run_iris
from tests.waiting import until

HOLD = """
import time
block = bytearray(600 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
print("holding", flush=True)
time.sleep(300)
"""
SPIN = "import time\nwhile True:\n    pass\n"
DIE = """
import os, signal, time
block = bytearray(300 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
time.sleep(4)
os.kill(os.getpid(), signal.SIGKILL)
"""


def _python(code: str) -> str:
    return f"exec {shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def _latest(client: FrayClient, task_id: str, ready: Callable[[dict[str, object]], bool]) -> dict[str, object] | None:
    rows = client.query_stats(usage.latest_usage_sql([task_id]))
    return rows[0] if rows and ready(rows[0]) else None


def test_usage_is_the_task_s_real_memory_and_cpu(client: FrayClient, controller: ControllerProcess) -> None:
    hold = client.submit(launch_request("hold", _python(HOLD)))
    spin = client.submit(launch_request("spin", _python(SPIN)))
    try:
        held = until(lambda: _latest(client, f"{hold}/0", lambda row: int(row["memory_mb"]) >= 600),  # type: ignore[call-overload]
                     f"a sample of {hold}/0 at 600 MiB", feed=client)
        assert 600 <= int(held["memory_mb"]) <= 660  # type: ignore[call-overload]
        spun = until(lambda: _latest(client, f"{spin}/0", lambda row: int(row["cpu_millicores"]) >= 500),  # type: ignore[call-overload]
                     f"a sample of {spin}/0 at half a core or more", feed=client)
        assert int(spun["cpu_millicores"]) <= 1100  # type: ignore[call-overload]
        history = client.query_stats(usage.usage_history_sql(f"{hold}/0", 0))
        assert history and list(history[0]) == ["ts", "cpu_millicores", "memory_mb", "memory_peak_mb", "disk_mb"]
        assert [row["ts"] for row in history] == sorted((row["ts"] for row in history), reverse=True)
        task = usage.job_usage(client, client.status(hold))[f"{hold}/0"]
        assert task.now is not None and 600 <= task.peak_memory_mb <= 660
        assert (task.requested_cpu_millicores, task.requested_memory_mb) == (1000, 512)
        assert task.memory_words().endswith("of 512 MiB requested")
        from finelog.client import LogClient  # Iris's own reader

        finelog = LogClient.connect(controller.info.url + "/proxy/system.log-server")
        try:
            table = finelog.query(usage.latest_usage_sql([f"{hold}/0", f"{spin}/0"]))
        finally:
            finelog.close()
        assert {row["task_id"] for row in table.to_pylist()} == {f"{hold}/0", f"{spin}/0"}
    finally:
        client.terminate(hold)
        client.terminate(spin)
    totals = usage.tree_totals(client, spin)
    assert totals.tasks == 1 and totals.cpu_hours > 0 and totals.wall_hours >= totals.cpu_hours * 0.5


def test_a_cancelled_task_s_events_read_as_marin_s_cli_prints_them(client: FrayClient, controller: ControllerProcess,
                                                                   tmp_path: Path) -> None:
    job = client.submit(launch_request("cancelled", "sleep 300"))
    until(lambda: client.tasks(job)[0].state == 3, f"{job}/0 running", feed=client)  # TASK_STATE_RUNNING
    client.terminate(job)
    (event,) = until(lambda: usage.task_events(client, [f"{job}/0"]), f"an event of {job}/0", feed=client)
    assert (event.type, event.reason, event.message, event.source, event.count) == (
        "Warning", "JobFinalizedTaskKilled", "Terminated by user", "iris/controller", 1)
    for command in (("task", "events", f"{job}/0"), ("attempt", "events", f"{job}/0:0")):
        printed = run_iris(controller.info.url, *command, cwd=tmp_path, user="alice")
        assert printed.returncode == 0, printed.stdout
        assert "JobFinalizedTaskKilled" in printed.stdout and "Terminated by user" in printed.stdout


def test_a_finished_task_s_event_says_how_the_controller_resolved_it(client: FrayClient) -> None:
    job = client.submit(launch_request("done", "true"))
    until(lambda: is_job_finished(client.status(job).state), f"{job} ended", feed=client)
    (event,) = until(lambda: usage.task_events(client, [f"{job}/0"]), f"an event of {job}/0", feed=client)
    assert (event.type, event.reason, event.message) == (
        "Normal", "TaskTerminated", "Backend reported SUCCEEDED; controller resolved the task as SUCCEEDED.")


def test_diagnose_says_how_much_memory_a_killed_task_held(client: FrayClient) -> None:
    job = client.submit(launch_request("dies", _python(DIE)))
    until(lambda: is_job_finished(client.status(job).state), f"{job} ended", feed=client)
    causes = diagnose(client, job).root_causes[f"{job}/0"]
    assert causes[0].startswith("killed by SIGKILL (possibly OOM) at 3"), causes
    assert causes[0].endswith("MiB of 512 MiB requested"), causes


@pytest.mark.parametrize(("error", "exit_code", "line"), [
    ("OOMKilled", 137, "OOM-killed at 1.9 GiB of 2 GiB requested"),
    ("Exit code 137: killed by SIGKILL (possibly OOM or resource limit)", 137,
     "killed by SIGKILL (possibly OOM) at 1.9 GiB of 2 GiB requested"),
    ("Exit code: 1", 1, "peak memory 1.9 GiB of 2 GiB requested"),
])
def test_the_memory_line_names_an_oom_only_when_the_error_does(error: str, exit_code: int, line: str) -> None:
    from fray_jupyter.iris.proto import job_pb2

    samples = (usage.Sample(1, 0, 0, 1900, 1900, 0), usage.Sample(2, 0, 0, 100, 1946, 0))
    task = job_pb2.TaskStatus(task_id="/u/j/0", error=error, exit_code=exit_code)
    assert usage.memory_root_cause(task, usage.TaskUsage("/u/j/0", samples, 1000, 2048)) == line
    assert usage.memory_root_cause(task, usage.TaskUsage("/u/j/0", (), 1000, 2048)) is None
    unread = (usage.Sample(1, 0, 0, 0, 0, 0),)  # ended before the sampler read its memory
    assert usage.memory_root_cause(task, usage.TaskUsage("/u/j/0", unread, 1000, 2048)) is None
