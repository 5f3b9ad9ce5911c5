"""A task that grows past its memory request until it is killed, and a task that sleeps silently, on the
embedded controller and a genuine Iris (the twin): the grower's peak reads the same on both (within 10%,
and at least what it held), over the same request, with the same warning before it dies and the same
end and root-cause line after; the sleeper is said to be silent on both once it has been quiet long
enough (``client.liveness``)."""

from __future__ import annotations

import shlex
import sys
import time
from functools import partial
from pathlib import Path

from fray_jupyter.client import usage
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.liveness import silent_ms
from fray_jupyter.iris.states import split_key
from fray_jupyter.resources import ResourceConfig
from tests.controller_harness import launch_request
from tests.differential.conftest import wait_at_rest
from tests.waiting import until

USER = "limits"
REQUEST_MIB = 256
GROWN_MIB = 400
GROW = f"""
import os, signal, sys, time
held = []
for _ in range({GROWN_MIB} // 16):
    block = bytearray(16 * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    held.append(block)
print("grown", flush=True)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.05)
os.kill(os.getpid(), signal.SIGKILL)  # what a container's OOM killer does at its limit
"""
QUIET_AFTER_MS = 1000


def _grower(client: FrayClient, flag: Path) -> str:
    command = f"exec {shlex.quote(sys.executable)} -c {shlex.quote(GROW)} {shlex.quote(str(flag))}"
    return client.submit(launch_request("grows", command, user=USER,
                                        resources=ResourceConfig(cpu=1, ram=f"{REQUEST_MIB}m", disk="1g")))


def _usage(client: FrayClient, job_id: str) -> usage.TaskUsage | None:
    return usage.job_usage(client, client.status(job_id)).get(f"{job_id}/0")


def test_a_task_that_grows_until_it_is_killed_reads_the_same_on_both(twin: FrayClient, embedded: FrayClient,
                                                                      tmp_path: Path) -> None:
    sides = {"twin": twin, "embedded": embedded}
    jobs = {name: _grower(client, tmp_path / name) for name, client in sides.items()}
    warned = {}
    for name, client in sides.items():  # sampled while it holds what it grew to: warned before it dies
        def held(c: FrayClient = client, j: str = jobs[name]) -> usage.TaskUsage | None:
            found = _usage(c, j)
            return found if found and found.peak_memory_mb >= GROWN_MIB else None

        warned[name] = until(held, f"{name}: a sample of {jobs[name]} at {GROWN_MIB} MiB or more").memory_warning()
        (tmp_path / name).touch()
    ended = {}
    for name, client in sides.items():
        client.wait(jobs[name], timeout=180)
        (task,) = client.tasks(jobs[name])
        found = _usage(client, jobs[name])
        assert found is not None
        ended[name] = (task.state, task.exit_code, task.error, found)
    peaks = {name: found.peak_memory_mb for name, (*_, found) in ended.items()}
    assert abs(peaks["twin"] - peaks["embedded"]) <= 0.1 * max(peaks.values()), peaks
    assert all(found.requested_memory_mb == REQUEST_MIB for *_, found in ended.values())
    assert all(words.startswith("peak ") and "over" in words for words in warned.values()), warned
    assert ended["twin"][:3] == ended["embedded"][:3], ended
    causes = {name: usage.memory_root_cause(client.tasks(jobs[name])[0], ended[name][3])
              for name, client in sides.items()}
    assert all(cause and cause.startswith("killed by SIGKILL (possibly OOM) at ") for cause in causes.values()), causes
    wait_at_rest(twin)


def _newest_line_ms(client: FrayClient, job_id: str) -> int:
    entries = client.logs(job_id, tail=True, max_lines=50).entries
    return max((entry.timestamp.epoch_ms for entry in entries if split_key(entry.key)[0] == f"{job_id}/0"), default=0)


def test_a_task_that_sleeps_silently_is_said_to_be_silent_on_both(twin: FrayClient, embedded: FrayClient) -> None:
    sides = {"twin": twin, "embedded": embedded}
    jobs = {name: client.submit(launch_request("silent", "echo started; exec sleep 600", user=USER))
            for name, client in sides.items()}
    try:
        for name, client in sides.items():
            line_ms = until(partial(_newest_line_ms, client, jobs[name]), f"{name}: the line of {jobs[name]}")

            def quiet(c: FrayClient = client, j: str = jobs[name], since: int = line_ms) -> int | None:
                (task,) = c.tasks(j)
                return silent_ms(task, int(time.time() * 1000), last_line_ms=since, after_ms=QUIET_AFTER_MS)

            assert until(quiet, f"{name}: {jobs[name]} said to be silent") >= QUIET_AFTER_MS
            (task,) = client.tasks(jobs[name])
            assert silent_ms(task, line_ms + QUIET_AFTER_MS // 2, last_line_ms=line_ms, after_ms=QUIET_AFTER_MS) is None
    finally:
        for name, client in sides.items():
            client.terminate(jobs[name])
        wait_at_rest(twin)
