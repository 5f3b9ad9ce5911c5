"""``iris.tree.JobTree``: the jobs below a job as listed — walked depth first, counted, settled,
and which of them failed of their own."""

from __future__ import annotations

from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.tree import JobTree

R, S, F, K = J.JOB_STATE_RUNNING, J.JOB_STATE_SUCCEEDED, J.JOB_STATE_FAILED, J.JOB_STATE_KILLED


def job(job_id: str, state: int = R) -> J.JobStatus:
    return J.JobStatus(job_id=job_id, state=state)  # type: ignore[arg-type]


def tree(root_state: int = R, **states: int) -> JobTree:
    root = job("/a/c", root_state)
    children = {"/a/c": (job("/a/c/train", states.get("train", R)), job("/a/c/eval", states.get("eval", R))),
                "/a/c/train": (job("/a/c/train/sub", states.get("sub", R)),)}
    return JobTree(root, children, {"/a/c": 3, "/a/c/train": 1})


def test_walk_is_depth_first_parent_before_children_with_depths() -> None:
    shown = [(depth, status.job_id) for depth, status in tree().walk()]
    assert shown == [(1, "/a/c/train"), (2, "/a/c/train/sub"), (1, "/a/c/eval")]
    assert tree().unlisted("/a/c") == 1 and tree().unlisted("/a/c/train") == 0 and tree().below("/a/c/eval") == ()
    assert tree().find("/a/c/train/sub") == job("/a/c/train/sub") and tree().find("/a/c/x") is None
    once = tree()
    assert [once.find(job_id) for job_id in ("/a/c", "/a/c/eval", "/a/c/x")] == [job("/a/c"), job("/a/c/eval"), None]


def test_settled_when_the_root_and_every_listed_job_ended() -> None:
    assert not tree(S, train=S, eval=S).settled  # sub still runs
    assert tree(F, train=F, eval=K, sub=F).settled
    assert not tree(R, train=S, eval=S, sub=S).settled
    assert tree(F, train=S, sub=S).settled_below("/a/c/train")
    assert not tree(F, train=S, eval=S, sub=S).settled_below("/a/c")  # one child is not listed


def test_failed_names_the_jobs_that_failed_of_their_own_not_the_killed() -> None:
    failed = tree(F, train=F, eval=K, sub=J.JOB_STATE_WORKER_FAILED).failed()
    assert [status.job_id for status in failed] == ["/a/c/train", "/a/c/train/sub"]
