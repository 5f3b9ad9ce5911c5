"""A job and the jobs below it (a coordinator and its steps, theirs, …) as a controller lists them:
``ListJobs`` scope CHILDREN, one parent at a time (``client.tree`` fetches it).

Rules:

* Each parent's children are those the controller listed, oldest first; ``totals`` is how many it
  said there are (``total_count``), so a parent may have more than are listed (``unlisted``).
* ``walk`` visits the jobs below the root depth first, each parent before its children, in
  listing order, with its depth (a child of the root is at depth 1).
* The tree is *settled* when the root and every job listed below it has finished: nothing shown
  can change any more (a finished job cannot gain a child).
* A job below the root *failed* when it ended FAILED, WORKER_FAILED or UNSCHEDULABLE; KILLED is not
  a failure of its own (a cancel, or its parent ending first).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Final

from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import is_job_finished

J = job_pb2

FAILED_STATES: Final[frozenset[int]] = frozenset(
    {J.JOB_STATE_FAILED, J.JOB_STATE_WORKER_FAILED, J.JOB_STATE_UNSCHEDULABLE})
"""Job end states that are a job's own failure (see the module rules)."""


@dataclass(frozen=True)
class JobTree:
    """``root`` and the jobs listed below it: ``children`` maps a parent's id to its listed
    children, ``totals`` to how many children the controller said it has."""

    root: job_pb2.JobStatus
    children: Mapping[str, tuple[job_pb2.JobStatus, ...]] = field(default_factory=dict)
    totals: Mapping[str, int] = field(default_factory=dict)

    def below(self, job_id: str) -> tuple[job_pb2.JobStatus, ...]:
        """The listed children of ``job_id`` (none when it has none, or they were not listed)."""
        return self.children.get(job_id, ())

    def unlisted(self, job_id: str) -> int:
        """How many children of ``job_id`` the controller counted but did not list."""
        return max(0, self.totals.get(job_id, 0) - len(self.below(job_id)))

    def walk(self) -> Iterator[tuple[int, job_pb2.JobStatus]]:
        """(depth, job) for every listed job below the root (see the module rules)."""
        stack = [(1, job) for job in reversed(self.below(self.root.job_id))]
        while stack:
            depth, job = stack.pop()
            yield depth, job
            stack += [(depth + 1, child) for child in reversed(self.below(job.job_id))]

    def jobs(self) -> list[job_pb2.JobStatus]:
        """Every listed job below the root, in ``walk`` order."""
        return [job for _, job in self.walk()]

    def find(self, job_id: str) -> job_pb2.JobStatus | None:
        """The root or a listed job below it by id, else None."""
        return self._by_id.get(job_id)

    @cached_property
    def _by_id(self) -> dict[str, job_pb2.JobStatus]:
        """The root and every listed job by id, built at the first ``find`` (a refresh asks once per
        parent it reuses, so a walk per call would make it quadratic in the tree)."""
        index = {self.root.job_id: self.root}
        for job in self.jobs():
            index.setdefault(job.job_id, job)  # the first in walk order, as a search would find it
        return index

    @property
    def settled(self) -> bool:
        """Whether the root and every listed job below it has finished."""
        return is_job_finished(self.root.state) and all(is_job_finished(job.state) for job in self.jobs())

    def settled_below(self, job_id: str) -> bool:
        """Whether every listed job below ``job_id`` has finished and all its children are listed."""
        todo = [job_id]
        while todo:
            parent = todo.pop()
            if self.unlisted(parent):
                return False
            for child in self.below(parent):
                if not is_job_finished(child.state):
                    return False
                todo.append(child.job_id)
        return True

    def failed(self) -> list[job_pb2.JobStatus]:
        """The listed jobs below the root that failed of their own (see the module rules), in
        ``walk`` order."""
        return [job for job in self.jobs() if job.state in FAILED_STATES]


@dataclass(frozen=True)
class FailedChild:
    """A job below a root that failed of its own, and the likely root-cause lines of its first
    failed task (Iris's ``root_cause_highlights``; empty when the controller gave none)."""

    status: job_pb2.JobStatus
    root_cause: tuple[str, ...]
