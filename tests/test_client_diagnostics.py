"""``client.diagnostics.root_causes``: the likely root cause of each of the first failed tasks, one
``GetTaskStatus`` call each, shared by the panel's diagnosis and the failed jobs below a tree."""

from __future__ import annotations

from fray_jupyter.client.diagnostics import MAX_ROOT_CAUSE_TASKS, root_causes
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.proto.controller_pb2 import Controller


class Highlights:
    """Answers ``task`` with one line naming the task, and records which tasks were asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def task(self, task_id: str) -> Controller.GetTaskStatusResponse:
        self.asked.append(task_id)
        return Controller.GetTaskStatusResponse(root_cause_highlights=[f"ValueError: in {task_id}"])


def tasks(*states: int) -> list[J.TaskStatus]:
    return [J.TaskStatus(task_id=f"/a/j/{index}", state=state) for index, state in enumerate(states)]  # type: ignore[arg-type]


def test_only_failed_and_worker_failed_tasks_are_asked_in_the_order_given() -> None:
    client = Highlights()
    found = root_causes(client, tasks(J.TASK_STATE_SUCCEEDED, J.TASK_STATE_FAILED, J.TASK_STATE_KILLED,  # type: ignore[arg-type]
                                      J.TASK_STATE_WORKER_FAILED, J.TASK_STATE_RUNNING))
    assert found == {"/a/j/1": ("ValueError: in /a/j/1",), "/a/j/3": ("ValueError: in /a/j/3",)}
    assert client.asked == ["/a/j/1", "/a/j/3"]


def test_at_most_the_first_few_failed_tasks_are_asked() -> None:
    client = Highlights()
    many = tasks(*[J.TASK_STATE_FAILED] * (MAX_ROOT_CAUSE_TASKS + 3))
    assert list(root_causes(client, many)) == [f"/a/j/{index}" for index in range(MAX_ROOT_CAUSE_TASKS)]  # type: ignore[arg-type]
    assert list(root_causes(client, many, most=1)) == ["/a/j/0"]  # type: ignore[arg-type]
    assert len(client.asked) == MAX_ROOT_CAUSE_TASKS + 1
    assert root_causes(client, tasks(J.TASK_STATE_SUCCEEDED)) == {}  # type: ignore[arg-type]
