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
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


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


def place(queue: Iterable[QueuedJob], free: int, holding: Mapping[str, int]) -> list[tuple[QueuedJob, list[int]]]:
    """The tasks to start now with ``free`` slots, as ``(job, task indices)`` in the order of ``queue``;
    ``holding`` counts the slots each job already holds (running or still stopping tasks)."""
    starts: list[tuple[QueuedJob, list[int]]] = []
    for job in queue:
        if free <= 0:
            break
        if not job.pending or job.hold:
            continue
        if job.gang:
            if holding.get(job.job_id, 0) or len(job.pending) > free:
                continue
            chosen = list(job.pending)
        else:
            chosen = job.pending[:free]
        free -= len(chosen)
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
