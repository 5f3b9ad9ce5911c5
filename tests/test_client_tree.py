"""``client.tree``: a job's tree read as Iris lists it — one CHILDREN page per parent that has
children, none for a subtree already settled — and the failed jobs below it with their root causes."""

from __future__ import annotations

from fray_jupyter.client.tree import failed_children, fetch_tree
from fray_jupyter.iris.proto import job_pb2 as J
from tests.scripted_controller import ScriptedController

R, S, F = J.JOB_STATE_RUNNING, J.JOB_STATE_SUCCEEDED, J.JOB_STATE_FAILED


def job(job_id: str, state: int, *, children: bool = False, submitted: int = 1) -> J.JobStatus:
    status = J.JobStatus(job_id=job_id, state=state, has_children=children)  # type: ignore[arg-type]
    status.submitted_at.epoch_ms = submitted
    return status


def test_one_page_per_parent_with_children_and_none_for_a_settled_subtree() -> None:
    controller = ScriptedController(children=[job("/a/c/train", S, children=True), job("/a/c/eval", R),
                                              job("/a/c/train/sub", S)])
    root = job("/a/c", R, children=True)
    first = fetch_tree(controller, root)  # type: ignore[arg-type]
    assert controller.listed == ["/a/c", "/a/c/train"]
    assert [status.job_id for status in first.jobs()] == ["/a/c/train", "/a/c/train/sub", "/a/c/eval"]
    controller.listed.clear()
    again = fetch_tree(controller, root, first)  # type: ignore[arg-type]
    assert controller.listed == ["/a/c"] and again == first  # train ended with all below it: not asked again
    controller.children[0] = job("/a/c/train", S, children=True, submitted=2)  # replaced by a new submission
    controller.listed.clear()
    fetch_tree(controller, root, again)  # type: ignore[arg-type]
    assert controller.listed == ["/a/c", "/a/c/train"]
    assert fetch_tree(controller, job("/a/lone", R)).children == {}  # type: ignore[arg-type]


def test_a_page_is_bounded_and_the_rest_is_counted() -> None:
    controller = ScriptedController(children=[job(f"/a/c/s{i}", R) for i in range(7)])
    tree = fetch_tree(controller, job("/a/c", R, children=True), page=5)  # type: ignore[arg-type]
    assert len(tree.jobs()) == 5 and tree.unlisted("/a/c") == 2


def test_failed_children_carry_their_first_failed_tasks_root_cause() -> None:
    controller = ScriptedController(children=[job("/a/c/train", F)], task_states=[J.TASK_STATE_FAILED],
                                    root_cause=["Traceback (most recent call last):", "ValueError: bad"])
    tree = fetch_tree(controller, job("/a/c", F, children=True))  # type: ignore[arg-type]
    (child,) = failed_children(controller, tree)  # type: ignore[arg-type]
    assert child.status.job_id == "/a/c/train" and child.root_cause[-1] == "ValueError: bad"
