"""``ListUsers`` on the embedded controller: who has work here, and how much of it is live.

Rules (Iris's ``accounts.list_users``): every user with a stored job or a budget row is listed; their
job counts are over their unfinished jobs (pending, building, running) and their task counts over those
jobs' tasks, both keyed by state name with every state present (0 when none); users with more
unfinished jobs come first, then more running tasks, then by name. The role is ``"user"`` for
everyone, as a local Iris without an auth provider answers.
"""

from __future__ import annotations

from typing import Final

from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.iris.states import job_state_name, task_state_name

C = controller_pb2.Controller
J = job_pb2
UNFINISHED_JOB_STATES: Final[tuple[int, ...]] = (J.JOB_STATE_PENDING, J.JOB_STATE_BUILDING, J.JOB_STATE_RUNNING)
LISTED_JOB_STATES: Final[tuple[int, ...]] = tuple(s for s in J.JobState.values() if s != J.JOB_STATE_UNSPECIFIED)
LISTED_TASK_STATES: Final[tuple[int, ...]] = tuple(
    s for s in J.TaskState.values() if s not in (J.TASK_STATE_UNSPECIFIED, J.TASK_STATE_MISSING))
"""The states every summary names (Iris leaves out UNSPECIFIED, and MISSING for tasks)."""
ROLE: Final[str] = "user"


def list_users(store: Store) -> C.ListUsersResponse:
    """Every user's summary, in Iris's order (see the module docstring)."""
    jobs, tasks = store.counts_by_user(UNFINISHED_JOB_STATES)
    users = set(store.users()) | set(store.user_budgets())

    def order(user: str) -> tuple[int, int, str]:
        return (-sum(jobs.get(user, {}).values()), -tasks.get(user, {}).get(J.TASK_STATE_RUNNING, 0), user)

    summaries = []
    for user in sorted(users, key=order):
        job_counts, task_counts = jobs.get(user, {}), tasks.get(user, {})
        summaries.append(C.UserSummary(
            user=user, role=ROLE,
            job_state_counts={job_state_name(s): job_counts.get(s, 0) for s in LISTED_JOB_STATES},
            task_state_counts={task_state_name(s): task_counts.get(s, 0) for s in LISTED_TASK_STATES}))
    return C.ListUsersResponse(users=summaries)
