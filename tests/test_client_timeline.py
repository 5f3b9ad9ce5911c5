"""``client.timeline``: the controller's events joined with a task's state changes, newest first."""

from __future__ import annotations

from fray_jupyter.client.timeline import STATE_SOURCE, state_changes, timeline
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.usage import TaskEvent


def _task() -> J.TaskStatus:
    task = J.TaskStatus(task_id="/u/j/0", state=J.TASK_STATE_RUNNING)
    task.submitted_at.epoch_ms = 1000
    first = task.attempts.add(attempt_id=0, worker_id="local-0", state=J.TASK_STATE_FAILED, exit_code=1, error="boom")
    first.started_at.epoch_ms, first.finished_at.epoch_ms = 2000, 3000
    second = task.attempts.add(attempt_id=1, worker_id="local-1", state=J.TASK_STATE_RUNNING)
    second.started_at.epoch_ms = 4000
    return task


def test_a_task_s_state_changes_are_read_from_its_status() -> None:
    changes = state_changes(_task())
    assert [(c.ts_ms, c.attempt_id, c.type, c.reason, c.message) for c in changes] == [
        (1000, 0, "Normal", "Submitted", "task submitted"),
        (2000, 0, "Normal", "AttemptStarted", "attempt 0 started on worker local-0"),
        (3000, 0, "Warning", "AttemptFailed", "attempt 0 ended failed, exit code 1: boom"),
        (4000, 1, "Normal", "AttemptStarted", "attempt 1 started on worker local-1"),
    ]
    assert {c.source for c in changes} == {STATE_SOURCE}
    assert state_changes(J.TaskStatus(task_id="/u/j/1")) == []  # nothing reached yet
    worker = J.TaskStatus(task_id="/u/j/2")
    lost = worker.attempts.add(attempt_id=0, state=J.TASK_STATE_WORKER_FAILED)
    lost.finished_at.epoch_ms = 5
    assert state_changes(worker)[0].reason == "AttemptWorkerFailed"


def test_events_and_state_changes_are_joined_newest_first() -> None:
    killed = TaskEvent("/u/j/0", 1, 4000, "Warning", "JobFinalizedTaskKilled", "Terminated by user",
                       "iris/controller", 1)
    joined = timeline([_task()], [killed])
    assert [entry.reason for entry in joined] == ["JobFinalizedTaskKilled", "AttemptStarted", "AttemptFailed",
                                                  "AttemptStarted", "Submitted"]  # the event first at one time
    assert [entry.reason for entry in timeline([_task()], [killed], limit=2)] == ["JobFinalizedTaskKilled",
                                                                                  "AttemptStarted"]
