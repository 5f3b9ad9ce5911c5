"""Jobs as the controller's kernel sees them, built in memory for its tests: a ``JobRow`` with its
``TaskRow``s in one ``Snapshot``, and what one event on it decided (``Seen``), in a line a table can
hold. Nothing here touches a store or a process."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from fray_jupyter.controller.kernel.rows import JobRow, TaskRow
from fray_jupyter.controller.kernel.state_rules import ACTIVE_TASK_STATES
from fray_jupyter.controller.kernel.transitions import Effects, Event, Snapshot, decide
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.states import TERMINAL_TASK_STATES

JOB_ID: Final = "/alice/job"
NOW: Final = 1_000_000
"""The time of every event (epoch ms); a job is submitted at ``NOW - 1000``."""


def job_row(replicas: int = 1, *, state: int = J.JOB_STATE_PENDING, coscheduled: bool = False,
            retries: int = 0, budget: int = 0, failures: int = 0, started: bool = False) -> JobRow:
    """A stored job: ``retries`` is ``max_retries_failure``, ``budget`` ``max_task_failures``."""
    return JobRow(id=7, job_id=JOB_ID, name=JOB_ID, user="alice", state=state, submitted_ms=NOW - 1000,
                  started_ms=NOW - 500 if started else None, finished_ms=None, error="", exit_code=None,
                  status_message="", replicas=replicas, coscheduled=int(coscheduled),
                  max_retries_failure=retries, max_task_failures=budget, timeout_ms=None,
                  scheduling_timeout_ms=None, failure_count=failures, preemption_count=0, request=None,
                  resources=b"", bundle_path="")


def task_row(idx: int, state: int = J.TASK_STATE_PENDING) -> TaskRow:
    """A stored task; one that is not PENDING has had an attempt (id 0), a finished one a finish time."""
    attempt = -1 if state == J.TASK_STATE_PENDING else 0
    finished = NOW - 100 if state in TERMINAL_TASK_STATES else None
    return TaskRow(JOB_ID, idx, state, attempt, 0, 0, None, "", None, finished)


def snapshot(states: Sequence[int], *, job_state: int | None = None,
             policy: int = J.JOB_PREEMPTION_POLICY_UNSPECIFIED, exited: Sequence[int] = (),
             coscheduled: bool = False, retries: int = 0, budget: int = 0) -> Snapshot:
    """A job whose tasks are in ``states``: RUNNING once a task has run (ASSIGNED is not yet), else
    PENDING, unless ``job_state`` says. Every active task's attempt has a live process but those in
    ``exited`` (the attempt whose end an event brings). The other arguments are ``job_row``'s."""
    started = any(state not in (J.TASK_STATE_PENDING, J.TASK_STATE_ASSIGNED) for state in states)
    state = job_state if job_state is not None else J.JOB_STATE_RUNNING if started else J.JOB_STATE_PENDING
    row = job_row(len(states), state=state, started=started, coscheduled=coscheduled, retries=retries,
                  budget=budget)
    tasks = {idx: task_row(idx, task_state) for idx, task_state in enumerate(states)}
    live = {idx for idx, task_state in enumerate(states) if task_state in ACTIVE_TASK_STATES} - set(exited)
    return Snapshot(row, tasks, frozenset(live), policy, NOW)


class Seen(NamedTuple):
    """What one event did, as a table states it: the job's state after, each task's, the tasks whose
    live attempt is stopped, the queue change (``()``: none; ``None``: out of the queue; else the
    tasks queued again), the reasons the jobs below end with, and the task events recorded."""

    job: int
    tasks: tuple[int, ...]
    stops: tuple[int, ...] = ()
    queue: tuple[int, ...] | None = ()
    below: tuple[str, ...] = ()
    events: tuple[str, ...] = ()


def seen(snap: Snapshot, effects: Effects) -> Seen:
    """``Seen`` of ``effects`` on ``snap`` (as the event left it)."""
    queued = effects.queue.get(JOB_ID, [])
    return Seen(snap.job.state, tuple(task.state for _, task in sorted(snap.tasks.items())),
                tuple(stop.idx for stop in effects.stops), None if queued is None else tuple(queued),
                tuple(reason for _, reason in effects.end_below),
                tuple(event.reason for event in effects.events))


def run(snap: Snapshot, event: Event) -> tuple[Seen, Effects]:
    """Decide ``event`` on ``snap``: what a table reads of it, and the effects themselves."""
    effects = decide(snap, event)
    return seen(snap, effects), effects
