"""Task events as Iris's controller records them in ``iris.task_event`` (marin-iris 0.2.227,
``iris/cluster/controller/reconcile``): controller decisions about one task attempt, not every
state change.

Rules (reason codes, severities and messages are Iris's):

* An attempt's end decides its task: ``TaskRetryScheduled`` (Normal) "<why>; controller returned the
  task to PENDING." when it is retried, ``TaskTerminated`` "<why>; controller resolved the task as
  <STATE>." otherwise (Warning unless SUCCEEDED). ``<why>`` is "Backend reported <STATE>" (the
  attempt's own state, e.g. FAILED, WORKER_FAILED), or "Execution timeout exceeded".
* A job ending with tasks unfinished: ``JobFinalizedTaskKilled`` (Warning) with the job's reason
  ("Terminated by user" for ``iris job cancel``; its error, else ``FINALIZED_REASONS``); the jobs below it: ``ParentJobTerminated`` (Warning)
  "Parent job terminated"; CompleteJob: ``JobCompletedTaskSucceeded`` (Normal).
* Gangs: ``CoscheduledSiblingTerminated`` (Warning) / ``CoscheduledSiblingRequeued`` (Normal).
* A task that never had an attempt gets no event (Iris keys events on the attempt's uid). Every row's
  ``source`` is ``iris/controller`` and its ``count`` 1; the Kubernetes columns are null.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from fray_jupyter.iris.proto import job_pb2

SOURCE: Final[str] = "iris/controller"
NORMAL: Final[str] = "Normal"
WARNING: Final[str] = "Warning"
RETRY_SCHEDULED: Final[str] = "TaskRetryScheduled"
TERMINATED: Final[str] = "TaskTerminated"
SIBLING_TERMINATED: Final[str] = "CoscheduledSiblingTerminated"
SIBLING_REQUEUED: Final[str] = "CoscheduledSiblingRequeued"
JOB_FINALIZED: Final[str] = "JobFinalizedTaskKilled"
PARENT_TERMINATED: Final[str] = "ParentJobTerminated"
JOB_COMPLETED: Final[str] = "JobCompletedTaskSucceeded"

FINALIZED_REASONS: Final[dict[int, str]] = {
    job_pb2.JOB_STATE_SUCCEEDED: "Job completed successfully", job_pb2.JOB_STATE_FAILED: "Job failed",
    job_pb2.JOB_STATE_KILLED: "Job was terminated.", job_pb2.JOB_STATE_UNSCHEDULABLE: "Job could not be scheduled.",
    job_pb2.JOB_STATE_WORKER_FAILED: "Preemption budget exhausted"}
"""A job's terminal state → the reason its remaining tasks' event gives when the job has no error (Iris's)."""


@dataclass(frozen=True)
class TaskEvent:
    """One controller decision about task ``idx`` of ``job_id`` in its attempt ``attempt``."""

    job_id: str
    idx: int
    attempt: int
    ts_ms: int
    reason: str
    message: str
    severity: str


def resolution(why: str, state_name: str, retried: bool) -> tuple[str, str, str]:
    """``(reason, message, severity)`` of an attempt's end that ``why`` explains, its task retried
    or resolved as ``state_name`` (``SUCCEEDED``, ``FAILED`` …)."""
    if retried:
        return RETRY_SCHEDULED, f"{why}; controller returned the task to PENDING.", NORMAL
    severity = NORMAL if state_name == "SUCCEEDED" else WARNING
    return TERMINATED, f"{why}; controller resolved the task as {state_name}.", severity
