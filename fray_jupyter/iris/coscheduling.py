"""Gang scheduling: Fray's ``resolve_coscheduling`` and the groups Iris places together.

TPU: a multi-VM slice's VMs share a ``tpu-name``; single-VM slices are independent (PR #5226).
GPU: the level depends on the model (CoreWeave topology): NVL72 parts (GB200/GB300) bind to one
NVLink rack (``nvlink.domain``) up to 16 nodes, beyond that to balanced per-rack slices
(``nvlink.domain.sliced``); every other GPU prefers one InfiniBand leaf group (``leafgroup``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.resources.config import ResourceConfig
from fray_jupyter.resources.devices import GpuConfig, TpuConfig
from fray_jupyter.resources.tables import (
    NVL72_GPUS_PER_NODE,
    NVL72_PREFIXES,
    NVL72_RACK_SIZE,
    NVL72_SCHEDULABLE_RACK_NODES,
)

TPU_NAME: Final = "tpu-name"
LEAFGROUP: Final = "leafgroup"
NVLINK_DOMAIN: Final = "nvlink.domain"
NVLINK_DOMAIN_SLICED: Final = "nvlink.domain.sliced"


@dataclass(frozen=True)
class CoschedulingConfig:
    """Iris's gang key: tasks with the same value of the ``group_by`` attribute start together."""

    group_by: str

    def to_proto(self) -> job_pb2.CoschedulingConfig:
        """Wire form."""
        return job_pb2.CoschedulingConfig(group_by=self.group_by)


def is_nvl72(variant: str) -> bool:
    """GB200/GB300 (any case) come in NVL72 racks."""
    return variant.lower().startswith(NVL72_PREFIXES)


def nvl72_racks(replicas: int) -> int:
    """Racks a gang of ``replicas`` nodes spreads over: the fewest holding at most 16 nodes each."""
    return -(-replicas // NVL72_SCHEDULABLE_RACK_NODES)


def rack_slice_size(gpu_count: int, replicas: int) -> int:
    """Nodes per rack for a multi-rack NVL72 gang. Each pod must fill a node (4 GPUs) and the gang
    must split evenly into slices of more than half a rack (10..16 nodes), so no rack holds two."""
    if gpu_count != NVL72_GPUS_PER_NODE:
        raise ValueError(
            f"sliced multi-rack placement requires node-saturating NVL72 pods "
            f"({NVL72_GPUS_PER_NODE} GPUs each); got {gpu_count}"
        )
    racks = nvl72_racks(replicas)
    least = NVL72_RACK_SIZE // 2 + 1
    if replicas % racks:
        raise ValueError(
            f"{replicas} nodes do not divide evenly across {racks} racks (<= {NVL72_SCHEDULABLE_RACK_NODES} "
            f"nodes each); use a gang that splits into equal {least}-{NVL72_SCHEDULABLE_RACK_NODES} node "
            f"slices such as 20, 24, 32 or 48"
        )
    size = replicas // racks
    if size < least:
        raise ValueError(
            f"{replicas} nodes would make {racks} rack slices of {size}, but a slice must exceed half a rack "
            f"({least}+ of {NVL72_RACK_SIZE} nodes); use a gang such as 20, 24, 32 or 48"
        )
    return size


def gpu_gang_coscheduling_level(variant: str, gpu_count: int, replicas: int) -> str:
    """The topology level a multi-node GPU gang binds to (see the module docstring)."""
    if not is_nvl72(variant):
        return LEAFGROUP
    if replicas <= NVL72_SCHEDULABLE_RACK_NODES:
        return NVLINK_DOMAIN
    rack_slice_size(gpu_count, replicas)
    return NVLINK_DOMAIN_SLICED


def resolve_coscheduling(resources: ResourceConfig, replicas: int) -> CoschedulingConfig | None:
    """Fray's rule: none for one replica, CPU, or single-VM TPU slices; ``tpu-name`` for multi-VM
    TPU; for GPU the level of the primary model, which every alternative must share."""
    if replicas <= 1:
        return None
    device = resources.device
    if isinstance(device, TpuConfig):
        return CoschedulingConfig(TPU_NAME) if device.vm_count() > 1 else None
    if isinstance(device, GpuConfig):
        variants = [device.variant, *(resources.device_alternatives or ())]
        levels = [(v, gpu_gang_coscheduling_level(v, device.count, replicas)) for v in variants]
        if len({level for _, level in levels}) > 1:
            listed = ", ".join(f"{v}={level}" for v, level in levels)
            raise ValueError(f"GPU alternatives must share one coscheduling topology; got {listed}")
        return CoschedulingConfig(levels[0][1])
    return None


@dataclass(frozen=True)
class TaskGroup:
    """Task indices Iris places together: a gang (all at once, on one ``group_by`` value) or a single
    independent task. ``gang`` says whether Iris starts them all-or-nothing; ``hard`` whether sharing
    one ``group_by`` value is required (always, for Iris 0.2.227's scheduler)."""

    label: str
    tasks: tuple[int, ...]
    gang: bool
    hard: bool


def _gang_label(resources: ResourceConfig, replicas: int, group_by: str) -> str:
    device = resources.device
    if isinstance(device, TpuConfig) and group_by == TPU_NAME and device.vm_count() == replicas:
        return "slice 0"
    if group_by == NVLINK_DOMAIN:
        return "rack 0"
    return group_by


def task_groups(resources: ResourceConfig, replicas: int, coscheduling: CoschedulingConfig | None) -> tuple[TaskGroup, ...]:
    """Partition task indices 0..replicas-1 as Iris 0.2.227 places them (``iris.placement``'s gang rule).

    A coscheduled job is ONE gang of every task on one value of ``group_by`` (the scheduler's
    ``_find_coscheduled_assignments``), whatever the slice or rack size: a multi-slice TPU job is not
    a gang per slice. Any other job is one independent task per index (a single-VM TPU slice each).
    """
    if coscheduling is not None:
        label = _gang_label(resources, replicas, coscheduling.group_by)
        return (TaskGroup(label, tuple(range(replicas)), True, True),)
    noun = "slice" if isinstance(resources.device, TpuConfig) and resources.device.vm_count() == 1 else "task"
    return tuple(TaskGroup(f"{noun} {i}", (i,), False, False) for i in range(replicas))
