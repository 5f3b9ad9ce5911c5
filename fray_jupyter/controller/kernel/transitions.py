"""Job and task state transitions as a pure kernel: the rows of one job (``Snapshot``) and an event
in, the ``Effects`` out — rows to write, attempts whose processes must stop, queue changes, jobs
below to end. Nothing here reads or writes the store or touches a process; the engine loads the
snapshot, asks ``decide`` what one event does and carries the effects out (``Engine.apply``).

The event functions (each also applies its writes to the snapshot, so a later step of the same
event sees them, as it would see the store inside one transaction):

* ``attempt_running``: the attempt's first process started (ASSIGNED → RUNNING).
* ``attempt_ended``: the attempt's processes exited with an ``Outcome``; a failure is retried or
  fails the task (``state_rules.task_retries_after_failure``), a gang's siblings are bounced or fail with it.
* ``attempt_unrecorded``: recording an attempt's end failed; the job ends FAILED with the reason.
* ``worker_lost``: the controller (the task's one worker) went away: WORKER_FAILED, gang siblings too.
* ``terminate`` / ``complete``: TerminateJob and CompleteJob; ``end_by_parent``: a job above ended.
* ``unschedulable``: the job's pending tasks can never start (too big a gang, scheduling timeout).

After each, the job's state is derived again from its tasks (``state_rules.derive_job_state``); a job
reaching a terminal state stops its remaining tasks and, by ``trees``, ends the jobs below it.

Seams: every task that reaches a terminal state does so in ``finish_task``, and every attempt
whose processes must stop is named in ``Effects.stops`` (by ``_settle``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fray_jupyter.controller.kernel import taskevents, trees
from fray_jupyter.controller.kernel.exits import EXECUTION_TIMEOUT, Outcome
from fray_jupyter.controller.kernel.rows import JobRow, TaskRow
from fray_jupyter.controller.kernel.state_rules import (
    ACTIVE_TASK_STATES,
    derive_job_state,
    task_retries_after_failure,
)
from fray_jupyter.controller.kernel.taskevents import TaskEvent
from fray_jupyter.iris.attempts import charges_preemption
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import TERMINAL_JOB_STATES, TERMINAL_TASK_STATES

J = job_pb2


@dataclass
class Snapshot:
    """One job as an event finds it: its row, its tasks by index, the indices whose attempt still
    has a live process, its launch request's ``preemption_policy`` and the time of the event."""

    job: JobRow
    tasks: dict[int, TaskRow]
    live: frozenset[int]
    policy: int
    now: int


@dataclass(frozen=True)
class Stop:
    """Stop the live processes of a task's attempt (SIGTERM, then SIGKILL), saying why; its end is
    then only recorded, its state having been decided here."""

    job_id: str
    idx: int
    reason: str


@dataclass
class Effects:
    """What an event does: column writes per job, task and attempt (merged, last write wins), the
    attempts to stop, each job's queue change (indices to queue again, or None: out of the queue
    and its scheduling deadline dropped), the jobs that started (their deadline no longer applies)
    and the jobs whose unfinished jobs below must end, with the reason; ``events`` are the decisions
    Iris records in ``iris.task_event`` (``taskevents``)."""

    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    tasks: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    attempts: dict[tuple[str, int, int], dict[str, Any]] = field(default_factory=dict)
    stops: list[Stop] = field(default_factory=list)
    queue: dict[str, list[int] | None] = field(default_factory=dict)
    started: set[str] = field(default_factory=set)
    end_below: list[tuple[str, str]] = field(default_factory=list)
    events: list[TaskEvent] = field(default_factory=list)


Event = Callable[[Snapshot, Effects], None]
"""One of the event functions below with its own arguments bound (``functools.partial``)."""


def decide(snap: Snapshot, event: Event) -> Effects:
    """The effects of ``event`` on the job ``snap`` holds (``snap`` is left as the event leaves it)."""
    effects = Effects()
    event(snap, effects)
    return effects


# -- writes (to the effects and the snapshot alike) ---------------------------------------------------
def _write_job(snap: Snapshot, fx: Effects, **values: Any) -> None:
    snap.job = dataclasses.replace(snap.job, **values)
    fx.jobs.setdefault(snap.job.job_id, {}).update(values)


def _write_task(snap: Snapshot, fx: Effects, idx: int, **values: Any) -> None:
    snap.tasks[idx] = dataclasses.replace(snap.tasks[idx], **values)
    fx.tasks.setdefault((snap.job.job_id, idx), {}).update(values)


def _write_attempt(snap: Snapshot, fx: Effects, idx: int, attempt: int, **values: Any) -> None:
    fx.attempts.setdefault((snap.job.job_id, idx, attempt), {}).update(values)


def _event(snap: Snapshot, fx: Effects, idx: int, reason: str, message: str, severity: str = taskevents.WARNING) -> None:
    fx.events.append(TaskEvent(snap.job.job_id, idx, snap.tasks[idx].attempt, snap.now, reason, message, severity))


def _requeue(snap: Snapshot, fx: Effects, indices: list[int]) -> None:
    queued = fx.queue.get(snap.job.job_id) or []
    fx.queue[snap.job.job_id] = sorted(set(queued) | set(indices))


def _dequeue(snap: Snapshot, fx: Effects) -> None:
    fx.queue[snap.job.job_id] = None


# -- task steps -------------------------------------------------------------------------------------
def finish_task(snap: Snapshot, fx: Effects, idx: int, state: int, **values: Any) -> None:
    """Make task ``idx`` terminal in ``state`` now (with the other columns in ``values``): the one
    place a task reaches a terminal state."""
    _write_task(snap, fx, idx, state=state, finished_ms=snap.now, **values)


def _settle(snap: Snapshot, fx: Effects, idx: int, reason: str, attempt_state: int) -> None:
    """Decide a task's live attempt from outside it: the attempt takes ``attempt_state`` (its
    finish time waits for its process to exit, so a crash meanwhile leaves it for recovery to
    kill), a started one is charged a preemption (``iris.attempts``), and its process is stopped."""
    task = snap.tasks[idx]
    live = idx in snap.live
    if task.state in ACTIVE_TASK_STATES:
        finished = {} if live else {"finished_ms": snap.now}
        _write_attempt(snap, fx, idx, task.attempt, state=attempt_state, error=reason, **finished)
        if charges_preemption(attempt_state, started=task.state == J.TASK_STATE_RUNNING):
            _write_task(snap, fx, idx, preemption_count=task.preemption_count + 1)
            _write_job(snap, fx, preemption_count=snap.job.preemption_count + 1)
    if live:
        fx.stops.append(Stop(snap.job.job_id, idx, reason))


def _end_task(snap: Snapshot, fx: Effects, idx: int, state: int, reason: str) -> None:
    """End an unfinished task in ``state`` with ``reason``, stopping its attempt if it has one."""
    _settle(snap, fx, idx, reason, state)
    finish_task(snap, fx, idx, state, error=reason)


def _stop_tasks(snap: Snapshot, fx: Effects, state: int, reason: str, action: str = taskevents.JOB_FINALIZED,
                said: str = "") -> None:
    """Take the job out of the queue and end each of its unfinished tasks in ``state``, recording
    ``action`` (a ``taskevents`` reason) for each, its message ``said`` (default ``reason``)."""
    _dequeue(snap, fx)
    for idx, task in list(snap.tasks.items()):
        if task.state not in TERMINAL_TASK_STATES:
            normal = action == taskevents.JOB_COMPLETED
            _event(snap, fx, idx, action, said or reason, taskevents.NORMAL if normal else taskevents.WARNING)
            _end_task(snap, fx, idx, state, reason)


def _lose_task(snap: Snapshot, fx: Effects, idx: int, reason: str) -> None:
    """End a task whose worker went away: WORKER_FAILED, and a gang's unfinished siblings COSCHED_FAILED."""
    _write_attempt(snap, fx, idx, snap.tasks[idx].attempt, worker_failure=1)
    _event(snap, fx, idx, *taskevents.resolution("Backend reported WORKER_FAILED", "WORKER_FAILED", retried=False))
    _end_task(snap, fx, idx, J.TASK_STATE_WORKER_FAILED, reason)
    if snap.job.coscheduled:
        for sibling, task in list(snap.tasks.items()):
            if task.state not in TERMINAL_TASK_STATES:
                message = f"Coscheduled sibling {snap.job.job_id}/{idx} failed: {reason}"
                _event(snap, fx, sibling, taskevents.SIBLING_TERMINATED, message)
                _end_task(snap, fx, sibling, J.TASK_STATE_COSCHED_FAILED, message)


def _task_failed(snap: Snapshot, fx: Effects, idx: int, outcome: Outcome) -> None:
    """A failed attempt: retry the task or fail it; under TERMINATE_CHILDREN a retry ends the jobs
    below; a gang's active siblings are bounced with it (retry) or fail with it."""
    job, task = snap.job, snap.tasks[idx]
    failures = task.failure_count + 1
    _write_job(snap, fx, failure_count=job.failure_count + 1)
    retry = task_retries_after_failure(failures, job.max_retries_failure, timed_out=outcome.timed_out)
    if retry:
        _write_task(snap, fx, idx, state=J.TASK_STATE_PENDING, failure_count=failures,
                    exit_code=outcome.exit_code, error=outcome.error)
    else:
        finish_task(snap, fx, idx, J.TASK_STATE_FAILED, failure_count=failures, exit_code=outcome.exit_code,
                    error=outcome.error)
    requeue = [idx] if retry else []
    if retry and trees.terminates_children(snap.policy, job.replicas):
        fx.end_below.append((job.job_id, trees.PARENT_TASK_RETRIED))
    if job.coscheduled:
        sibling_id = f"{job.job_id}/{idx}"
        for sibling, other in list(snap.tasks.items()):
            if sibling == idx or other.state not in ACTIVE_TASK_STATES:
                continue
            if retry:
                message = f"Coscheduled sibling {sibling_id} bounced for atomic re-scheduling"
                _event(snap, fx, sibling, taskevents.SIBLING_REQUEUED, message, taskevents.NORMAL)
                _settle(snap, fx, sibling, message, J.TASK_STATE_COSCHED_FAILED)
                _write_task(snap, fx, sibling, state=J.TASK_STATE_PENDING, error=message)
                requeue.append(sibling)
            else:
                _event(snap, fx, sibling, taskevents.SIBLING_TERMINATED, f"Coscheduled sibling {sibling_id} failed")
                _end_task(snap, fx, sibling, J.TASK_STATE_COSCHED_FAILED, f"Coscheduled sibling {sibling_id} failed")
    if requeue:
        _requeue(snap, fx, requeue)


# -- the job ----------------------------------------------------------------------------------------
def _final_summary(snap: Snapshot, state: int) -> dict[str, Any]:
    """Finish time, exit code and error of the job reaching terminal ``state``; the exit code is
    always 0, as a genuine Iris controller never sets a job's (its tasks' say how they exited)."""
    job = snap.job
    culprit = next((t for t in snap.tasks.values() if t.state != J.TASK_STATE_SUCCEEDED and t.error), None)
    error = culprit.error if culprit and state != J.JOB_STATE_SUCCEEDED else ""
    if state == J.JOB_STATE_FAILED and job.failure_count > job.max_task_failures:
        error = (f"Cumulative failed task attempts exceeded max_task_failures: failures={job.failure_count}, "
                 f"limit={job.max_task_failures}" + (f"; {error}" if error else ""))
    return {"finished_ms": snap.now, "error": error, "exit_code": 0}  # Iris never sets a job's exit code


def recompute(snap: Snapshot, fx: Effects) -> None:
    """Derive the job's state from its tasks again; a terminal one stops the rest of its tasks and,
    by ``trees``, ends the jobs below it."""
    job = snap.job
    if job.state in TERMINAL_JOB_STATES:
        return
    counts = Counter(task.state for task in snap.tasks.values())
    state = derive_job_state(job.state, counts, job.failure_count, job.max_task_failures, job.started_ms is not None)
    if state == job.state:
        return
    changes: dict[str, Any] = {"state": state}
    if state == J.JOB_STATE_RUNNING and job.started_ms is None:
        changes["started_ms"] = snap.now
        fx.started.add(job.job_id)
    if state not in TERMINAL_JOB_STATES:
        _write_job(snap, fx, **changes)
        return
    _dequeue(snap, fx)
    _write_job(snap, fx, **changes, **_final_summary(snap, state))
    _stop_tasks(snap, fx, J.TASK_STATE_KILLED, f"job ended ({J.JobState.Name(state)})",
                said=snap.job.error or taskevents.FINALIZED_REASONS.get(state, ""))
    if trees.ends_descendants(state, snap.policy, job.replicas):
        fx.end_below.append((job.job_id, trees.PARENT_JOB_TERMINATED))


# -- events -----------------------------------------------------------------------------------------
def attempt_running(snap: Snapshot, fx: Effects, idx: int, attempt: int) -> None:
    """The attempt's first process started: an ASSIGNED task (and its attempt) is RUNNING now."""
    if snap.tasks[idx].state == J.TASK_STATE_ASSIGNED:
        _write_attempt(snap, fx, idx, attempt, state=J.TASK_STATE_RUNNING, started_ms=snap.now)
        _write_task(snap, fx, idx, state=J.TASK_STATE_RUNNING, started_ms=snap.now)
        recompute(snap, fx)


def attempt_ended(snap: Snapshot, fx: Effects, idx: int, attempt: int, outcome: Outcome) -> None:
    """The attempt (not decided from outside) ended with ``outcome``: recorded on the attempt, then
    on its task (a failure by the retry rules)."""
    _write_attempt(snap, fx, idx, attempt, state=outcome.state, exit_code=outcome.exit_code, error=outcome.error,
                   finished_ms=snap.now)
    if outcome.state == J.TASK_STATE_FAILED:
        _task_failed(snap, fx, idx, outcome)
    else:
        finish_task(snap, fx, idx, outcome.state, exit_code=outcome.exit_code, error=outcome.error)
    reported = J.TaskState.Name(outcome.state).removeprefix("TASK_STATE_")
    why = EXECUTION_TIMEOUT if outcome.timed_out else f"Backend reported {reported}"
    retried = snap.tasks[idx].state == J.TASK_STATE_PENDING
    _event(snap, fx, idx, *taskevents.resolution(why, reported, retried))
    recompute(snap, fx)


def attempt_unrecorded(snap: Snapshot, fx: Effects, idx: int, attempt: int, row_id: int, reason: str) -> None:
    """Recording the end of attempt ``attempt`` (of the job with row id ``row_id``) failed: the attempt
    and, if they are still its own, its task and its job end FAILED with ``reason``."""
    _write_attempt(snap, fx, idx, attempt, state=J.TASK_STATE_FAILED, error=reason, finished_ms=snap.now)
    task = snap.tasks.get(idx)
    if task is None or snap.job.id != row_id or task.attempt != attempt:
        return
    if task.state not in TERMINAL_TASK_STATES:
        finish_task(snap, fx, idx, J.TASK_STATE_FAILED, error=reason)
    if snap.job.state not in TERMINAL_JOB_STATES:
        _dequeue(snap, fx)
        _write_job(snap, fx, state=J.JOB_STATE_FAILED, error=reason, finished_ms=snap.now, exit_code=0)
        _stop_tasks(snap, fx, J.TASK_STATE_KILLED, f"job ended (JOB_STATE_FAILED): {reason}", said=reason)


def worker_lost(snap: Snapshot, fx: Effects, idx: int, reason: str) -> None:
    """The controller running task ``idx`` went away (shutdown, or a crash found at restart)."""
    _lose_task(snap, fx, idx, reason)
    recompute(snap, fx)


def terminate(snap: Snapshot, fx: Effects, reason: str) -> None:
    """TerminateJob: every unfinished task KILLED with ``reason``, and every unfinished job below ends."""
    _stop_tasks(snap, fx, J.TASK_STATE_KILLED, reason)
    recompute(snap, fx)
    fx.end_below.append((snap.job.job_id, trees.PARENT_JOB_TERMINATED))


def complete(snap: Snapshot, fx: Effects, reason: str) -> None:
    """CompleteJob: every unfinished task SUCCEEDED, then the job itself, which ends the jobs below."""
    _stop_tasks(snap, fx, J.TASK_STATE_SUCCEEDED, reason, taskevents.JOB_COMPLETED)
    job = snap.job
    if job.state in TERMINAL_JOB_STATES:
        return
    started = {} if job.started_ms is not None else {"started_ms": snap.now}
    _write_job(snap, fx, state=J.JOB_STATE_SUCCEEDED, finished_ms=snap.now, error="", exit_code=0, **started)
    fx.end_below.append((job.job_id, trees.PARENT_JOB_TERMINATED))


def end_by_parent(snap: Snapshot, fx: Effects, reason: str) -> None:
    """A job above this unfinished one ended: its unfinished tasks KILLED with ``reason``, then the job."""
    if snap.job.state in TERMINAL_JOB_STATES:
        return
    _stop_tasks(snap, fx, J.TASK_STATE_KILLED, reason, taskevents.PARENT_TERMINATED)
    recompute(snap, fx)


def unschedulable(snap: Snapshot, fx: Effects, reason: str) -> None:
    """The job's PENDING tasks can never start: UNSCHEDULABLE with ``reason``."""
    for idx, task in list(snap.tasks.items()):
        if task.state == J.TASK_STATE_PENDING:
            _end_task(snap, fx, idx, J.TASK_STATE_UNSCHEDULABLE, reason)
    recompute(snap, fx)
