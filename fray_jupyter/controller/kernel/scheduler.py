"""Capacity and placement: which pending tasks start now, and why the others wait.

The embedded controller counts local capacity in *task slots*: every running task process
(including one being stopped) holds one slot, except a task asking for no CPU (``cpu_millicores``
0), which holds none: Iris never counts such a task against a worker's capacity, so any number of
them run at once, as on Iris. What keeps the machine safe instead is ``max_tasks`` (``--max-tasks``,
``$FRAY_CONTROLLER_MAX_TASKS``; ``default_max_tasks``): at most that many task processes run at once,
slots or not; a queued task waits for room under it as for a slot. The cores, RAM, disk and chips a
job requests describe the target cluster, so they are recorded but never compared with this machine.

Placement is in order with backfill: jobs are visited in the order the engine gives (Iris's: by
effective priority band, users in turns inside a band, each user's jobs oldest first; ``engine.budgets``);
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
from typing import Final

from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import job_depth, parent_job_id


def default_slots() -> int:
    """``max(8, 2 × CPU cores)``: room for an 8-VM TPU slice (v4-64, v5p-64) on a small laptop;
    oversubscribing cores is fine because most emulated tasks wait on I/O or sleep."""
    return max(8, 2 * (os.cpu_count() or 1))


def asks_no_cpu(resources: job_pb2.ResourceSpecProto) -> bool:
    """Whether a job's tasks ask for no CPU (``cpu_millicores`` 0): they hold no slot (the module rule)."""
    return resources.cpu_millicores == 0


MAX_TASKS_ENV: Final[str] = "FRAY_CONTROLLER_MAX_TASKS"
"""The bound on concurrent task processes when ``--max-tasks`` is not given."""
DEFAULT_MAX_TASKS: Final[int] = 256
"""Twice the 128 CPU-less tasks Iris's own tests run at once; a few hundred idle processes fit a laptop."""


def default_max_tasks(slots: int) -> int:
    """``max(DEFAULT_MAX_TASKS, slots)``: the bound on concurrent task processes, never below the slots."""
    return max(DEFAULT_MAX_TASKS, slots)


def max_tasks_setting(option: int | None, environ: Mapping[str, str], slots: int) -> int:
    """The bound on concurrent task processes: ``--max-tasks``, else ``$FRAY_CONTROLLER_MAX_TASKS``, else
    ``default_max_tasks``; ``ValueError`` (one line naming the value) unless a whole number >= ``slots``."""
    text = str(option) if option is not None else environ.get(MAX_TASKS_ENV, "").strip()
    if not text:
        return default_max_tasks(slots)
    where = "--max-tasks" if option is not None else f"${MAX_TASKS_ENV}"
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{where} must be a whole number of task processes, got {text!r}") from None
    if value < slots:
        raise ValueError(f"{where} must be at least the task slots ({slots}: --slots), got {value}")
    return value


@dataclass
class QueuedJob:
    """A job with tasks waiting to start: ``order`` (its submission sequence number),
    ``pending`` task indices, ``hold``: why the target cluster can never place it ("" if it can), and
    ``slotless``: its tasks ask for no CPU, so they take no slot (only room under ``max_tasks``)."""

    job_id: str
    order: int
    gang: bool
    pending: list[int] = field(default_factory=list)
    hold: str = ""
    slotless: bool = False


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


def place(queue: Iterable[QueuedJob], slots: SlotLedger, holding: Mapping[str, int],
          room: int | None = None) -> list[tuple[QueuedJob, list[int]]]:
    """The tasks to start now, as ``(job, task indices)`` in the order of ``queue``: each in a slot
    of ``slots`` (a slotless job's in none) and all within ``room`` (how many more task processes
    ``max_tasks`` lets run; None: no bound); ``holding`` counts the tasks each job still runs (or is stopping)."""
    starts: list[tuple[QueuedJob, list[int]]] = []
    queue = list(queue)
    room = sum(len(job.pending) for job in queue) if room is None else room
    for job in queue:
        if room <= 0:
            break
        if not job.pending or job.hold:
            continue
        free = room if job.slotless else min(slots.available(job.job_id), room)
        if free <= 0:
            continue
        if job.gang:
            if holding.get(job.job_id, 0) or len(job.pending) > free:
                continue
            chosen = list(job.pending)
        else:
            chosen = job.pending[:free]
        if not job.slotless:
            slots.take(job.job_id, len(chosen))
        room -= len(chosen)
        starts.append((job, chosen))
    return starts


def unschedulable_reason(replicas: int, gang: bool, slots: int, *, slotless: bool = False) -> str | None:
    """Why a job can never start on a controller with ``slots`` slots (for a ``slotless`` job: that
    runs at most ``slots`` task processes, ``max_tasks``), or None if it can."""
    if gang and slotless and replicas > slots:
        return (f"coscheduled job needs {replicas} task processes at once but this controller runs at most {slots}; "
                f"restart the controller with --max-tasks {replicas} (or more), or request fewer replicas")
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


def room_reason(job: QueuedJob, running: int, max_tasks: int) -> str:
    """Why a job waits for room under ``max_tasks`` with ``running`` task processes running; "" when
    there is room for it (a gang: for all its pending tasks)."""
    wanted = len(job.pending) if job.gang else 1
    if max_tasks - running >= wanted:
        return ""
    return (f"waiting for room to start {wanted} task process(es): {running} of at most {max_tasks} running; "
            "start the controller with a larger --max-tasks to run more tasks at once")
