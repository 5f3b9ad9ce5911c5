"""Tasks asking for no CPU take no slot, as Iris never counts them against a worker; ``--max-tasks``
bounds every running task process, slots or not, with the real controller process (the rules
themselves: ``test_controller_kernel_scheduler.py``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.iris.proto import controller_pb2, job_pb2
from tests.controller_harness import (
    TERMINAL,
    ControllerProcess,
    launch_request,
    start_controller,
    stop_quietly,
)

C = controller_pb2.Controller
J = job_pb2
SLOTS, MAX_TASKS = 2, 4


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    started = start_controller(tmp_path_factory.mktemp("cpuless") / "state", "--slots", str(SLOTS),
                               "--max-tasks", str(MAX_TASKS))
    yield started
    stop_quietly(started)


def _all_at_once(name: str, count: int, meeting: Path) -> C.LaunchJobRequest:
    """``count`` CPU-less tasks that each check in under ``meeting`` and end once all have: the job
    can only succeed if every task runs at the same time."""
    meeting.mkdir()
    command = (f'touch "{meeting}/${{IRIS_TASK_ID##*/}}"; '
               f'while [ "$(ls "{meeting}" | wc -l)" -lt {count} ]; do sleep 0.05; done')
    request = launch_request(name, command, replicas=count)
    request.resources.cpu_millicores = 0
    request.timeout.milliseconds = 60_000  # a task that can never meet the others fails instead of hanging
    return request


def test_more_cpu_less_tasks_than_slots_run_at_once(controller: ControllerProcess, tmp_path: Path) -> None:
    wire = controller.wire()
    job_id = wire.launch(_all_at_once("meet", MAX_TASKS, tmp_path / "meet"))
    assert wire.wait(job_id, TERMINAL, timeout=90).state == J.JOB_STATE_SUCCEEDED


def test_a_task_over_the_bound_waits_for_room_saying_so(controller: ControllerProcess) -> None:
    wire = controller.wire()
    request = launch_request("over", "sleep 600", replicas=MAX_TASKS + 1)
    request.resources.cpu_millicores = 0
    job_id = wire.launch(request)
    deadline = time.monotonic() + 60
    while sorted(task.state for task in wire.tasks(job_id)).count(J.TASK_STATE_RUNNING) < MAX_TASKS:
        assert time.monotonic() < deadline, wire.tasks(job_id)
        time.sleep(0.05)
    (waiting,) = [task for task in wire.tasks(job_id) if task.state == J.TASK_STATE_PENDING]
    assert waiting.pending_reason.startswith(f"waiting for room to start 1 task process(es): {MAX_TASKS} of at most "
                                             f"{MAX_TASKS} running"), waiting.pending_reason
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=job_id))
    wire.wait(job_id, TERMINAL, timeout=30)
