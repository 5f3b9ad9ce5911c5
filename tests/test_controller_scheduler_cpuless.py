"""Tasks asking for no CPU take no slot, as Iris never counts them against a worker; ``--max-tasks``
bounds every running task process, slots or not, with the real controller process (the rules
themselves: ``test_controller_kernel_scheduler.py``)."""

from __future__ import annotations

from pathlib import Path

from fray_jupyter.iris.proto import controller_pb2, job_pb2
from tests.controller_harness import (
    TERMINAL,
    ControllerProcess,
    launch_request,
    meeting,
)
from tests.waiting import until

C = controller_pb2.Controller
J = job_pb2
SLOTS, MAX_TASKS = 2, 4
CONTROLLER_ARGS = ("--slots", str(SLOTS), "--max-tasks", str(MAX_TASKS))  # the module's controller (conftest)


def _all_at_once(name: str, count: int, place: Path) -> C.LaunchJobRequest:
    """``count`` CPU-less tasks that each check in under ``place`` and end once all have: the job
    can only succeed if every task runs at the same time."""
    request = launch_request(name, meeting(place, count), replicas=count)
    request.resources.cpu_millicores = 0
    request.timeout.milliseconds = 60_000  # a task that can never meet the others fails instead of hanging
    return request


def test_more_cpu_less_tasks_than_slots_run_at_once(controller: ControllerProcess, tmp_path: Path) -> None:
    wire = controller.wire()
    job_id = wire.launch(_all_at_once("meet", MAX_TASKS, tmp_path / "meet"))
    assert wire.wait(job_id, TERMINAL).state == J.JOB_STATE_SUCCEEDED


def test_a_task_over_the_bound_waits_for_room_saying_so(controller: ControllerProcess) -> None:
    wire = controller.wire()
    request = launch_request("over", "sleep 600", replicas=MAX_TASKS + 1)
    request.resources.cpu_millicores = 0
    job_id = wire.launch(request)
    until(lambda: [task.state for task in wire.tasks(job_id)].count(J.TASK_STATE_RUNNING) >= MAX_TASKS,
          f"{MAX_TASKS} of {job_id}'s tasks running")
    (waiting,) = [task for task in wire.tasks(job_id) if task.state == J.TASK_STATE_PENDING]
    assert waiting.pending_reason.startswith(f"waiting for room to start 1 task process(es): {MAX_TASKS} of at most "
                                             f"{MAX_TASKS} running"), waiting.pending_reason
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=job_id))
    wire.wait(job_id, TERMINAL)
