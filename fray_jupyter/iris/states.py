"""Iris's wire vocabulary for jobs, tasks and their log rows, written once for the client, the
controller, the views and the REST API.

Rules (restating Iris's ``cluster/types.py`` and its controller):

* A state's name is its enum name without the prefix, lower-cased: ``JOB_STATE_RUNNING`` →
  ``"running"`` (the form ``JobQuery.state_filter`` takes and ``JobStatus.task_state_counts`` is
  keyed by), ``TASK_STATE_COSCHED_FAILED`` → ``"cosched_failed"``. Job and task states share
  names where they share meaning.
* A job is finished (``is_job_finished``) in SUCCEEDED, FAILED, KILLED, WORKER_FAILED or
  UNSCHEDULABLE; a task also in PREEMPTED and COSCHED_FAILED. A finished state never changes.
* ``ListJobs`` sorted by state orders RUNNING, BUILDING, PENDING, then the finished states; its
  pages hold at most 500 jobs and reach at most offset 5,000 (Iris's ``MAX_LIST_JOBS_LIMIT`` and
  ``MAX_LIST_JOBS_OFFSET``).
* A job id is ``/<user>/<name>[/<child>…]``; a task id is ``<job id>/<index>``; a log row's key
  is ``<task id>:<attempt>``. A child job's id is its parent's id and its own name
  (``JobName.child``); its parent is the id without the last component, a root job (two
  components) has none. A name Python's ``int()`` reads as a number (``7``, ``-1``, ``1_0``) is a
  task index, never a child job's name (Iris's ``JobName.task_index``).
"""

from __future__ import annotations

from typing import Final

from fray_jupyter.iris.proto import job_pb2

J = job_pb2

TERMINAL_JOB_STATES: Final[frozenset[int]] = frozenset(
    {J.JOB_STATE_SUCCEEDED, J.JOB_STATE_FAILED, J.JOB_STATE_KILLED, J.JOB_STATE_WORKER_FAILED,
     J.JOB_STATE_UNSCHEDULABLE}
)
"""Job states that never change again (Iris's ``is_job_finished``)."""
TERMINAL_TASK_STATES: Final[frozenset[int]] = frozenset(
    {J.TASK_STATE_SUCCEEDED, J.TASK_STATE_FAILED, J.TASK_STATE_KILLED, J.TASK_STATE_WORKER_FAILED,
     J.TASK_STATE_UNSCHEDULABLE, J.TASK_STATE_PREEMPTED, J.TASK_STATE_COSCHED_FAILED}
)
"""Task states that never change again."""

MAX_LIST_JOBS_LIMIT: Final[int] = 500
"""The most jobs one ``ListJobs`` page holds (a ``limit`` of 0 or above it means this many)."""
MAX_LIST_JOBS_OFFSET: Final[int] = 5000
"""The deepest ``ListJobs`` offset a controller answers (deeper is INVALID_ARGUMENT)."""

JOB_STATE_SORT_ORDER: Final[dict[int, int]] = {
    J.JOB_STATE_RUNNING: 0, J.JOB_STATE_BUILDING: 1, J.JOB_STATE_PENDING: 2, J.JOB_STATE_SUCCEEDED: 3,
    J.JOB_STATE_FAILED: 4, J.JOB_STATE_KILLED: 5, J.JOB_STATE_WORKER_FAILED: 6,
    J.JOB_STATE_UNSCHEDULABLE: 7,
}
"""``ListJobs`` "sort by state" rank of each job state (every state but UNSPECIFIED)."""


def job_state_name(state: int) -> str:
    """``JOB_STATE_RUNNING`` → ``"running"``."""
    return str(J.JobState.Name(state)).removeprefix("JOB_STATE_").lower()


def task_state_name(state: int) -> str:
    """``TASK_STATE_RUNNING`` → ``"running"``."""
    return str(J.TaskState.Name(state)).removeprefix("TASK_STATE_").lower()


JOB_STATES: Final[tuple[str, ...]] = tuple(
    job_state_name(state) for state in J.JobState.values() if state != J.JOB_STATE_UNSPECIFIED)
"""Every job state name a client may filter by, in Iris's order (``pending`` … ``unschedulable``)."""
TASK_STATES: Final[tuple[str, ...]] = tuple(
    task_state_name(state) for state in J.TaskState.values() if state != J.TASK_STATE_UNSPECIFIED)
"""Every task state name (the keys ``JobStatus.task_state_counts`` may have)."""


def job_state_from_name(name: str) -> int | None:
    """The job state named ``name`` (any case, as a ``state_filter``), or None."""
    wanted = name.strip().lower()
    return next((state for state in JOB_STATE_SORT_ORDER if job_state_name(state) == wanted), None)


def is_job_finished(state: int) -> bool:
    """Whether a job in ``state`` can no longer change."""
    return state in TERMINAL_JOB_STATES


# -- ids and keys ----------------------------------------------------------------------------------
def task_id_for(job_id: str, index: int) -> str:
    """``("/alice/train", 3)`` → ``"/alice/train/3"``."""
    return f"{job_id}/{index}"


def task_job(task_id: str) -> str:
    """The job a task id belongs to: ``"/alice/train/3"`` → ``"/alice/train"``."""
    return task_id.rpartition("/")[0]


def task_index(task_id: str) -> int | None:
    """The task's index within its job: ``"/alice/train/3"`` → ``3``; None for a non-task id."""
    tail = task_id.rpartition("/")[2]
    return int(tail) if tail.isdigit() else None


def task_label(task_id: str) -> str:
    """How a task is named beside its job: its index as text (``"3"``), else the whole id."""
    return task_id.rpartition("/")[2] or task_id


def job_user_and_name(job_id: str) -> tuple[str, str]:
    """``"/alice/train/eval"`` → ``("alice", "train/eval")``: the submitting user and the rest."""
    user, _, name = job_id.lstrip("/").partition("/")
    return user, name


def job_user(job_id: str) -> str:
    """The submitting user of a job or child job (the one its budget is charged to): the first
    component, ``"/alice/train/eval"`` → ``"alice"``."""
    return job_user_and_name(job_id)[0]


def split_key(key: str) -> tuple[str, int]:
    """A log row's key → (task id, attempt): ``"/alice/train/0:1"`` → ``("/alice/train/0", 1)``; a
    key without an attempt suffix is ``(key, 0)``."""
    task, _, attempt = key.rpartition(":")
    return (task, int(attempt)) if task and attempt.isdigit() else (key, 0)


def log_key(task_id: str, attempt: int) -> str:
    """The key of a log row written by ``attempt`` of ``task_id``: ``"/alice/train/0:1"``."""
    return f"{task_id}:{attempt}"


def parent_job_id(job_id: str) -> str:
    """The parent of a child job: ``"/alice/train/eval"`` → ``"/alice/train"``; ``""`` for a root job
    (``"/alice/train"``)."""
    head = job_id.rpartition("/")[0]
    return head if head.count("/") >= 2 else ""


def child_job_id(parent: str, name: str) -> str:
    """``("/alice/train", "eval")`` → ``"/alice/train/eval"`` (Iris's ``JobName.child``)."""
    return f"{parent}/{name}"


def job_depth(job_id: str) -> int:
    """1 for a root job, 2 for its child, …: the components after the user."""
    return job_id.count("/") - 1


def is_task_index(part: str) -> bool:
    """Whether a path component names a task rather than a job: Iris reads it as one when ``int()``
    accepts it (``"7"``, ``"-1"``, ``" 3 "``, ``"1_0"``)."""
    try:
        int(part)
    except ValueError:
        return False
    return True


def descendant_bounds(job_id: str) -> tuple[str, str]:
    """``(low, high)``: the ids of a job's descendants are exactly the ids ``low <= id < high``
    (they start with ``<job id>/``, and ``'0'`` follows ``'/'``), so an index on ids finds them."""
    return f"{job_id}/", f"{job_id}0"


def parse_task_attempt(raw: str) -> tuple[tuple[str, ...], int] | None:
    """``IRIS_TASK_ID`` → (path components of the task id, attempt), as Iris parses it; None where
    Iris raises ``ValueError`` (no leading '/', an empty component, fewer than three components, a
    last component that is not an index, an attempt that is not an integer)."""
    colon = raw.rfind(":")
    attempt = 0
    if colon >= 0:
        try:
            attempt = int(raw[colon + 1:])
        except ValueError:
            return None
        raw = raw[:colon]
    if not raw.startswith("/"):
        return None
    parts = tuple(raw[1:].split("/"))
    if len(parts) < 3 or any(not part or not part.strip() for part in parts) or not is_task_index(parts[-1]):
        return None
    return parts, attempt
