"""The words of an attempt's end as Iris's controller records them in ``iris.task_event``
(``kernel.taskevents.resolution``): its reason, message and severity, retried or resolved."""

from __future__ import annotations

import pytest

from fray_jupyter.controller.kernel import taskevents as E


@pytest.mark.parametrize(("why", "state", "retried", "expected"), [
    ("Backend reported FAILED", "FAILED", True,
     (E.RETRY_SCHEDULED, "Backend reported FAILED; controller returned the task to PENDING.", E.NORMAL)),
    ("Backend reported FAILED", "FAILED", False,
     (E.TERMINATED, "Backend reported FAILED; controller resolved the task as FAILED.", E.WARNING)),
    ("Backend reported SUCCEEDED", "SUCCEEDED", False,
     (E.TERMINATED, "Backend reported SUCCEEDED; controller resolved the task as SUCCEEDED.", E.NORMAL)),
    ("Execution timeout exceeded", "FAILED", False,
     (E.TERMINATED, "Execution timeout exceeded; controller resolved the task as FAILED.", E.WARNING)),
    ("Backend reported WORKER_FAILED", "WORKER_FAILED", False,
     (E.TERMINATED, "Backend reported WORKER_FAILED; controller resolved the task as WORKER_FAILED.",
      E.WARNING)),
])
def test_an_attempts_end_in_iris_words(why: str, state: str, retried: bool,
                                       expected: tuple[str, str, str]) -> None:
    assert E.resolution(why, state, retried) == expected


def test_the_reason_codes_are_iris_own() -> None:
    assert (E.RETRY_SCHEDULED, E.TERMINATED, E.SIBLING_TERMINATED, E.SIBLING_REQUEUED, E.JOB_FINALIZED,
            E.PARENT_TERMINATED, E.JOB_COMPLETED, E.SOURCE) == (
        "TaskRetryScheduled", "TaskTerminated", "CoscheduledSiblingTerminated", "CoscheduledSiblingRequeued",
        "JobFinalizedTaskKilled", "ParentJobTerminated", "JobCompletedTaskSucceeded", "iris/controller")
