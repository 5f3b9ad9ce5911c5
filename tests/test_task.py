"""``fray_jupyter.task_info()`` parses the task environment exactly as Iris's own
``iris.cluster.client.job_info.get_job_info()`` does: the oracle reads the same environment."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator, Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fray_jupyter import TaskInfo, task_info

HAS_IRIS = importlib.util.find_spec("iris") is not None
needs_iris = pytest.mark.skipif(not HAS_IRIS, reason="marin-iris (Python >= 3.12) is the oracle")
_KEYS = ("IRIS_TASK_ID", "IRIS_NUM_TASKS", "IRIS_SLICE_COUNT", "IRIS_TASKS_PER_SLICE", "IRIS_OUTPUT_DIR",
         "IRIS_JOB_ENV", "IRIS_JOB_CONSTRAINTS", "IRIS_JOB_SETUP_SCRIPTS")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key in _KEYS:
        monkeypatch.delenv(key, raising=False)
    yield


def iris_view(env: Mapping[str, str]) -> tuple[object, ...] | str | None:
    """What Iris's get_job_info() makes of ``env``: the fields task_info() also gives, None, or the
    exception's type name."""
    from iris.cluster.client import job_info

    saved = {key: os.environ.get(key) for key in _KEYS}
    try:
        for key in _KEYS:
            os.environ.pop(key, None)
        os.environ.update(env)
        job_info.set_job_info(None)  # get_job_info caches in a ContextVar
        try:
            info = job_info.get_job_info()
        except ValueError as error:
            return type(error).__name__
        if info is None:
            return None
        return (str(info.task_id), str(info.job_id), info.user, info.task_index, info.num_tasks, info.attempt_id)
    finally:
        job_info.set_job_info(None)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def our_view(env: Mapping[str, str]) -> tuple[object, ...] | str | None:
    try:
        info = task_info(env)
    except ValueError as error:
        return type(error).__name__
    if info is None:
        return None
    return (info.task_id, info.job_id, info.user, info.task_index, info.num_tasks, info.attempt)


def test_a_task_of_a_multislice_job() -> None:
    env = {"IRIS_TASK_ID": "/alice/train/6:2", "IRIS_NUM_TASKS": "8", "IRIS_SLICE_COUNT": "2",
           "IRIS_TASKS_PER_SLICE": "4", "IRIS_OUTPUT_DIR": "/w/.iris-outputs"}
    assert task_info(env) == TaskInfo(task_id="/alice/train/6", job_id="/alice/train", user="alice", task_index=6,
                                      num_tasks=8, attempt=2, slice_index=1, slice_count=2, vm_index=2,
                                      vms_per_slice=4, output_dir="/w/.iris-outputs")


@pytest.mark.parametrize(("env", "place"), [
    ({"IRIS_TASK_ID": "/a/j/3:0", "IRIS_NUM_TASKS": "4"}, (0, 1, 3, 4)),  # one multi-VM slice (v4-32): VM = index
    ({"IRIS_TASK_ID": "/a/j/1:0", "IRIS_NUM_TASKS": "2", "IRIS_SLICE_COUNT": "2", "IRIS_TASKS_PER_SLICE": "1"},
     (1, 2, 0, 1)),  # v5p-8 x 2: each task a whole slice
    ({"IRIS_TASK_ID": "/a/j/0"}, (0, 1, 0, 1)),  # no attempt suffix, no count: attempt 0 of 1 task
])
def test_slice_and_vm(env: dict[str, str], place: tuple[int, int, int, int]) -> None:
    info = task_info(env)
    assert info is not None and (info.slice_index, info.slice_count, info.vm_index, info.vms_per_slice) == place


def test_outside_a_task_is_none_and_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    assert task_info() is None and task_info({"IRIS_TASK_ID": ""}) is None
    monkeypatch.setenv("IRIS_TASK_ID", "/bob/nb/0:1")
    info = task_info()
    assert info is not None and (info.user, info.attempt, info.output_dir) == ("bob", 1, None)


def test_a_bad_slice_variable_names_itself() -> None:
    with pytest.raises(ValueError, match="IRIS_TASKS_PER_SLICE must be an integer"):
        task_info({"IRIS_TASK_ID": "/a/j/0:0", "IRIS_SLICE_COUNT": "2", "IRIS_TASKS_PER_SLICE": "x"})


# -- the oracle ----------------------------------------------------------------------------------------
EXAMPLES = ["/alice/train/0:0", "/alice/train/3", "/alice/train/child/12:4", "/alice/train", "alice/train/0:0",
            "/alice//0:0", "/alice/train/x:0", "/alice/train/0:x", "/a:b/train/0", "/alice/train/0:", "/ /j/0:0",
            "/alice/train/ 7:0", "/alice/train/-1:0", "/alice/train/1_0:0", "/alice/train/0: 2", ":", "/", ""]


@needs_iris
@pytest.mark.parametrize("raw", EXAMPLES)
def test_same_as_iris_on_examples(raw: str) -> None:
    for count in ("4", "", "x", "0"):
        env = {"IRIS_TASK_ID": raw, **({"IRIS_NUM_TASKS": count} if count else {})}
        assert our_view(env) == iris_view(env), env


_PART = st.one_of(st.sampled_from(["alice", "train", "0", "12", " ", "", "-1", "1_0", "٣", "a:b", "x"]),
                  st.text(alphabet="ab0129:_- /", max_size=5))


@needs_iris
@settings(max_examples=300, deadline=None)
@given(parts=st.lists(_PART, min_size=0, max_size=5), slash=st.booleans(),
       attempt=st.one_of(st.none(), st.sampled_from(["0", "3", "", "x", " 1", "-2"])),
       count=st.one_of(st.none(), st.sampled_from(["1", "8", "x", ""])))
def test_same_as_iris_on_generated_ids(parts: list[str], slash: bool, attempt: str | None, count: str | None) -> None:
    raw = ("/" if slash else "") + "/".join(parts) + (f":{attempt}" if attempt is not None else "")
    env = {"IRIS_TASK_ID": raw, **({"IRIS_NUM_TASKS": count} if count is not None else {})}
    assert our_view(env) == iris_view(env), env
