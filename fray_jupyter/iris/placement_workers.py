"""Workers and pending reasons: the slices a cluster profile keeps warm, the attributes their workers
advertise, and what Iris says of an accepted job that can never be placed.

Iris's scheduler places a gang on idle workers that share one ``group_by`` value, wherever they came
from; the autoscaler only brings up a slice for a gang whose size is a group's ``num_vms``. So a gang
the autoscaler cannot serve still runs when enough warm workers (``buffer_slices``, e.g. CoreWeave's
always-warm GPU pools sharing one ``leafgroup``) share a value; otherwise it stays PENDING with
``Scheduler: …`` and ``Autoscaler: Unsatisfied autoscaler demand: …`` as its reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fray_jupyter.cluster.profile import ClusterProfile, ScaleGroup
from fray_jupyter.iris.placement import (
    TPU_NAME,
    LaunchJobRequest,
    Value,
    effective_rules,
    resource_fit,
    route,
)


@dataclass(frozen=True)
class Worker:
    """One VM of a slice as the controller lists it: its group, slice, index and attributes."""

    group: ScaleGroup
    slice_id: str
    vm_index: int
    attributes: dict[str, Value]

    @property
    def worker_id(self) -> str:
        """``<slice id>-w<index>``."""
        return f"{self.slice_id}-w{self.vm_index}"


def slice_workers(group: ScaleGroup, slice_index: int) -> list[Worker]:
    """The workers one slice of ``group`` registers, with the attributes an Iris worker advertises:
    device-type/variant, preemptible, scale-group, region/zone, the group's worker attributes, and for a
    TPU slice tpu-name (the slice), tpu-worker-id, tpu-topology and tpu-vm-count."""
    slice_id = f"{group.name}-{slice_index}"
    base: dict[str, Value] = {**group.routing_attributes(), "scale-group": group.name}
    base.update({key: value.strip().lower() for key, value in group.attributes.items()})
    workers = []
    for vm in range(group.num_vms):
        attrs = dict(base)
        if group.device_type == "tpu":
            attrs.update({TPU_NAME: slice_id, "tpu-worker-id": vm, "tpu-topology": group.device_variant.lower(),
                          "tpu-vm-count": group.num_vms})
        workers.append(Worker(group, slice_id, vm, attrs))
    return workers


def warm_workers(profile: ClusterProfile) -> list[Worker]:
    """Workers of the slices every group keeps up without demand (``buffer_slices``, at most ``max_slices``)."""
    return [w for g in profile.groups for i in range(min(g.buffer_slices, g.max_slices)) for w in slice_workers(g, i)]


def largest_gang(request: LaunchJobRequest, workers: Iterable[Worker]) -> int:
    """The most workers sharing one value of the job's ``group_by`` that pass its REQUIRED constraints and
    can each hold one task (the scheduler's ``_find_coscheduled_assignments`` test, on idle workers)."""
    rules = [r for r in effective_rules(request) if not r.soft]
    group_by = request.coscheduling.group_by
    counts: dict[Value, int] = {}
    for worker in workers:
        value = worker.attributes.get(group_by)
        if value is None or resource_fit(worker.group, request) is not None:
            continue
        if all(rule.matches(worker.attributes.get(rule.key)) for rule in rules):
            counts[value] = counts.get(value, 0) + 1
    return max(counts.values(), default=0)


def _hosted(request: LaunchJobRequest, workers: list[Worker]) -> bool:
    """Whether ``workers`` can take the job: a gang on one ``group_by`` value, else one task."""
    if request.HasField("coscheduling"):
        return largest_gang(request, workers) >= request.replicas
    rules = [r for r in effective_rules(request) if not r.soft]
    return any(resource_fit(w.group, request) is None and all(r.matches(w.attributes.get(r.key)) for r in rules)
               for w in workers)


def never_reason(request: LaunchJobRequest, profile: ClusterProfile) -> str | None:
    """Why a job LaunchJob accepted can never be placed on ``profile`` (None: it can): neither the
    warm workers nor a slice the autoscaler would bring up for it can take it — no group's slice
    size fits its gang, or its REQUIRED constraints on worker-only attributes (``tpu-name``, …) match
    no worker such a slice registers."""
    if _hosted(request, warm_workers(profile)):
        return None
    routed = route(request, profile)
    if routed.reason is not None:
        return routed.reason
    if any(_hosted(request, slice_workers(group, 0)) for group in routed.groups):
        return None
    keys = [r.key for r in effective_rules(request) if not r.soft]
    return f"no worker of {', '.join(g.name for g in routed.groups)} matches constraints: {keys}"


def scheduler_reason(request: LaunchJobRequest, profile: ClusterProfile) -> str:
    """What Iris's scheduler says of a gang no worker group can hold on the cluster at rest: only the
    warm slices are up (Iris counts the workers up at that moment; at rest those are the warm ones)."""
    rules = [r for r in effective_rules(request) if not r.soft]
    group_by = request.coscheduling.group_by
    workers = warm_workers(profile)
    if not any(all(rule.matches(w.attributes.get(rule.key)) for rule in rules) for w in workers):
        return f"No workers match constraints: {[r.key for r in rules]}"
    largest = largest_gang(request, workers)
    return f"Coscheduling: need {request.replicas} workers in same '{group_by}' group, largest group has {largest}"


def pending_reason(request: LaunchJobRequest, profile: ClusterProfile) -> str | None:
    """The pending reason Iris shows for an accepted job that can never be placed (None when it can):
    ``Scheduler: …``, then, when the autoscaler has no group for it, a blank line and ``Autoscaler:
    Unsatisfied autoscaler demand: <routing reason>``."""
    reason = never_reason(request, profile)
    if reason is None:
        return None
    keys = [r.key for r in effective_rules(request) if not r.soft]
    routed = route(request, profile).reason
    if routed is None:  # the autoscaler serves it; no worker it brings up matches the constraints
        return f"Scheduler: No workers match constraints: {keys}"
    scheduler = scheduler_reason(request, profile) if request.HasField("coscheduling") else (
        f"No workers match constraints: {keys}")
    return f"Scheduler: {scheduler}\n\nAutoscaler: Unsatisfied autoscaler demand: {routed}"
