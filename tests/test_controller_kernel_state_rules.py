"""The job-state rules (``kernel.state_rules``: ``derive_job_state``, the retry rule), as a table and as
properties over every histogram of task states."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fray_jupyter.controller.kernel.state_rules import (
    ACTIVE_TASK_STATES,
    derive_job_state,
    task_retries_after_failure,
)
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.states import TERMINAL_JOB_STATES, TERMINAL_TASK_STATES

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


TASK_STATES = sorted(J.TaskState.values())
JOB_STATES = sorted(J.JobState.values())
COUNTS = st.dictionaries(st.sampled_from(TASK_STATES), st.integers(1, 5), min_size=1)
"""A job's tasks, as a histogram of their states (at least one task)."""


@given(current=st.sampled_from(JOB_STATES), counts=COUNTS, failures=st.integers(0, 6),
       budget=st.integers(0, 6), started=st.booleans())
def test_the_job_state_follows_its_tasks(current: int, counts: dict[int, int], failures: int, budget: int,
                                         started: bool) -> None:
    state = derive_job_state(current, counts, failures, budget, started)
    if current in TERMINAL_JOB_STATES:
        assert state == current  # a finished job's state never changes
        return
    unfinished = set(counts) - TERMINAL_TASK_STATES
    if set(counts) == {J.TASK_STATE_SUCCEEDED}:
        assert state == J.JOB_STATE_SUCCEEDED
    elif failures > budget:
        assert state == J.JOB_STATE_FAILED  # over its failure budget, whatever its tasks do
    elif unfinished and not counts.keys() & {J.TASK_STATE_UNSCHEDULABLE, J.TASK_STATE_KILLED}:
        # while a task is unfinished and none ended the job, it runs (or waits, never having started)
        started_now = started or bool(unfinished & ACTIVE_TASK_STATES)
        assert state == (J.JOB_STATE_RUNNING if started_now else J.JOB_STATE_PENDING)
    else:
        assert state in TERMINAL_JOB_STATES and state != J.JOB_STATE_SUCCEEDED


@given(retries=st.integers(0, 10))
def test_a_task_is_retried_exactly_its_retries_and_never_after_a_timeout(retries: int) -> None:
    failures = range(1, retries + 3)
    retried = [task_retries_after_failure(n, retries, timed_out=False) for n in failures]
    assert retried == [True] * retries + [False] * 2
    assert not any(task_retries_after_failure(n, retries, timed_out=True) for n in failures)
