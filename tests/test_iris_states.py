"""Iris's wire vocabulary (``iris.states``): state names, finished states, ids and log keys."""

from __future__ import annotations

import pytest

from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.states import (
    JOB_STATE_SORT_ORDER,
    JOB_STATES,
    TASK_STATES,
    TERMINAL_JOB_STATES,
    TERMINAL_TASK_STATES,
    child_job_id,
    descendant_bounds,
    is_task_index,
    job_depth,
    job_state_from_name,
    job_state_name,
    job_user,
    job_user_and_name,
    log_key,
    parent_job_id,
    parse_task_attempt,
    split_key,
    task_id_for,
    task_index,
    task_job,
    task_label,
    task_state_name,
)


def test_names_drop_the_prefix_and_round_trip() -> None:
    assert job_state_name(J.JOB_STATE_WORKER_FAILED) == "worker_failed"
    assert task_state_name(J.TASK_STATE_COSCHED_FAILED) == "cosched_failed"
    for state in JOB_STATE_SORT_ORDER:
        assert job_state_from_name(job_state_name(state).upper()) == state
    assert job_state_from_name(" Running ") == J.JOB_STATE_RUNNING
    assert job_state_from_name("nonsense") is None and job_state_from_name("unspecified") is None


def test_every_named_state_is_filterable_and_sortable() -> None:
    assert JOB_STATES == ("pending", "building", "running", "succeeded", "failed", "killed", "worker_failed",
                          "unschedulable")
    assert {job_state_name(state) for state in JOB_STATE_SORT_ORDER} == set(JOB_STATES)
    assert "unspecified" not in TASK_STATES and {"assigned", "preempted", "cosched_failed"} <= set(TASK_STATES)


def test_sort_order_puts_live_jobs_first() -> None:
    ranked = sorted(JOB_STATE_SORT_ORDER, key=JOB_STATE_SORT_ORDER.__getitem__)
    live = [state for state in ranked if state not in TERMINAL_JOB_STATES]
    assert ranked[: len(live)] == live == [J.JOB_STATE_RUNNING, J.JOB_STATE_BUILDING, J.JOB_STATE_PENDING]


def test_a_job_state_that_ends_a_job_ends_its_tasks_too() -> None:
    for state in TERMINAL_JOB_STATES:
        assert J.TaskState.Value("TASK_STATE_" + job_state_name(state).upper()) in TERMINAL_TASK_STATES
    assert J.TASK_STATE_RUNNING not in TERMINAL_TASK_STATES and J.JOB_STATE_PENDING not in TERMINAL_JOB_STATES


@pytest.mark.parametrize(("key", "parsed"), [
    ("/alice/train/0:1", ("/alice/train/0", 1)),
    ("/alice/train/12:0", ("/alice/train/12", 0)),
    ("/system/worker/w1", ("/system/worker/w1", 0)),
    (":3", (":3", 0)),
])
def test_split_key(key: str, parsed: tuple[str, int]) -> None:
    assert split_key(key) == parsed


def test_ids_and_keys_compose_and_parse_back() -> None:
    task = task_id_for("/alice/train", 3)
    assert task == "/alice/train/3" and task_job(task) == "/alice/train"
    assert (task_index(task), task_label(task)) == (3, "3")
    assert split_key(log_key(task, 2)) == (task, 2)
    assert task_index("/alice/train/eval") is None and task_label("solo") == "solo"
    assert job_user_and_name("/alice/train/eval") == ("alice", "train/eval")
    assert job_user("/alice/train/eval") == job_user("/alice/train") == "alice"


def test_a_child_id_is_its_parents_plus_its_name_and_a_root_has_no_parent() -> None:
    child = child_job_id(child_job_id("/alice/coord", "step"), "eval")
    assert child == "/alice/coord/step/eval" and job_depth(child) == 3 and job_depth("/alice/coord") == 1
    assert parent_job_id(child) == "/alice/coord/step" and parent_job_id("/alice/coord/step") == "/alice/coord"
    assert parent_job_id("/alice/coord") == ""


@pytest.mark.parametrize(("part", "index"), [("7", True), ("-1", True), (" 3 ", True), ("1_0", True),
                                             ("step-1", False), ("", False), ("0x1", False), ("1.0", False)])
def test_a_component_int_reads_is_a_task_index(part: str, index: bool) -> None:
    assert is_task_index(part) is index


def test_descendant_bounds_hold_exactly_the_descendants() -> None:
    low, high = descendant_bounds("/a/p")
    ids = ["/a/p", "/a/p/c", "/a/p/c/g", "/a/p-2", "/a/p.x", "/a/p0", "/a/pa", "/a/o/z", "/a/p/~"]
    assert sorted(i for i in ids if low <= i < high) == ["/a/p/c", "/a/p/c/g", "/a/p/~"]


@pytest.mark.parametrize(("raw", "parsed"), [
    ("/alice/coord/step/3:1", (("alice", "coord", "step", "3"), 1)),
    ("/alice/train/0", (("alice", "train", "0"), 0)),
    ("/alice/train", None), ("alice/train/0", None), ("/alice//0", None), ("/alice/train/0:x", None),
])
def test_a_task_attempt_id_parses_as_iris_parses_it(raw: str, parsed: object) -> None:
    assert parse_task_attempt(raw) == parsed
