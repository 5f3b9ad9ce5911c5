"""The job-state rules (``derive_job_state``, the retry rule), as a table."""

from __future__ import annotations

import pytest

from fray_jupyter.controller.kernel.state_rules import derive_job_state, task_retries_after_failure
from fray_jupyter.iris.proto import job_pb2 as J

P, R, S, F, K, W, U, X = (J.TASK_STATE_PENDING, J.TASK_STATE_RUNNING, J.TASK_STATE_SUCCEEDED, J.TASK_STATE_FAILED,
                          J.TASK_STATE_KILLED, J.TASK_STATE_WORKER_FAILED, J.TASK_STATE_UNSCHEDULABLE,
                          J.TASK_STATE_COSCHED_FAILED)

CASES = [
    # (tasks, failures, budget, started, expected)
    ([P, P], 0, 0, False, J.JOB_STATE_PENDING),
    ([R, P], 0, 0, True, J.JOB_STATE_RUNNING),
    ([P, P], 1, 1, True, J.JOB_STATE_RUNNING),  # retried back to pending after starting
    ([S, S], 0, 0, True, J.JOB_STATE_SUCCEEDED),
    ([S, S], 1, 1, True, J.JOB_STATE_SUCCEEDED),  # a tolerated failure that later succeeded
    ([P, R], 1, 0, True, J.JOB_STATE_FAILED),  # budget exceeded: fail early
    ([F, S], 1, 1, True, J.JOB_STATE_FAILED),  # within budget, but a task can never succeed
    ([U, P], 0, 0, False, J.JOB_STATE_UNSCHEDULABLE),
    ([K, R], 0, 0, True, J.JOB_STATE_KILLED),
    ([W, S], 0, 0, True, J.JOB_STATE_WORKER_FAILED),
    ([W, X], 0, 0, True, J.JOB_STATE_WORKER_FAILED),
    ([W, P], 0, 0, True, J.JOB_STATE_RUNNING),  # a non-gang job keeps going
]


@pytest.mark.parametrize(("tasks", "failures", "budget", "started", "expected"), CASES)
def test_job_state_follows_iris_rules(tasks: list[int], failures: int, budget: int, started: bool,
                                      expected: int) -> None:
    counts: dict[int, int] = {}
    for state in tasks:
        counts[state] = counts.get(state, 0) + 1
    current = J.JOB_STATE_RUNNING if started else J.JOB_STATE_PENDING
    assert derive_job_state(current, counts, failures, budget, started) == expected


def test_terminal_job_states_never_change() -> None:
    assert derive_job_state(J.JOB_STATE_KILLED, {S: 2}, 0, 0, True) == J.JOB_STATE_KILLED


def test_retry_rule() -> None:
    assert task_retries_after_failure(1, 1, timed_out=False)
    assert not task_retries_after_failure(2, 1, timed_out=False)
    assert not task_retries_after_failure(1, 5, timed_out=True)

