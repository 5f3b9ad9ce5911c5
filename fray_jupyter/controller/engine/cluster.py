"""The cluster the embedded controller stands in for: a ``ClusterProfile`` and Iris's placement rules
applied to it (``iris.placement``), while every task still runs on this machine's task slots.

* LaunchJob: a job no scale group can ever host is refused as Iris refuses it (``launch_refusal``:
  FAILED_PRECONDITION "Job <id> is unschedulable: …", or INVALID_ARGUMENT for a bad TPU chip count).
* Pending: an accepted job no group and no warm workers can ever hold (a gang larger than any slice)
  is held PENDING with Iris's reason (``hold_reason``), never started, and times out like any pending job.
* Capacity: ``GetAutoscalerStatus`` and ``ListWorkers`` describe the profile's groups with their warm
  slices (``buffer_slices``) up and ready, and every other slot free to scale up to ``max_slices``:
  the shape ``fit()`` reads on a real cluster.

Known differences from a genuine Iris on the same profile (the twin): every accepted, placeable task
starts at once on a local slot, so ``max_slices`` never makes a job wait and no slice boots; the
``Scheduler:`` half of a pending reason counts only the warm slices as up (Iris's text for the
cluster at rest: Iris counts the workers up at that moment, and slices earlier jobs scaled up stay
until idle); GetAutoscalerStatus lists only the warm slices (no slices for
running jobs, no recent actions or routing decision) and ListWorkers only their workers.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from fray_jupyter.cluster.profile import ClusterProfile, ScaleGroup, load_profile
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.iris.placement import launch_refusal, route
from fray_jupyter.iris.placement_workers import Worker, pending_reason, slice_workers, warm_workers
from fray_jupyter.iris.proto import controller_pb2, job_pb2, time_pb2, vm_pb2

if TYPE_CHECKING:
    from fray_jupyter.iris.fit import Fit, PlanLike

C = controller_pb2.Controller
CLUSTER_CONFIG_ENV: Final[str] = "FRAY_CLUSTER_CONFIG"
IDLE_THRESHOLD_MS: Final[int] = 600_000  # Iris's default idle threshold before a slice is reclaimed
_CODES: Final[dict[str, Code]] = {"invalid_argument": Code.INVALID_ARGUMENT,
                                  "failed_precondition": Code.FAILED_PRECONDITION}
_SLICE_STATES: Final[tuple[str, ...]] = ("requesting", "booting", "initializing", "ready", "failed")


def embedded_profile(option: str | None = None, environ: Mapping[str, str] = os.environ) -> ClusterProfile:
    """The profile an embedded controller applies: ``option`` (``--cluster-config``), else
    ``$FRAY_CLUSTER_CONFIG``, else the built-in one (``load_profile``; ``ProfileError`` names what is wrong)."""
    return load_profile(option or environ.get(CLUSTER_CONFIG_ENV) or None)



def read_embedded_fit(plan: PlanLike) -> tuple[Fit, str]:
    """The ``fit()`` verdict an embedded controller started now would give ``plan``, and a line saying
    where it came from: its capacity answers are a function of its profile alone (``embedded_profile``),
    so they are read here without starting one (``ProfileError`` names a bad ``$FRAY_CLUSTER_CONFIG``)."""
    from fray_jupyter.iris.fit import fit_from

    profile = embedded_profile()
    cluster = Cluster(profile)
    verdict = fit_from(plan, cluster.autoscaler_status(C.GetAutoscalerStatusRequest()),
                       cluster.list_workers(C.ListWorkersRequest()), profile)
    named = f" (${CLUSTER_CONFIG_ENV})" if os.environ.get(CLUSTER_CONFIG_ENV) else ""
    return verdict, (f"read from the embedded controller's profile {profile.name!r}{named}: no controller is "
                     "running, and none was started")


class Cluster:
    """Placement rules and capacity answers for one profile (see the module docstring)."""

    def __init__(self, profile: ClusterProfile) -> None:
        self.profile = profile
        self.started_ms = int(time.time() * 1000)
        self._workers = warm_workers(profile)
        self._statuses: dict[str, C.WorkerHealthStatus] = {}
        self._groups: vm_pb2.AutoscalerStatus | None = None

    def check_launch(self, request: C.LaunchJobRequest) -> None:
        """Raise Iris's LaunchJob refusal for a job no group can ever host."""
        refusal = launch_refusal(request, self.profile)
        if refusal is not None:
            raise RpcError(_CODES[refusal.code], refusal.message)

    def hold_reason(self, request: C.LaunchJobRequest) -> str | None:
        """Iris's pending reason for an accepted job that can never be placed; None when it can."""
        return pending_reason(request, self.profile)

    def placed_region(self, request: C.LaunchJobRequest) -> str:
        """The region of the group a task of ``request`` stands on: the first group the autoscaler would
        route it to (``route``), "" when none or when that group has no region — ``IRIS_WORKER_REGION``."""
        groups = route(request, self.profile).groups
        return (groups[0].region or "") if groups else ""

    # -- capacity ------------------------------------------------------------------------------------
    def _group_status(self, group: ScaleGroup) -> vm_pb2.ScaleGroupStatus:
        warm = min(group.buffer_slices, group.max_slices)
        created = time_pb2.Timestamp(epoch_ms=self.started_ms)
        slices = []
        for index in range(warm):
            vms = [vm_pb2.VmInfo(vm_id=w.worker_id, slice_id=w.slice_id, scale_group=group.name,
                                 state=vm_pb2.VM_STATE_READY, address="127.0.0.1", zone=group.zone or "",
                                 created_at=created, worker_id=w.worker_id, worker_healthy=True, usability="healthy")
                   for w in slice_workers(group, index)]
            slices.append(vm_pb2.SliceInfo(slice_id=f"{group.name}-{index}", scale_group=group.name, created_at=created,
                                           vms=vms, state="ready", capacity_status="available"))
        status = vm_pb2.ScaleGroupStatus(
            name=group.name, device_type=group.device_type, device_variant=group.device_variant,
            region=group.region or "", slices=slices, idle_threshold_ms=IDLE_THRESHOLD_MS,
            availability_status="available" if warm < group.max_slices else "at_max_slices",
        )
        for state in _SLICE_STATES:
            status.slice_state_counts[state] = warm if state == "ready" else 0
        return status

    def autoscaler_status(self, request: C.GetAutoscalerStatusRequest) -> C.GetAutoscalerStatusResponse:
        """Every group of the profile, its warm slices ready (``backend_id`` is ignored: one backend)."""
        del request
        if self._groups is None:  # a profile's groups never change: built once
            self._groups = vm_pb2.AutoscalerStatus(groups=[self._group_status(g) for g in self.profile.groups])
        answer = C.GetAutoscalerStatusResponse(status=self._groups)
        answer.status.last_evaluation.epoch_ms = int(time.time() * 1000)
        return answer

    def _worker(self, worker: Worker) -> C.WorkerHealthStatus:
        group = worker.group
        device = job_pb2.DeviceConfig()
        if group.device_type == "tpu":
            device.tpu.variant, device.tpu.count = group.device_variant, group.device_count
        elif group.device_type == "gpu":
            device.gpu.variant, device.gpu.count = group.device_variant, group.device_count
        else:
            device.cpu.variant = "cpu"
        metadata = job_pb2.WorkerMetadata(
            hostname=socket.gethostname(), ip_address="127.0.0.1", cpu_count=group.cpu_millicores // 1000,
            memory_bytes=group.memory_bytes, disk_bytes=group.disk_bytes, device=device,
            gpu_count=group.device_count if group.device_type == "gpu" else 0,
            gpu_name=group.device_variant if group.device_type == "gpu" else "",
        )
        if group.device_type == "tpu":
            metadata.tpu_name, metadata.tpu_worker_id = worker.slice_id, str(worker.vm_index)
        for key, value in worker.attributes.items():
            target = metadata.attributes[key]
            if isinstance(value, int):
                target.int_value = value
            elif isinstance(value, float):
                target.float_value = value
            else:
                target.string_value = value
        return C.WorkerHealthStatus(worker_id=worker.worker_id, healthy=True, address="127.0.0.1", metadata=metadata,
                                    scale_group=group.name)

    def list_workers(self, request: C.ListWorkersRequest) -> C.ListWorkersResponse:
        """The warm slices' workers, filtered by ``query.contains`` (worker id) and paged by
        ``offset``/``limit`` (0: all), sorted by worker id."""
        query = request.query
        needle = query.contains.lower()
        matched = sorted((w for w in self._workers if needle in w.worker_id.lower()), key=lambda w: w.worker_id)
        if query.sort_direction == C.SORT_DIRECTION_DESC:
            matched.reverse()
        offset = max(query.offset, 0)
        page = matched[offset:offset + query.limit] if query.limit > 0 else matched[offset:]
        answer = C.ListWorkersResponse(workers=[self._status(w) for w in page], total_count=len(matched),
                                       has_more=offset + len(page) < len(matched))
        now_ms = int(time.time() * 1000)
        for status in answer.workers:  # each worker is healthy now: its heartbeat is this answer's time
            status.last_heartbeat.epoch_ms = now_ms
        return answer

    def _status(self, worker: Worker) -> C.WorkerHealthStatus:
        """``worker``'s status, built once: a profile's workers never change (1,000 of them answer
        in milliseconds)."""
        if (status := self._statuses.get(worker.worker_id)) is None:
            status = self._statuses[worker.worker_id] = self._worker(worker)
        return status
