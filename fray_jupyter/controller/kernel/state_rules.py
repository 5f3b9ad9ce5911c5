"""Job and task state rules, as pure functions over numbers (no I/O), following Iris. The state
names, the terminal sets and the sort order are the wire vocabulary in ``iris.states``.

Rules (from Iris's controller, restated):

* A task's attempt that fails (non-zero exit, failed setup command, process that could not
  start) adds one to the task's ``failure_count``. The task is retried (back to PENDING) while
  ``failure_count <= max_retries_failure``; after that it is FAILED. An attempt that exceeds
  the job's per-task ``timeout`` fails the task at once, without retry.
* ``max_task_failures`` is a job-level budget of *cumulative failed attempts* across all
  tasks: once the job's total exceeds it, the job is FAILED and its remaining tasks are
  stopped. With the default 0 the first failed attempt fails the job, so a retry only
  happens when ``max_task_failures`` allows it too (Fray's actors set both).
* The job state is recomputed from its tasks with ``derive_job_state`` (first match wins):
  all SUCCEEDED → SUCCEEDED; failures over budget → FAILED; any UNSCHEDULABLE →
  UNSCHEDULABLE; any KILLED → KILLED; all terminal with a WORKER_FAILED / PREEMPTED /
  COSCHED_FAILED task → WORKER_FAILED; all terminal otherwise → FAILED; any task running →
  RUNNING; started before → RUNNING; else PENDING. A terminal job state never changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import TERMINAL_JOB_STATES, TERMINAL_TASK_STATES

J = job_pb2
ACTIVE_TASK_STATES: Final[frozenset[int]] = frozenset(
    {J.TASK_STATE_ASSIGNED, J.TASK_STATE_BUILDING, J.TASK_STATE_RUNNING}
)
# Task states counted in JobStatus.completed_count (as Iris counts them).
COMPLETED_TASK_STATES: Final[frozenset[int]] = frozenset({J.TASK_STATE_SUCCEEDED, J.TASK_STATE_KILLED})
# Task states that make an all-terminal job WORKER_FAILED rather than FAILED.
_WORKER_LOSS_STATES: Final[frozenset[int]] = frozenset(
    {J.TASK_STATE_WORKER_FAILED, J.TASK_STATE_PREEMPTED, J.TASK_STATE_COSCHED_FAILED}
)


def task_retries_after_failure(failure_count: int, max_retries_failure: int, *, timed_out: bool) -> bool:
    """Whether a task whose attempts have now failed ``failure_count`` times runs again."""
    return not timed_out and failure_count <= max_retries_failure


def derive_job_state(
    current: int,
    counts: Mapping[int, int],
    total_failures: int,
    max_task_failures: int,
    started: bool,
) -> int:
    """The job state implied by its task-state histogram ``counts`` (see the module rules)."""
    if current in TERMINAL_JOB_STATES:
        return current
    total = sum(counts.values())
    present = {state for state, count in counts.items() if count > 0}
    all_terminal = total > 0 and present <= TERMINAL_TASK_STATES
    if total > 0 and counts.get(J.TASK_STATE_SUCCEEDED, 0) == total:
        return J.JOB_STATE_SUCCEEDED
    if total_failures > max_task_failures:
        return J.JOB_STATE_FAILED
    if counts.get(J.TASK_STATE_UNSCHEDULABLE, 0):
        return J.JOB_STATE_UNSCHEDULABLE
    if counts.get(J.TASK_STATE_KILLED, 0):
        return J.JOB_STATE_KILLED
    if all_terminal and present & _WORKER_LOSS_STATES:
        return J.JOB_STATE_WORKER_FAILED
    if all_terminal:
        return J.JOB_STATE_FAILED
    if present & ACTIVE_TASK_STATES or started:
        return J.JOB_STATE_RUNNING
    return J.JOB_STATE_PENDING
