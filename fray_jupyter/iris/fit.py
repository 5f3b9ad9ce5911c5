"""Will a job fit? Iris's placement rules (``iris.placement``) applied to the shape a controller
reports: ``fit_from`` is a pure function of the request and the controller's two capacity answers
(``GetAutoscalerStatus``, ``ListWorkers``), plus the cluster profile when the controller reports one.
``client.fit`` asks a controller for them; the embedded controller answers from its own profile.

Verdicts:

* ``never``: LaunchJob would refuse it (no group with that device / region / zone / capacity type,
  per-VM resources too small), or the autoscaler can never serve it (a gang no group's slice size
  equals) and no idle workers share a ``group_by`` value enough — with Iris's reason;
* ``now``: idle healthy workers can take every task (a gang: enough of them on one ``group_by`` value);
* ``after-scale-up``: a group can host it and is below its max (or will free a slice: the reason says).

Without a profile only the wire speaks, and it leaves out, for a group with no live worker, its
zone, capacity type, per-VM cpu/ram/disk and (for a non-TPU group with no slice) its VMs per slice.
The rule for a fact the wire does not carry (no profile, no live worker, no slice):

* it takes the value most favourable to the job (the zone the job requires, the capacity type it
  requires, unlimited cpu/ram/disk, VMs per slice = its gang size), so a missing fact never makes a
  group refuse the job: ``never`` always rests on reported facts and is certain;
* ``now`` rests on live idle workers, whose facts are reported: certain;
* ``after-scale-up`` is certain when at least one candidate group has every fact the job depends on
  (zone if it requires one, capacity type if it requires one, per-VM sizes if it asks for any, VMs
  per slice if it is a gang); otherwise ``Fit.unknown`` names the missing facts, ``Fit.confident``
  is False, and the reason ends "(unknown: this controller does not report <group>'s <fact>, …)".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from fray_jupyter.cluster.profile import ClusterProfile, ScaleGroup
from fray_jupyter.iris.placement import (
    LaunchJobRequest,
    effective_rules,
    gang_error,
    launch_refusal,
    resource_fit,
    route,
)
from fray_jupyter.iris.placement_workers import Worker, largest_gang, never_reason
from fray_jupyter.iris.proto import controller_pb2, job_pb2, vm_pb2
from fray_jupyter.resources.tables import TPU_TOPOLOGY_BY_NAME

C = controller_pb2.Controller
Verdict = Literal["now", "after-scale-up", "never"]
ACCEPTING: Final[frozenset[str]] = frozenset({"available", "cooldown", "requesting", ""})


class PlanLike(Protocol):
    """Anything with the ``LaunchJobRequest`` it would send (a ``Plan``)."""

    @property
    def request(self) -> LaunchJobRequest: ...


@dataclass(frozen=True)
class Candidate:
    """A group that can host the job: where it is, what capacity it sells, slices ready of at most
    ``max_slices`` (None: the controller does not say), and its availability."""

    name: str
    region: str
    capacity_type: str
    ready: int
    max_slices: int | None
    availability: str

    def __str__(self) -> str:
        most = "?" if self.max_slices is None else str(self.max_slices)
        where = self.region or "no region"
        return f"{self.name} ({where}, {self.capacity_type or 'capacity type unknown'}, {self.ready}/{most} slices ready)"


@dataclass(frozen=True)
class Fit:
    """The verdict, Iris's reason (or what will happen), and the candidate groups, best first."""

    verdict: Verdict
    reason: str
    candidates: tuple[Candidate, ...] = ()
    unknown: tuple[str, ...] = ()
    """The facts the verdict rests on that the controller does not report (``"tpu_v5p_8's zone"``):
    empty for a confident verdict, else the verdict is uncertain (only ever ``after-scale-up``)."""

    @property
    def confident(self) -> bool:
        """Whether the verdict rests only on facts the controller reported (or the profile gave)."""
        return not self.unknown

    @property
    def line(self) -> str:
        """``fit: <verdict> — <reason>``: one line for a terminal or a widget."""
        return f"fit: {self.verdict} — {self.reason}"


def _value(proto: job_pb2.AttributeValue) -> str | int | float:
    if proto.HasField("int_value"):
        return proto.int_value
    if proto.HasField("float_value"):
        return proto.float_value
    return proto.string_value.strip().lower()


def _capacity(preemptible: str | float | None) -> str:
    return {"true": "preemptible", "false": "on_demand"}.get(str(preemptible), "")


@dataclass(frozen=True)
class Wants:
    """What a job needs of a group's facts the wire may not carry: the zone it requires (None: any),
    the capacity type it requires (None: any), whether it asks for per-VM cpu/ram/disk, and its gang
    size (0: not coscheduled)."""

    zone: str | None
    capacity_type: str | None
    sized: bool
    gang: int

    @classmethod
    def of(cls, request: LaunchJobRequest) -> Wants:
        hard = [r for r in effective_rules(request) if not r.soft]
        zone = next((str(r.values[0]) for r in hard if r.key == "zone" and r.op in ("EQ", "IN") and r.values), None)
        capacity = next(("on_demand" if r.values == ("false",) else "preemptible" for r in hard
                         if r.key == "preemptible" and r.op == "EQ"), None)
        res = request.resources
        gang = request.replicas if request.HasField("coscheduling") else 0
        return cls(zone, capacity, bool(res.cpu_millicores or res.memory_bytes or res.disk_bytes), gang)


def _shape(status: vm_pb2.ScaleGroupStatus, live: list[C.WorkerHealthStatus], known: ScaleGroup | None,
           wants: Wants) -> tuple[ScaleGroup, tuple[str, ...]]:
    """A group as the wire (plus ``known``, a profile's entry) describes it, and the facts the job
    depends on that neither tells (``UNKNOWN_FACTS``' names). An unknown fact takes the value most
    favourable to the job, so it can never make the group refuse the job."""
    attrs = {k: _value(v) for k, v in live[0].metadata.attributes.items()} if live else {}
    topology = TPU_TOPOLOGY_BY_NAME.get(status.device_variant)
    meta = live[0].metadata if live else None
    chips = (meta.device.tpu.count or meta.device.gpu.count) if meta is not None else 0
    vm_zones = [vm.zone for piece in status.slices for vm in piece.vms if vm.zone]
    slice_vms = max((len(piece.vms) for piece in status.slices), default=0)
    unknown: list[str] = []
    if known is not None:
        zone, capacity = known.zone, known.capacity_type
        num_vms, cpu, memory, disk = known.num_vms, known.cpu_millicores, known.memory_bytes, known.disk_bytes
    else:
        if live:
            zone = str(attrs["zone"]) if "zone" in attrs else None
        elif vm_zones:
            zone = vm_zones[0]
        else:
            zone = wants.zone
            unknown += ["zone"] if wants.zone is not None else []
        capacity = _capacity(attrs.get("preemptible"))
        if not capacity:
            capacity = wants.capacity_type or "preemptible"
            unknown += ["capacity type"] if wants.capacity_type is not None else []
        if meta is not None:
            cpu, memory, disk = meta.cpu_count * 1000, meta.memory_bytes, meta.disk_bytes
        else:
            cpu = memory = disk = 0  # 0: unlimited, as in Iris
            unknown += ["per-VM cpu/ram/disk"] if wants.sized else []
        if topology is not None:
            num_vms = topology.vm_count
        elif slice_vms:
            num_vms = slice_vms
        else:
            num_vms = wants.gang or 1
            unknown += ["VMs per slice"] if wants.gang else []
    group = ScaleGroup(
        name=status.name, num_vms=num_vms,
        max_slices=known.max_slices if known else max(1, sum(status.slice_state_counts.values()))
        if status.availability_status == "at_max_slices" else 1 << 20,
        buffer_slices=0, priority=known.priority if known else 100,
        cpu_millicores=cpu, memory_bytes=memory, disk_bytes=disk,
        device_type=status.device_type or "cpu", device_variant=status.device_variant,
        device_count=known.device_count if known else chips or (topology.chips_per_vm if topology else 0),
        capacity_type=capacity, region=status.region or (known.region if known else None), zone=zone,
    )
    return group, tuple(unknown)


def _idle_workers(workers: Iterable[C.WorkerHealthStatus], groups: dict[str, ScaleGroup]) -> list[Worker]:
    idle = []
    for w in workers:
        group = groups.get(w.scale_group)
        if w.healthy and not w.running_job_ids and group is not None:
            attrs = {k: _value(v) for k, v in w.metadata.attributes.items()}
            idle.append(Worker(group, w.metadata.tpu_name or w.worker_id, 0, attrs))
    return idle


def fit_from(plan: PlanLike, autoscaler: C.GetAutoscalerStatusResponse, workers: C.ListWorkersResponse,
             profile: ClusterProfile | None = None) -> Fit:
    """The verdict for ``plan`` on the cluster the two responses describe (see the module docstring)."""
    request = plan.request
    if error := gang_error(request):
        return Fit("never", error)
    wants = Wants.of(request)
    by_group: dict[str, list[C.WorkerHealthStatus]] = {}
    for worker in workers.workers:
        by_group.setdefault(worker.scale_group, []).append(worker)
    statuses = {g.name: g for g in autoscaler.status.groups}
    shaped = {s.name: _shape(s, by_group.get(s.name, []), profile.group(s.name) if profile else None, wants)
              for s in autoscaler.status.groups}
    groups = [group for group, _ in shaped.values()]
    unknowns = {name: missing for name, (_, missing) in shaped.items()}
    shape = ClusterProfile(profile.name if profile else "cluster", tuple(groups))
    if not groups:
        return Fit("never", "the controller reports no scale groups (no autoscaler)")
    if refusal := launch_refusal(request, shape):
        return Fit("never", refusal.message)
    idle = _idle_workers(workers.workers, {g.name: g for g in groups})
    routed = route(request, shape)
    told = {name for name, live in by_group.items() if live} | {g.name for g in (profile.groups if profile else ())}

    def candidate(group: ScaleGroup) -> Candidate:
        status = statuses[group.name]
        capacity = group.capacity_type if group.name in told else ""
        known = profile.group(group.name) if profile else None
        return Candidate(group.name, group.region or "", capacity, status.slice_state_counts["ready"],
                         known.max_slices if known else None, status.availability_status)

    gang = request.HasField("coscheduling")
    ready = largest_gang(request, idle) if gang else _independent_room(request, idle)
    if ready >= (request.replicas if gang else 1):
        names = {w.group.name for w in idle}
        return Fit("now", f"idle workers can take {'the gang' if gang else 'it'} now",
                   tuple(candidate(g) for g in groups if g.name in names))
    if (never := never_reason(request, shape)) is not None:
        return Fit("never", never)
    candidates = tuple(candidate(g) for g in routed.groups)
    open_groups = [c for c in candidates if c.availability in ACCEPTING]
    reason = (f"{open_groups[0].name} can scale up a slice for it" if open_groups
              else "every group that can host it is at max_slices; it waits for a slice to free")
    if all(unknowns[c.name] for c in candidates):
        unknown = tuple(f"{c.name}'s {fact}" for c in candidates for fact in unknowns[c.name])
        return Fit("after-scale-up", f"{reason} (unknown: this controller does not report {_listed(unknown)})",
                   candidates, unknown)
    return Fit("after-scale-up", reason, candidates)


def _listed(items: tuple[str, ...]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _independent_room(request: LaunchJobRequest, idle: list[Worker]) -> int:
    """Idle workers that pass the job's REQUIRED constraints and hold one task each."""
    rules = [r for r in effective_rules(request) if not r.soft]
    return sum(1 for w in idle if resource_fit(w.group, request) is None
               and all(r.matches(w.attributes.get(r.key)) for r in rules))
