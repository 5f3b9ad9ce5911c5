"""Reading a job's tree from any controller (``iris.tree.JobTree``), as Iris's own listing gives it:
``ListJobs`` scope CHILDREN, never rebuilt from ids.

Rules:

* ``fetch_tree`` asks one CHILDREN page (the oldest ``CHILDREN_PAGE`` children) of each parent the
  controller says has children (``has_children``), breadth first, and stops listing once
  ``MAX_TREE_JOBS`` jobs are listed. A finished parent whose subtree was already settled in the
  ``previous`` tree (and is the same submission) is not asked again: nothing below it can change.
  So a refresh of a coordinator with 50 running steps is one call, and of a finished tree none.
* ``failed_children`` explains a tree's failures: for each job below the root that failed of its own
  (``JobTree.failed``; at most ``MAX_EXPLAINED``), its error and, for its first failed task, the
  controller's likely root-cause lines (``client.diagnostics.root_causes``).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Final

from fray_jupyter.client.diagnostics import root_causes
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import is_job_finished
from fray_jupyter.iris.tree import FailedChild, JobTree

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient

CHILDREN_PAGE: Final[int] = 100
MAX_TREE_JOBS: Final[int] = 300
MAX_EXPLAINED: Final[int] = 3


def _reusable(previous: JobTree | None, parent: job_pb2.JobStatus) -> bool:
    """Whether ``previous`` holds ``parent``'s settled subtree, of this same submission."""
    if previous is None or not is_job_finished(parent.state):
        return False
    old = previous.find(parent.job_id)
    return (old is not None and old.submitted_at.epoch_ms == parent.submitted_at.epoch_ms
            and parent.job_id in previous.totals and previous.settled_below(parent.job_id))


def fetch_tree(client: FrayClient, root: job_pb2.JobStatus, previous: JobTree | None = None, *,
               page: int = CHILDREN_PAGE, most: int = MAX_TREE_JOBS) -> JobTree:
    """``root``'s tree as the controller lists it now (see the module rules)."""
    children: dict[str, tuple[job_pb2.JobStatus, ...]] = {}
    totals: dict[str, int] = {}
    queue = deque([root] if root.has_children else [])
    listed = 0
    while queue and listed < most:
        parent = queue.popleft()
        if _reusable(previous, parent):
            assert previous is not None
            kept = deque([parent.job_id])
            while kept:
                job_id = kept.popleft()
                children[job_id], totals[job_id] = previous.below(job_id), previous.totals.get(job_id, 0)
                listed += len(children[job_id])
                kept.extend(child.job_id for child in children[job_id] if child.job_id in previous.totals)
            continue
        answer = client.list(scope="children", parent=parent.job_id, sort="date", descending=False,
                             limit=min(page, most - listed))
        children[parent.job_id], totals[parent.job_id] = answer.jobs, answer.total
        listed += len(answer.jobs)
        queue.extend(job for job in answer.jobs if job.has_children)
    return JobTree(root, children, totals)


def failed_children(client: FrayClient, tree: JobTree, most: int = MAX_EXPLAINED) -> list[FailedChild]:
    """The first ``most`` failed jobs below the root, each with its root cause (see the module rules)."""
    found = []
    for job in tree.failed()[:most]:
        causes = root_causes(client, client.tasks(job.job_id), most=1)
        found.append(FailedChild(job, next(iter(causes.values()), ())))
    return found
