"""A task's attempts as Iris 0.2.227 reads them (``controller/attempt_counts.py``, ``tasks.py``):
what each one charges against the retry budgets, and what a task waiting to be retried says.

Rules:

* A FAILED attempt charges the failure budget (``max_retries_failure`` per task,
  ``max_task_failures`` over the job), whatever phase it failed in.
* An attempt that ended WORKER_FAILED, PREEMPTED or KILLED after it started running (it has a start
  time) charges the preemption budget (``max_retries_preemption`` per task): an out-of-band stop of
  a live attempt — a lost worker, a reclaimed slice, a cancel — is a preemption, not a failure. One
  stopped before it started charges nothing.
* A PENDING task whose last attempt has ended is being retried: its pending reason is
  ``Retrying (attempt <current attempt id + 1>, last: <that attempt's state enum name, lower-cased>)``,
  e.g. ``Retrying (attempt 1, last: task_state_failed)``. A task never started has none.
* A job's counts are the sums over its tasks' attempts (``JobStatus.failure_count`` /
  ``preemption_count``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, NamedTuple

from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import TERMINAL_TASK_STATES

J = job_pb2

PREEMPTION_STATES: Final[frozenset[int]] = frozenset(
    {J.TASK_STATE_WORKER_FAILED, J.TASK_STATE_PREEMPTED, J.TASK_STATE_KILLED})
"""Attempt end states that charge the preemption budget when the attempt had started."""


class RetryLimits(NamedTuple):
    """How many failures and preemptions a job allows (set by its ``LaunchJobRequest``)."""

    max_task_failures: int
    max_retries_failure: int
    max_retries_preemption: int


class AttemptCounts(NamedTuple):
    """What a task's (or a job's) attempts charged: failures and preemptions."""

    failures: int
    preemptions: int


def charges_preemption(state: int, started: bool) -> bool:
    """Whether an attempt that ended in ``state`` (``started``: it had begun running) is a preemption."""
    return started and state in PREEMPTION_STATES


def attempt_counts(attempts: Iterable[job_pb2.TaskAttempt]) -> AttemptCounts:
    """The failures and preemptions ``attempts`` charged (see the module rules)."""
    failures = preemptions = 0
    for attempt in attempts:
        if attempt.state == J.TASK_STATE_FAILED:
            failures += 1
        elif charges_preemption(attempt.state, attempt.started_at.epoch_ms > 0):
            preemptions += 1
    return AttemptCounts(failures, preemptions)


def retry_reason(state: int, current_attempt_id: int, last_attempt_state: int | None) -> str:
    """The pending reason of a task in ``state`` whose newest attempt (id ``current_attempt_id``)
    ended in ``last_attempt_state`` (None: it has none): Iris's retry line, or ""."""
    if state != J.TASK_STATE_PENDING or last_attempt_state not in TERMINAL_TASK_STATES:
        return ""
    return f"Retrying (attempt {current_attempt_id + 1}, last: {J.TaskState.Name(last_attempt_state).lower()})"
