"""Usage and events, the same on the embedded controller and a genuine Iris (the twin): a task holding
600 MiB reads within 10% on both and of the truth; a task spinning a core reads as busy on both; the
dashboard's two ``iris.task`` queries answer on both; a cancelled task's events match."""

from __future__ import annotations

import shlex
import sys

import pytest

from fray_jupyter.client import usage
from fray_jupyter.client.client import FrayClient
from tests.controller_harness import launch_request
from tests.differential.conftest import wait_at_rest
from tests.waiting import until

USER = "usage"
HELD_MIB = 600
HOLD = f"""
import time
block = bytearray({HELD_MIB} * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
time.sleep(600)
"""
SPIN = "while True:\n    pass\n"


def _python(code: str) -> str:
    return f"exec {shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def _latest(client: FrayClient, task_id: str, column: str, least: int) -> dict[str, object]:
    """The task's newest sample once ``column`` reaches ``least`` (the twin's worker samples every 5 s)."""
    def reached() -> dict[str, object] | None:
        rows = usage.stats_rows(client, usage.latest_usage_sql([task_id]))
        return rows[0] if rows and int(rows[0][column]) >= least else None

    return until(reached, f"{client.url}: a sample of {task_id} with {column} >= {least}", feed=client)


@pytest.fixture(scope="module")
def sampled(twin: FrayClient, embedded: FrayClient) -> dict[str, dict[str, dict[str, object]]]:
    """On each controller: the newest sample of a holding task and of a spinning one, and the
    dashboard's history query's answer, while both run. Both are stopped before any test reads them
    (a spinning task would take a core from every test after it, and the twin scaled up for them
    must be at rest before the next test waits for it)."""
    found: dict[str, dict[str, dict[str, object]]] = {}
    jobs: dict[str, list[str]] = {}
    try:
        for client in (twin, embedded):
            hold = client.submit(launch_request("usage-hold", _python(HOLD), user=USER))
            spin = client.submit(launch_request("usage-spin", _python(SPIN), user=USER))
            jobs[client.url] = [hold, spin]
        for client in (twin, embedded):
            hold, spin = jobs[client.url]
            found[client.url] = {"hold": _latest(client, f"{hold}/0", "memory_mb", HELD_MIB),
                                 "spin": _latest(client, f"{spin}/0", "cpu_millicores", 200)}
            (found[client.url]["history"], *_) = usage.stats_rows(client, usage.usage_history_sql(f"{hold}/0", 0))
    finally:
        for client in (twin, embedded):
            for job_id in jobs.get(client.url, []):
                client.terminate(job_id)
        wait_at_rest(twin)
    return found


def test_held_memory_is_within_10_percent_on_both_and_of_the_truth(twin: FrayClient, embedded: FrayClient,
                                                                    sampled: dict[str, dict[str, dict[str, object]]]) -> None:
    genuine, ours = (int(sampled[client.url]["hold"]["memory_mb"]) for client in (twin, embedded))  # type: ignore[call-overload]
    for measured in (genuine, ours):
        assert HELD_MIB <= measured <= HELD_MIB * 1.1
    assert abs(genuine - ours) <= 0.1 * genuine
    for client in (twin, embedded):
        assert int(sampled[client.url]["hold"]["memory_peak_mb"]) >= HELD_MIB  # type: ignore[call-overload]


def test_a_spinning_task_reads_as_busy_on_both(twin: FrayClient, embedded: FrayClient,
                                                sampled: dict[str, dict[str, dict[str, object]]]) -> None:
    for client in (twin, embedded):
        assert 200 <= int(sampled[client.url]["spin"]["cpu_millicores"]) <= 1100  # type: ignore[call-overload]


def test_the_dashboard_s_queries_answer_with_the_same_columns(twin: FrayClient, embedded: FrayClient,
                                                               sampled: dict[str, dict[str, dict[str, object]]]) -> None:
    for part in ("hold", "spin"):
        assert list(sampled[twin.url][part]) == list(sampled[embedded.url][part]) == [
            "task_id", "attempt_id", "cpu_millicores", "memory_mb", "memory_peak_mb"]
    for client in (twin, embedded):
        assert list(sampled[client.url]["history"]) == ["ts", "cpu_millicores", "memory_mb", "memory_peak_mb", "disk_mb"]


def _events(client: FrayClient, job_id: str, least: int) -> list[usage.TaskEvent]:
    """The events of the job's task 0 once there are at least ``least`` of them."""
    def enough() -> list[usage.TaskEvent] | None:
        events = usage.task_events(client, [f"{job_id}/0"])
        return events if len(events) >= least else None

    return until(enough, f"{client.url}: {least} event(s) of {job_id}/0", feed=client)


def _running(client: FrayClient, job_id: str) -> None:
    """Until the job's task 0 runs."""
    until(lambda: client.tasks(job_id)[0].state == 3, f"{client.url}: {job_id}/0 running", feed=client)  # TASK_STATE_RUNNING


def test_a_cancelled_task_s_events_match(twin: FrayClient, embedded: FrayClient) -> None:
    seen = []
    for client in (twin, embedded):
        job = client.submit(launch_request("usage-cancel", "sleep 600", user=USER))
        _running(client, job)
        client.terminate(job)
        events = _events(client, job, 1)
        seen.append([(event.type, event.reason, event.message, event.source, event.count) for event in events])
    assert seen[0] == seen[1] == [("Warning", "JobFinalizedTaskKilled", "Terminated by user", "iris/controller", 1)]
    wait_at_rest(twin)


def test_a_retried_failure_s_events_match(twin: FrayClient, embedded: FrayClient) -> None:
    seen = []
    for client in (twin, embedded):
        job = client.submit(launch_request("usage-retry", "exit 3", user=USER, max_retries_failure=1))
        client.wait(job, timeout=180)
        events = _events(client, job, 2)
        seen.append([(event.attempt_id, event.type, event.reason, event.message) for event in events])
    cumulative = "Cumulative failed task attempts exceeded max_task_failures: failures=1, limit=0"
    assert seen[0] == [
        (0, "Normal", "TaskRetryScheduled", "Backend reported FAILED; controller returned the task to PENDING."),
        (0, "Warning", "JobFinalizedTaskKilled", cumulative)]  # max_task_failures 0: the first failure ends the job
    # A listed difference (docs/differences.rst): the message is the job's error, to which the embedded
    # controller adds the failed task's own.
    assert seen[1] == [seen[0][0], (0, "Warning", "JobFinalizedTaskKilled", f"{cumulative}; Exit code: 3")]
    wait_at_rest(twin)
