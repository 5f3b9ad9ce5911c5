"""Task processes: steps in order, env, output capture, timeouts, stopping a whole group."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

from fray_jupyter.controller.kernel.exits import Outcome
from fray_jupyter.controller.runtime import runner
from fray_jupyter.controller.runtime.runner import Attempt, TaskIdentity, task_environment
from fray_jupyter.iris.proto import job_pb2 as J
from tests.controller_harness import pid_alive
from tests.waiting import until


def _attempt(tmp_path: Path, steps: list[list[str]], lines: list[tuple[str, str]], timeout: float | None = None,
             pids: list[int] | None = None) -> Attempt:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return Attempt(steps=steps, workdir=tmp_path, env=dict(os.environ), timeout_s=timeout,
                   sink=lambda source, line: lines.append((source, line)),
                   on_spawn=lambda pid, token: (pids if pids is not None else []).append(pid))


def test_steps_run_in_order_and_output_is_captured_line_by_line(tmp_path: Path) -> None:
    lines: list[tuple[str, str]] = []
    steps = [["bash", "-c", "echo setup"], ["sh", "-c", "printf 'a\\nb\\r\\n'; printf 'no-newline' >&2"]]
    outcome = asyncio.run(_attempt(tmp_path, steps, lines).run())
    assert outcome == Outcome(J.TASK_STATE_SUCCEEDED, 0)
    assert sorted(lines) == sorted([("stdout", "setup"), ("stdout", "a"), ("stdout", "b"), ("stderr", "no-newline")])


CARRIAGE_RETURNS = r"""
import sys, time
out = sys.stdout
for chunk in ["\r  0%|  | 0/3", "\r 33%|# | 1/3", "\r100%|##| 3/3\n", "a\r", "\nb  \t\n", "\n", "x\ry\r\nz\r"]:
    out.write(chunk)
    out.flush()
    time.sleep(0.05)  # each chunk a read of its own: a "\r" may end one read and its "\n" start the next
"""


def test_output_is_cut_into_lines_as_a_genuine_iris_worker_cuts_it(tmp_path: Path) -> None:
    """An Iris worker reads task output through text-mode pipes (universal newlines: a lone CR
    ends a line too) and strips each line's trailing whitespace; the runner stores the same lines,
    whatever the chunking."""
    lines: list[tuple[str, str]] = []
    asyncio.run(_attempt(tmp_path, [["python3", "-c", CARRIAGE_RETURNS]], lines).run())
    with subprocess.Popen(["python3", "-c", CARRIAGE_RETURNS], stdout=subprocess.PIPE, text=True) as worker:
        assert worker.stdout is not None
        iris_lines = [line.rstrip() for line in worker.stdout]
    assert [text for _, text in lines] == iris_lines == [
        "", "  0%|  | 0/3", " 33%|# | 1/3", "100%|##| 3/3", "a", "b", "", "x", "y", "z"]


def test_long_lines_are_split_and_bad_bytes_replaced(tmp_path: Path) -> None:
    lines: list[tuple[str, str]] = []
    size = runner.MAX_LINE_CHARS + 10
    steps = [["python3", "-c", f"import sys; sys.stdout.buffer.write(b'x' * {size} + b'\\n\\xff\\n')"]]
    asyncio.run(_attempt(tmp_path, steps, lines).run())
    assert [len(text) for _, text in lines] == [runner.MAX_LINE_CHARS, 10, 1]
    assert lines[-1][1] == "\ufffd"


def test_a_failing_step_stops_the_attempt(tmp_path: Path) -> None:
    lines: list[tuple[str, str]] = []
    outcome = asyncio.run(_attempt(tmp_path, [["sh", "-c", "exit 4"], ["echo", "never"]], lines).run())
    assert outcome.state == J.TASK_STATE_FAILED and outcome.exit_code == 4 and "setup command 1" in outcome.error
    missing = asyncio.run(_attempt(tmp_path, [["/no/such/binary"]], lines).run())
    assert missing.state == J.TASK_STATE_FAILED and "could not start" in missing.error
    assert lines == []


def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pids: list[int] = []
    lines: list[tuple[str, str]] = []
    outcome = asyncio.run(_attempt(tmp_path, [["sh", "-c", "sleep 30 & echo child=$!; wait"]], lines,
                                   timeout=0.3, pids=pids).run())
    assert outcome.timed_out and outcome.state == J.TASK_STATE_FAILED
    _gone(int(lines[0][1].removeprefix("child=")))
    _gone(pids[0])


HOLDS_OUT = "trap 'echo got TERM' TERM; echo ready; while :; do sleep 0.05; done"
"""A task that outlives SIGTERM: it notes the signal and keeps going (each ``sleep`` it runs dies)."""


def test_stop_sends_sigterm_then_sigkill_after_the_grace(tmp_path: Path) -> None:
    async def scenario() -> tuple[Outcome, float]:
        attempt = _attempt(tmp_path, [["sh", "-c", HOLDS_OUT]], lines)
        task = asyncio.ensure_future(attempt.run())
        while not lines:
            await asyncio.sleep(0.01)
        started = time.monotonic()
        attempt.stop("Terminated by user")
        outcome = await task
        return outcome, time.monotonic() - started

    lines: list[tuple[str, str]] = []
    outcome, took = asyncio.run(scenario())
    assert outcome == Outcome(J.TASK_STATE_KILLED, None, "Terminated by user")
    assert ("stdout", "got TERM") in lines  # SIGTERM came first and did not end it
    assert took >= runner.KILL_GRACE_S  # SIGKILL waited for the grace


def test_leftover_processes_in_the_group_end_with_the_task(tmp_path: Path) -> None:
    lines: list[tuple[str, str]] = []
    outcome = asyncio.run(_attempt(tmp_path, [["sh", "-c", "sleep 30 >/dev/null 2>&1 & echo $!"]], lines).run())
    assert outcome.state == J.TASK_STATE_SUCCEEDED
    _gone(int(lines[0][1]))


def _gone(pid: int) -> None:
    """SIGKILL is delivered asynchronously: wait for the process to go (the deadline is a hang guard)."""
    until(lambda: not pid_alive(pid), f"process {pid} gone")


def test_task_environment(tmp_path: Path) -> None:
    resources = J.ResourceSpecProto(cpu_millicores=4000, memory_bytes=2**30)
    resources.device.tpu.variant = "v4-8"
    identity = TaskIdentity("/alice/train", 2, 1, "abc123", 4)
    env = task_environment(identity, {"MY_VAR": "1", "IRIS_TASK_ID": "user-cannot-override"}, ["uv sync"],
                           resources, tmp_path, "http://127.0.0.1:9", "bundle-1")
    assert env["IRIS_TASK_ID"] == "/alice/train/2:1" and "IRIS_TASK_INDEX" not in env and "IRIS_JOB_ID" not in env
    assert (env["IRIS_NUM_TASKS"], env["IRIS_ATTEMPT_UID"]) == ("4", "abc123")
    assert (env["IRIS_ADVERTISE_HOST"], env["IRIS_BIND_HOST"]) == ("127.0.0.1", "127.0.0.1")
    assert env["MY_VAR"] == "1" and json.loads(env["IRIS_JOB_ENV"])["MY_VAR"] == "1"
    assert json.loads(env["IRIS_TASK_RESOURCES"]) == {"cpu_millicores": 4000, "memory_bytes": str(2**30),
                                                      "device": {"tpu": {"variant": "v4-8"}}}
    assert env["IRIS_CONTROLLER_URL"] == env["IRIS_CONTROLLER_ADDRESS"] == "http://127.0.0.1:9"
    assert env["IRIS_WORKDIR"] == str(tmp_path) and env["PYTHONUNBUFFERED"] == "1"
    assert json.loads(env["IRIS_JOB_SETUP_SCRIPTS"]) == ["uv sync"] and env["IRIS_BUNDLE_ID"] == "bundle-1"


def test_region_and_inherited_constraints_are_set_as_iris_sets_them(tmp_path: Path) -> None:
    """``IRIS_WORKER_REGION`` is the placed group's region (unset without one); ``IRIS_JOB_CONSTRAINTS``
    carries only the region/zone constraints (unset without any), and Iris's own ``get_job_info()``
    reads both back."""
    import contextvars

    import pytest
    from iris.cluster.client.job_info import get_job_info

    region = J.Constraint(key="region", op=J.CONSTRAINT_OP_EQ, value=J.AttributeValue(string_value="us-central1"))
    device = J.Constraint(key="device-type", op=J.CONSTRAINT_OP_EQ, value=J.AttributeValue(string_value="tpu"))
    identity = TaskIdentity("/alice/train", 0, 0, "abc123", 1)
    env = task_environment(identity, {}, [], J.ResourceSpecProto(), tmp_path, "http://127.0.0.1:9", "",
                           constraints=[region, device], worker_region="us-central1")
    assert env["IRIS_WORKER_REGION"] == "us-central1"
    assert [c["key"] for c in json.loads(env["IRIS_JOB_CONSTRAINTS"])] == ["region"]
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        info = contextvars.copy_context().run(get_job_info)
    assert info is not None and info.worker_region == "us-central1"
    assert [c.key for c in info.constraints] == ["region"] and "us-central1" in str(info.constraints[0])
    bare = task_environment(identity, {}, [], J.ResourceSpecProto(), tmp_path, "http://127.0.0.1:9", "",
                            constraints=[device], worker_region="")
    assert "IRIS_WORKER_REGION" not in bare and "IRIS_JOB_CONSTRAINTS" not in bare
