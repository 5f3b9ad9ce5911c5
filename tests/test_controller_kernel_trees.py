"""What a job's end does to the jobs below it (``kernel.trees``), as Iris 0.2.227 decides it, as a
table over every terminal state, preemption policy and task count; the process tests
(``test_controller_trees.py``) show the same rules end to end."""

from __future__ import annotations

import pytest

from fray_jupyter.controller.kernel.trees import ends_descendants, terminates_children
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.states import TERMINAL_JOB_STATES

UNSET, TERMINATE, PRESERVE = (J.JOB_PREEMPTION_POLICY_UNSPECIFIED, J.JOB_PREEMPTION_POLICY_TERMINATE_CHILDREN,
                              J.JOB_PREEMPTION_POLICY_PRESERVE_CHILDREN)


@pytest.mark.parametrize(("policy", "tasks", "terminates"), [
    (UNSET, 1, True),  # unset: a one-task job terminates its children ...
    (UNSET, 2, False),  # ... a job of several tasks preserves them
    (TERMINATE, 1, True), (TERMINATE, 4, True),
    (PRESERVE, 1, False), (PRESERVE, 4, False),
])
def test_the_preemption_policy_and_its_default(policy: int, tasks: int, terminates: bool) -> None:
    assert terminates_children(policy, tasks) is terminates


@pytest.mark.parametrize("state", sorted(TERMINAL_JOB_STATES))
@pytest.mark.parametrize(("policy", "tasks"), [(UNSET, 1), (UNSET, 3), (TERMINATE, 3), (PRESERVE, 1)])
def test_success_always_ends_the_jobs_below_any_other_end_by_the_policy(state: int, policy: int,
                                                                         tasks: int) -> None:
    expected = state == J.JOB_STATE_SUCCEEDED or terminates_children(policy, tasks)
    assert ends_descendants(state, policy, tasks) is expected
    if policy == PRESERVE and state != J.JOB_STATE_SUCCEEDED:
        assert not ends_descendants(state, policy, tasks)  # PRESERVE_CHILDREN: the jobs below run on
