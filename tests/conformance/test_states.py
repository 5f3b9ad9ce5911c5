"""The finished-state sets of ``iris.states`` are Iris's own (``iris.cluster.types``)."""

from __future__ import annotations

from iris.cluster import types as iris_types

from fray_jupyter.iris.states import TERMINAL_JOB_STATES, TERMINAL_TASK_STATES


def test_finished_states_are_iris_s() -> None:
    assert set(TERMINAL_JOB_STATES) == set(iris_types.TERMINAL_JOB_STATES)
    assert set(TERMINAL_TASK_STATES) == set(iris_types.TERMINAL_TASK_STATES)
