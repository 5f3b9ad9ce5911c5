"""Capacity and placement: which pending tasks start now, and why the others wait.

The embedded controller counts local capacity in *task slots*: every running task process
(including one being stopped) holds one slot. The cores, RAM, disk and chips a job requests
describe the target cluster, so they are recorded but never compared with this machine.

Placement is in order with backfill: jobs are visited in the order the engine gives (Iris's: by
effective priority band, users in turns inside a band, each user's jobs oldest first; ``budget``);
a plain job starts as many of its pending tasks as there are free slots; a coscheduled job
(a gang) starts all of its pending tasks at once or none, and only when none of its tasks
still holds a slot. A gang that does not fit is skipped, so smaller jobs behind it can use
the free slots. A gang larger than the whole controller can never start: it is
UNSCHEDULABLE at submission (``unschedulable_reason``).

Child jobs and the lending rule: **a running task whose job has an unfinished job below it
(a child, a grandchild, …) lends its slot to the jobs below its job**, and only to them. A
coordinator waiting on its steps thus never starves them: with ``--slots 1`` a three-deep tree
(coordinator → step → sub-step) still runs, each level's slot passing to the level below while it
waits, and finishes. A queued task may take a free slot or a slot lent by any ancestor of its job
(the nearest ancestor's first); every running task still counts as holding one slot where it took
it (``SlotLedger``). Slots a tree's tasks lend are not free for other trees, so a tree never takes
more of the machine than it held; its coordinator processes keep running while they lend (they
are expected to wait), which is the only way tasks can outnumber slots. Why no tree deadlocks: a
lender's job has an unfinished descendant, which either runs (and finishes, giving the slot back)
or is queued with the lent slot free for it; the deepest unfinished job of a tree always has a
slot to run in.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from fray_jupyter.iris.states import job_depth, parent_job_id


def default_slots() -> int:
    """``max(8, 2 × CPU cores)``: room for an 8-VM TPU slice (v4-64, v5p-64) on a small laptop;
    oversubscribing cores is fine because most emulated tasks wait on I/O or sleep."""
    return max(8, 2 * (os.cpu_count() or 1))


@dataclass
class QueuedJob:
    """A job with tasks waiting to start: ``order`` (its submission sequence number),
    ``pending`` task indices, and ``hold``: why the target cluster can never place it ("" if it can)."""

    job_id: str
    order: int
    gang: bool
    pending: list[int] = field(default_factory=list)
    hold: str = ""


def _ancestors(job_id: str) -> Iterable[str]:
    """The job's parent, grandparent, … up to its root."""
    parent = parent_job_id(job_id)
    while parent:
        yield parent
        parent = parent_job_id(parent)


class SlotLedger:
    """Free task slots as the lending rule (module docstring) shares them: ``slots`` in all, held
    by ``holders``, one ``(job id, lends)`` per task holding a slot; ``lenders`` are the jobs with
    an unfinished job below them, whose tasks started from here lend their slots at once."""

    def __init__(self, slots: int, holders: Iterable[tuple[str, bool]], lenders: Collection[str] = ()) -> None:
        self.free = slots
        self.lent: Counter[str] = Counter()
        self.lenders = frozenset(lenders)
        for job_id, lends in sorted(holders, key=lambda holder: job_depth(holder[0])):  # lenders first
            self._hold(job_id, 1, lends=lends)

    @classmethod
    def of(cls, slots: int, running: Iterable[tuple[str, bool]], queued: Iterable[str]) -> SlotLedger:
        """The ledger now: ``running`` has one ``(job id, live)`` per task holding a slot (not live: a
        replaced job's task still stopping, which lends nothing); the lenders are the ancestors of
        every unfinished job, queued or with a live task."""
        holding = list(running)
        lenders: set[str] = set()
        for job_id in {*queued, *(job_id for job_id, live in holding if live)}:
            for ancestor in _ancestors(job_id):
                if ancestor in lenders:
                    break
                lenders.add(ancestor)
        return cls(slots, [(job_id, live and job_id in lenders) for job_id, live in holding], lenders)

    def available(self, job_id: str) -> int:
        """Slots a task of ``job_id`` may start in: the free ones and those its ancestors lend."""
        return max(self.free, 0) + sum(self.lent[ancestor] for ancestor in _ancestors(job_id))

    def take(self, job_id: str, count: int) -> None:
        """``count`` tasks of ``job_id`` start (lending their slots if the job is a lender)."""
        self._hold(job_id, count, lends=job_id in self.lenders)

    def _hold(self, job_id: str, count: int, *, lends: bool) -> None:
        """``count`` slots held by tasks of ``job_id``: from its nearest ancestors' lent slots
        first, then the free ones (below zero only for holders already running past their slots)."""
        if lends:
            self.lent[job_id] += count
        for ancestor in _ancestors(job_id):
            used = min(count, self.lent[ancestor])
            self.lent[ancestor] -= used
            count -= used
        self.free -= count

    @property
    def exhausted(self) -> bool:
        """No slot is free or lent: nothing can start."""
        return self.free <= 0 and not any(self.lent.values())


def place(queue: Iterable[QueuedJob], slots: SlotLedger,
          holding: Mapping[str, int]) -> list[tuple[QueuedJob, list[int]]]:
    """The tasks to start now in ``slots``, as ``(job, task indices)`` in the order of ``queue``;
    ``holding`` counts the slots each job already holds (running or still stopping tasks)."""
    starts: list[tuple[QueuedJob, list[int]]] = []
    for job in queue:
        if slots.exhausted:
            break
        free = slots.available(job.job_id)
        if not job.pending or job.hold or free <= 0:
            continue
        if job.gang:
            if holding.get(job.job_id, 0) or len(job.pending) > free:
                continue
            chosen = list(job.pending)
        else:
            chosen = job.pending[:free]
        slots.take(job.job_id, len(chosen))
        starts.append((job, chosen))
    return starts


def unschedulable_reason(replicas: int, gang: bool, slots: int) -> str | None:
    """Why a job can never start on a controller with ``slots`` slots, or None if it can."""
    if gang and replicas > slots:
        return (
            f"coscheduled job needs {replicas} task slots at once but this controller has {slots}; "
            f"restart the controller with --slots {replicas} (or more), or request fewer replicas"
        )
    return None


def pending_reason(job: QueuedJob, free: int, slots: int, queued_jobs: int, holding: int) -> str:
    """A one-line explanation for a job that is still waiting to start tasks (``holding``: the
    slots its own tasks still hold); "" when the free slots already fit it (the next pass starts it)."""
    wanted = len(job.pending)
    if job.gang and holding:
        return f"waiting for {holding} task(s) of the previous gang attempt to stop before restarting all together"
    if free >= (wanted if job.gang else 1):
        return ""
    need = f"{wanted} free task slots at once (coscheduled)" if job.gang else "a free task slot"
    return (
        f"waiting for {need}: {free} of {slots} slots free, {queued_jobs} job(s) queued; "
        "start the controller with more --slots to run more tasks at once"
    )
