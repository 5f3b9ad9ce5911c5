"""Reading placement back from a controller — a genuine Iris local cluster (the twin) or the embedded
controller — through Iris's own RPCs: where each task ran (ListTasks → worker id → ListWorkers →
``tpu-name`` / ``tpu-worker-id``), and a job's verdict decided from Iris's own pending reason.

Verdicts: ``runs`` (a task started: RUNNING or later, or the job ended without being refused),
``pending`` (still PENDING and Iris's autoscaler says it can never help: its reason is one of
``FOREVER_REASONS``, and the scheduler found no workers to hold it), ``refused`` (LaunchJob said no).
``pending`` is never decided from a clock: a job whose reason is transient (a slice scaling up, a
group at max_slices, warm workers busy) is waited for.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from fray_jupyter.client.client import FrayClient
from fray_jupyter.iris.proto import controller_pb2, job_pb2

C = controller_pb2.Controller
J = job_pb2
FOREVER_REASONS: Final[tuple[str, ...]] = ("no_matching_group:", "coschedule_mismatch:", "insufficient_resources:")
"""Routing reasons after ``Unsatisfied autoscaler demand: `` that no scale-up or finished job changes
(Iris's ``routing.py``); ``no_capacity:`` and ``tier_blocked:`` are transient."""
RESCHEDULE_S: Final[float] = 11.0
"""How long a job that says it pends for ever is watched once the rest of its batch is done: just
over one of Iris's scheduling passes (``scheduler_min_interval``, 10 s), so capacity the others held
has been offered to it."""
STARTED: Final[frozenset[int]] = frozenset({J.JOB_STATE_RUNNING, J.JOB_STATE_SUCCEEDED, J.JOB_STATE_FAILED,
                                           J.JOB_STATE_KILLED, J.JOB_STATE_WORKER_FAILED})


def forever_reason(pending_reason: str) -> str | None:
    """The autoscaler's never-placeable reason inside a job's pending reason, or None. The scheduler's part
    must agree that no existing worker set can hold the job ("No workers match constraints", "largest
    group has …"): "only k of n have capacity" means busy workers that may free up, so it is transient."""
    marker = "Unsatisfied autoscaler demand: "
    if marker not in pending_reason or "have capacity" in pending_reason:
        return None
    reason = pending_reason.split(marker, 1)[1].strip()
    return reason if reason.startswith(FOREVER_REASONS) else None


@dataclass(frozen=True)
class Place:
    """Where one task ran: its worker, the worker's ``tpu-name`` / ``tpu-worker-id`` ("" / -1 off TPU),
    and its ``leafgroup`` attribute ("" when unset)."""

    worker_id: str
    tpu_name: str
    tpu_worker_id: int
    leafgroup: str


def _attribute(worker: C.WorkerHealthStatus, key: str) -> str:
    if key not in worker.metadata.attributes:
        return ""
    value = worker.metadata.attributes[key]
    kind = value.WhichOneof("value")
    return "" if kind is None else str(getattr(value, kind))


def workers(client: FrayClient) -> dict[str, C.WorkerHealthStatus]:
    """Every worker the controller lists, by id."""
    return {worker.worker_id: worker for worker in client.workers().workers}


def task_index(task_id: str) -> int:
    return int(task_id.rsplit("/", 1)[1])


def places(client: FrayClient, job_id: str) -> dict[int, Place]:
    """Task index → where it ran (its last attempt's worker), for tasks that were given a worker."""
    known = workers(client)
    result: dict[int, Place] = {}
    for task in client.tasks(job_id):
        worker_id = task.worker_id or (task.attempts[-1].worker_id if task.attempts else "")
        if not worker_id:
            continue
        worker = known.get(worker_id)
        tpu_name = _attribute(worker, "tpu-name") if worker is not None else ""
        worker_index = _attribute(worker, "tpu-worker-id") if worker is not None else ""
        result[task_index(task.task_id)] = Place(worker_id, tpu_name, int(worker_index) if worker_index else -1,
                                                 _attribute(worker, "leafgroup") if worker is not None else "")
    return result


def partition(placed: dict[int, Place], key: Callable[[Place], str] = lambda p: p.tpu_name) -> tuple[tuple[int, ...], ...]:
    """Task indices grouped by ``key`` (default ``tpu-name``; tasks off TPU are each alone), sorted."""
    groups: dict[str, list[int]] = {}
    for index, place in sorted(placed.items()):
        groups.setdefault(key(place) or f"alone-{index}", []).append(index)
    return tuple(sorted(tuple(g) for g in groups.values()))


@dataclass(frozen=True)
class Outcome:
    """A job's verdict, its final (or current) state and Iris's pending reason."""

    verdict: str
    state: int
    reason: str


def outcome(status: J.JobStatus) -> Outcome | None:
    """The verdict ``status`` already shows, or None while it is still undecided."""
    if status.state in STARTED:
        return Outcome("runs", status.state, "")
    if status.state == J.JOB_STATE_PENDING:
        reason = forever_reason(status.pending_reason)
        if reason is not None:
            return Outcome("pending", status.state, status.pending_reason)
    return None


def settle(client: FrayClient, job_ids: Iterable[str], *, timeout: float = 180.0, finished: bool = True,
           on_decided: Callable[[str, Outcome], None] = lambda job_id, found: None) -> dict[str, Outcome]:
    """Wait for every job's verdict (and, with ``finished``, for every job that runs to end). A job still
    undecided after ``timeout`` is reported as ``undecided`` with its state and reason: a test failure,
    never a verdict. ``on_decided`` is called with each job's verdict as soon as it is decided, e.g. to
    read where a job ran before the twin reclaims its idle slice.

    A job pending with a reason Iris gives for ever is decided so only once no other job of the batch
    has been undecided or running for ``RESCHEDULE_S``: a gang that waits for workers another job of
    the batch holds gets the same autoscaler reason (``coschedule_mismatch``: a new slice would not
    fit it) until they are free and Iris has scheduled again, and then runs (CI saw a loaded machine
    order the corpus so)."""
    pending = list(job_ids)
    decided: dict[str, Outcome] = {}
    forever: set[str] = set()  # says it pends for ever now
    contended: set[str] = set()  # said so while another job of the batch was undecided or running
    free_since: float | None = None  # since when no job of the batch is undecided or running
    deadline = time.monotonic() + timeout
    delay = 0.05
    while pending:
        busy = set(pending) - forever
        free_since = None if busy else free_since if free_since is not None else time.monotonic()
        for job_id in list(pending):
            status = client.status(job_id)
            found = outcome(status)
            says_forever = found is not None and found.verdict == "pending"
            (forever.add if says_forever else forever.discard)(job_id)
            if says_forever and busy - {job_id}:
                contended.add(job_id)
            held = says_forever and job_id in contended and (
                free_since is None or time.monotonic() - free_since < RESCHEDULE_S)
            if held or found is None or (finished and found.verdict == "runs" and status.state == J.JOB_STATE_RUNNING):
                if time.monotonic() > deadline:
                    decided[job_id] = Outcome("undecided", status.state, status.pending_reason)
                    pending.remove(job_id)
                continue
            decided[job_id] = Outcome(found.verdict, status.state, found.reason)
            pending.remove(job_id)
            on_decided(job_id, decided[job_id])
        if pending:
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)
    return decided
