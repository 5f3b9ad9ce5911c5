"""Marin's own ``iris task profile … cpu|mem|threads``, ``iris task exec`` and ``iris process status``
against the embedded controller: they name the task's busy function, its stuck frame and its
working directory (the real CLI, run in this process by ``tests.marin_cli``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fray_jupyter.controller.iris_local import unavailable_reason
from fray_jupyter.controller.runtime import profiling
from fray_jupyter.iris.proto import job_pb2
from tests.controller_harness import ControllerProcess, dump_showing, launch_request
from tests.marin_cli import IRIS, CliRun, run_iris

USER = "marin-inspect"
BUSY = "exec python -c 'def busy_loop():\n    while True: sum(range(1000))\nbusy_loop()'"
SLEEPER = "exec python -c 'import time\ndef stuck_waiting():\n    while True: time.sleep(1)\nstuck_waiting()'"
pytestmark = pytest.mark.skipif(unavailable_reason() is not None or not IRIS.exists()
                                or profiling.tool("py-spy") is None,
                                reason=unavailable_reason() or "no iris CLI or no py-spy")


def iris(controller: ControllerProcess, *args: str, cwd: Path) -> CliRun:
    return run_iris(controller.info.url, *args, cwd=cwd, user=USER)


def task_running(controller: ControllerProcess, name: str, command: str, frame: str) -> str:
    """Launch ``command`` as ``USER`` and return task 0's id once a thread dump shows ``frame``."""
    wire = controller.wire()
    job_id = wire.launch(launch_request(f"{name}-{time.monotonic_ns()}", command, user=USER))
    wire.wait(job_id, {job_pb2.JOB_STATE_RUNNING})
    dump_showing(wire, f"{job_id}/0", frame)
    wire.close()
    return f"{job_id}/0"


def test_profile_names_the_busy_function_and_threads_the_stuck_frame(controller: ControllerProcess,
                                                                    tmp_path: Path) -> None:
    busy = task_running(controller, "busy", BUSY, "busy_loop")
    cpu = iris(controller, "task", "profile", busy, "cpu", "--duration", "2", "--output", "cpu.json", cwd=tmp_path)
    assert cpu.returncode == 0, cpu.stdout
    assert b'"name":"busy_loop"' in (tmp_path / "cpu.json").read_bytes()
    sleeper = task_running(controller, "sleeper", SLEEPER, "stuck_waiting")
    dumped = iris(controller, "task", "profile", sleeper, "threads", cwd=tmp_path)
    assert dumped.returncode == 0 and "stuck_waiting (<string>:3)" in dumped.stdout, dumped.stdout
    for task in (busy, sleeper):
        assert iris(controller, "job", "cancel", task.rsplit("/", 1)[0], cwd=tmp_path).returncode == 0


def test_exec_runs_in_the_tasks_working_directory(controller: ControllerProcess, tmp_path: Path) -> None:
    sleeper = task_running(controller, "exec", SLEEPER, "stuck_waiting")
    ran = iris(controller, "task", "exec", sleeper, "--", "sh", "-c", 'pwd; echo "$IRIS_TASK_ID"', cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout
    workdir, task_id = ran.stdout.split()[:2]
    assert workdir.startswith(str(controller.state_dir / "work")) and task_id == f"{sleeper}:0"
    assert iris(controller, "job", "cancel", sleeper.rsplit("/", 1)[0], cwd=tmp_path).returncode == 0


def test_a_finished_task_says_so_and_process_status_reports_the_controller(controller: ControllerProcess,
                                                                          tmp_path: Path) -> None:
    wire = controller.wire()
    job_id = wire.launch(launch_request(f"done-{time.monotonic_ns()}", "true", user=USER))
    wire.wait(job_id, {job_pb2.JOB_STATE_SUCCEEDED})
    wire.close()
    profiled = iris(controller, "task", "profile", f"{job_id}/0", "threads", cwd=tmp_path)
    assert profiled.returncode != 0 and "Profiling failed: attempt no longer running" in profiled.stdout
    status = iris(controller, "process", "status", cwd=tmp_path)
    assert status.returncode == 0 and f"PID:             {controller.process.pid}" in status.stdout, status.stdout
