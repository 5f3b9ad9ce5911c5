"""What happens to the jobs below a job when it ends, as Iris 0.2.227 decides it (its reconcile
kernel: ``_finalize_terminal_job``, ``cancel_job``, ``job_preemption_policy``), checked against the
genuine scheduler in ``tests/differential/test_coordinators.py``.

Rules:

* A job that ends SUCCEEDED ends every unfinished job below it (children, theirs, …): KILLED,
  "Parent job terminated" — a coordinator that returns without waiting takes its steps with it.
* A job that ends any other way does the same when its preemption policy is TERMINATE_CHILDREN;
  under PRESERVE_CHILDREN the jobs below it run on. UNSPECIFIED means TERMINATE_CHILDREN for a
  one-task job and PRESERVE_CHILDREN for a job of several tasks.
* TerminateJob (and CompleteJob, which ends the job SUCCEEDED) ends the whole subtree whatever
  the policy; the job itself keeps its own reason ("Terminated by user").
* A task sent back to PENDING for a retry under TERMINATE_CHILDREN ends the jobs below its job
  ("Parent task retried"): the retried attempt starts them again.
"""

from __future__ import annotations

from typing import Final

from fray_jupyter.iris.proto import job_pb2

J = job_pb2
PARENT_JOB_TERMINATED: Final[str] = "Parent job terminated"
PARENT_TASK_RETRIED: Final[str] = "Parent task retried"


def terminates_children(policy: int, num_tasks: int) -> bool:
    """Whether a job with this preemption ``policy`` and ``num_tasks`` tasks ends the jobs below it
    when it fails, is killed or is retried (Iris's ``job_preemption_policy`` default)."""
    if policy == J.JOB_PREEMPTION_POLICY_UNSPECIFIED:
        return num_tasks <= 1
    return policy == J.JOB_PREEMPTION_POLICY_TERMINATE_CHILDREN


def ends_descendants(state: int, policy: int, num_tasks: int) -> bool:
    """Whether a job reaching terminal ``state`` ends the unfinished jobs below it."""
    return state == J.JOB_STATE_SUCCEEDED or terminates_children(policy, num_tasks)
