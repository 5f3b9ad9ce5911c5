"""``GET /fray/capacity``: what the cluster holds, what runs on it and what waits — read with Iris's own
RPCs (``ListWorkers``, ``GetAutoscalerStatus``, ``GetSchedulerState``, ``ListJobs``), so the embedded
controller, the twin and a named cluster answer alike — shaped into a small JSON for the sidebar's
capacity view (``contract.Capacity``).

Rules:

* A worker's capacity is what it reports (``WorkerMetadata``): its accelerators (a TPU's chips per
  VM, a GPU's count, named by variant), CPU (``cpu_count`` cores) and memory. What is used is what
  the tasks running on it asked for: ``GetSchedulerState``'s running tasks per (worker, job) times
  that job's per-task request. A request is read with ``GetJobStatus`` (a genuine Iris leaves it out
  of ``ListJobs``), ``READERS`` at a time, at most ``MAX_REQUEST_READS`` per answer, and kept
  ``REQUEST_MAX_AGE_S`` (``REQUESTS``); the tasks of a job not read yet count as running but use
  nothing, and ``note`` says how many jobs that is. Free is capacity less used, never below 0.
* Tasks running on a worker ``ListWorkers`` does not list (the embedded controller runs every task
  on its own machine and names none) are one more row, "not listed", with what they use and no size.
* A scale group adds up its workers (``scale_group``), and says its slices by state, Iris's
  availability status and reason, and its current demand. Workers of no known group are under "".
* Pending: the jobs with pending tasks (``GetSchedulerState``; without it, the pending jobs and their
  task counts), most tasks first, at most ``MAX_PENDING``, each with the controller's pending reason
  (``ListJobs`` of the pending jobs: the first 500).
* A status reads as the display vocabulary says it (``vocabulary.status_look``: Iris's word, its
  tone); ``healthy`` / ``unhealthy`` / ``not listed`` are a worker's.
* Any of the reads but ``ListWorkers`` and ``GetAutoscalerStatus`` that a controller cannot answer
  is left out, with the one line why in ``note`` (``server.usage.extra``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Final

import tornado.web

from fray_jupyter.client.cache import Expiring
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import JobNotFound
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.iris.states import MAX_LIST_JOBS_LIMIT
from fray_jupyter.server import contract
from fray_jupyter.server.handlers import FrayHandler
from fray_jupyter.server.usage import extra
from fray_jupyter.vocabulary import NOT_LISTED, byte_size, cores, status_look

C = controller_pb2.Controller
MAX_PENDING: Final[int] = 100
MAX_REQUEST_READS: Final[int] = 200
READERS: Final[int] = 8
REQUEST_MAX_AGE_S: Final[float] = 600.0
REQUESTS: Final[Expiring[tuple[str, str], job_pb2.ResourceSpecProto | None]] = Expiring(most=20_000)
"""(controller URL, job id) → the job's per-task request (None: the job is gone)."""


@dataclass
class Amounts:
    """Per resource name: how much there is and how much is used, and how each is worded."""

    total: dict[str, float] = field(default_factory=dict)
    used: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    words: dict[str, str] = field(default_factory=dict)
    """Resource name → "cpu", "memory" or "count" (how its numbers are said)."""

    def add(self, other: Amounts) -> None:
        """Add ``other``'s totals and uses to these."""
        for name, amount in other.total.items():
            self.total[name] = self.total.get(name, 0.0) + amount
        for name, amount in other.used.items():
            self.used[name] += amount
        self.words.update(other.words)

    def say(self, name: str, amount: float) -> str:
        """``amount`` of ``name`` in the display vocabulary's words."""
        kind = self.words.get(name, "count")
        return cores(int(amount)) if kind == "cpu" else byte_size(int(amount)) if kind == "memory" else \
            f"{amount:g}"

    def resources(self, *, sized: bool = True) -> list[contract.CapacityResource]:
        """Each resource's total, used and free, with their words (accelerators first)."""
        names = sorted(set(self.total) | set(self.used), key=lambda n: (self.words.get(n, "count") != "count", n))
        out = []
        for name in names:
            total, used = self.total.get(name, 0.0), self.used.get(name, 0.0)
            free = max(total - used, 0.0) if sized else 0.0
            out.append(contract.CapacityResource(
                name=name, total=total, used=used, free=free, total_text=self.say(name, total) if sized else "",
                used_text=self.say(name, used), free_text=self.say(name, free) if sized else ""))
        return out

    def line(self, *, sized: bool = True) -> str:
        """"H100: 2 used, 6 free · CPU: 4 cores used, 124 cores free · …" (no sizes: used only)."""
        return " · ".join(f"{r['name']}: {r['used_text']} used" + (f", {r['free_text']} free" if sized else "")
                          for r in self.resources(sized=sized))

    def load(self) -> float:
        """The largest share of any resource in use (0…1)."""
        return max((min(self.used.get(name, 0.0) / total, 1.0) for name, total in self.total.items() if total > 0),
                   default=0.0)


def accelerator(device: job_pb2.DeviceConfig) -> tuple[str, int] | None:
    """A device's accelerators as (name, count): ``("v5p-8 chips", 4)``, ``("H100", 8)``; None for CPU."""
    if device.HasField("tpu"):
        return f"{device.tpu.variant or 'TPU'} chips", device.tpu.count
    if device.HasField("gpu"):
        return device.gpu.variant or "GPU", device.gpu.count
    return None


def worker_amounts(worker: C.WorkerHealthStatus) -> Amounts:
    """What a worker holds, as it reports it."""
    metadata = worker.metadata
    amounts = Amounts(words={"CPU": "cpu", "memory": "memory"})
    held = accelerator(metadata.device)
    if held is not None:
        amounts.total[held[0]], amounts.words[held[0]] = float(held[1]), "count"
    amounts.total["CPU"] = float(metadata.cpu_count * 1000)
    amounts.total["memory"] = float(metadata.memory_bytes)
    return amounts


def charge(amounts: Amounts, request: job_pb2.ResourceSpecProto, tasks: int) -> None:
    """Add ``tasks`` tasks of ``request`` to what ``amounts`` uses."""
    amounts.used["CPU"] += request.cpu_millicores * tasks
    amounts.used["memory"] += request.memory_bytes * tasks
    amounts.words.setdefault("CPU", "cpu")
    amounts.words.setdefault("memory", "memory")
    held = accelerator(request.device)
    if held is not None:
        amounts.used[held[0]] += held[1] * tasks
        amounts.words.setdefault(held[0], "count")


def capacity_json(autoscaler: C.GetAutoscalerStatusResponse, listed: C.ListWorkersResponse,
                  scheduler: C.GetSchedulerStateResponse | None,
                  requests: Mapping[str, job_pb2.ResourceSpecProto],
                  pending: Mapping[str, job_pb2.JobStatus], notes: Iterable[str] = ()) -> contract.Capacity:
    """The answer of ``GET /fray/capacity`` from the controller's answers (module rules); ``requests``
    is each running job's per-task request, ``pending`` the pending jobs by id."""
    amounts = {worker.worker_id: worker_amounts(worker) for worker in listed.workers}
    tasks: dict[str, int] = defaultdict(int)
    unlisted: dict[str, Amounts] = {}
    for bucket in scheduler.running_buckets if scheduler is not None else ():
        target = amounts.get(bucket.worker_id) or unlisted.setdefault(bucket.worker_id, Amounts())
        tasks[bucket.worker_id] += bucket.count
        if bucket.job_id in requests:
            charge(target, requests[bucket.job_id], bucket.count)
    workers = []
    for worker in listed.workers:
        word, tone = status_look("healthy" if worker.healthy else "unhealthy")
        held = amounts[worker.worker_id]
        workers.append(contract.CapacityWorker(
            worker_id=worker.worker_id, group=worker.scale_group, status=word, tone=tone,
            tasks=tasks[worker.worker_id], load=held.load(), line=held.line(), message=worker.status_message))
    for worker_id, held in sorted(unlisted.items()):
        word, tone = status_look(NOT_LISTED)
        workers.append(contract.CapacityWorker(
            worker_id=worker_id or "(no worker named)", group="", status=word, tone=tone,
            tasks=tasks[worker_id], load=0.0, line=held.line(sized=False),
            message="running tasks the controller names no listed worker for"))
    return contract.Capacity(groups=groups_json(autoscaler, listed, amounts), workers=workers,
                             pending=pending_json(scheduler, pending),
                             running_tasks=scheduler.total_running if scheduler is not None else 0,
                             pending_tasks=scheduler.total_pending if scheduler is not None else 0,
                             note="; ".join(notes))


def groups_json(autoscaler: C.GetAutoscalerStatusResponse, listed: C.ListWorkersResponse,
                amounts: Mapping[str, Amounts]) -> list[contract.CapacityGroup]:
    """Each scale group, then workers of no known group under "" (module rules)."""
    members: dict[str, list[C.WorkerHealthStatus]] = defaultdict(list)
    known = {group.name for group in autoscaler.status.groups}
    for worker in listed.workers:
        members[worker.scale_group if worker.scale_group in known else ""].append(worker)
    out = []
    for group in [*autoscaler.status.groups, *([None] if members[""] else [])]:
        name = group.name if group is not None else ""
        total = Amounts()
        for worker in members[name]:
            total.add(amounts[worker.worker_id])
        status = group.availability_status if group is not None and group.availability_status else ""
        word, tone = status_look(status)
        slices = ", ".join(f"{count} {state}" for state, count in sorted(group.slice_state_counts.items()) if count) \
            if group is not None else ""
        device = (group.device_variant or group.device_type) if group is not None else ""
        out.append(contract.CapacityGroup(
            name=name, device=device, workers=len(members[name]),
            healthy=sum(worker.healthy for worker in members[name]), slices=slices, status=word, tone=tone,
            reason=group.availability_reason if group is not None else "",
            demand=group.current_demand if group is not None else 0, resources=total.resources()))
    return out


def pending_json(scheduler: C.GetSchedulerStateResponse | None,
                 pending: Mapping[str, job_pb2.JobStatus]) -> list[contract.CapacityPending]:
    """The jobs with pending tasks, most first, with their pending reasons."""
    counts: dict[str, int] = defaultdict(int)
    if scheduler is not None:
        for bucket in scheduler.pending_buckets:
            counts[bucket.job_id] += bucket.count
    else:
        counts.update((job_id, job.task_count) for job_id, job in pending.items())
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:MAX_PENDING]
    return [contract.CapacityPending(job_id=job_id, tasks=count,
                                     reason=pending[job_id].pending_reason if job_id in pending else "")
            for job_id, count in ranked]


def pending_jobs(client: FrayClient) -> dict[str, job_pb2.JobStatus]:
    """The pending jobs (any user, any depth), one page of 500, by id."""
    page = client.list(user=None, scope="all", state="pending", limit=MAX_LIST_JOBS_LIMIT)
    return {job.job_id: job for job in page.jobs}


def job_requests(client: FrayClient, job_ids: Iterable[str], notes: list[str]) -> dict[str, job_pb2.ResourceSpecProto]:
    """Each job's per-task request, read and kept as the module rules say."""
    wanted = sorted(set(job_ids))

    def read(job_id: str) -> job_pb2.ResourceSpecProto | None:
        def status() -> job_pb2.ResourceSpecProto | None:
            try:
                return client.status(job_id).resources
            except JobNotFound:
                return None
        return REQUESTS.get((client.url, job_id), REQUEST_MAX_AGE_S, status)
    with ThreadPoolExecutor(READERS) as pool:
        found = dict(zip(wanted[:MAX_REQUEST_READS], pool.map(read, wanted[:MAX_REQUEST_READS]), strict=True))
    if len(wanted) > MAX_REQUEST_READS:
        notes.append(f"used counts the requests of {MAX_REQUEST_READS} of {len(wanted)} running jobs")
    return {job_id: request for job_id, request in found.items() if request is not None}


def read_capacity(client: FrayClient) -> contract.Capacity:
    """``GET /fray/capacity``'s answer (module rules)."""
    autoscaler, listed = client.autoscaler_status(), client.workers()
    notes: list[str] = []
    scheduler = extra(client.scheduler_state, None, notes)
    running = [bucket.job_id for bucket in scheduler.running_buckets] if scheduler is not None else []
    no_requests: dict[str, job_pb2.ResourceSpecProto] = {}
    requests = extra(lambda: job_requests(client, running, notes), no_requests, notes)
    no_jobs: dict[str, job_pb2.JobStatus] = {}
    pending = extra(lambda: pending_jobs(client), no_jobs, notes)
    return capacity_json(autoscaler, listed, scheduler, requests, pending, notes)


class CapacityHandler(FrayHandler):
    """``GET /fray/capacity`` (module docstring)."""

    @tornado.web.authenticated
    async def get(self) -> None:
        self.reply(await self.call(read_capacity))
