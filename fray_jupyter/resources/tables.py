"""Fray's hardware facts as data: TPU topologies, TPU hosts, HBM, peak FLOP/s, GPU names.

Every number here is a fact about hardware or about Marin's cluster configuration, taken from
Fray (marin-fray 0.2.227). The conformance suite compares each table with the installed Fray.
Nothing in this module computes; lookups with friendly errors live in ``devices``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, NamedTuple


class TpuTopologyInfo(NamedTuple):
    """One TPU slice type: total chips, physical hosts, schedulable VMs and chips on each VM."""

    name: str
    chip_count: int
    host_count: int
    vm_count: int
    chips_per_vm: int


def _topologies(rows: str) -> tuple[TpuTopologyInfo, ...]:
    parsed = []
    for row in rows.split(";"):
        name, *numbers = row.split()
        chips, hosts, vms, per_vm = (int(n) for n in numbers)
        parsed.append(TpuTopologyInfo(name, chips, hosts, vms, per_vm))
    return tuple(parsed)


# name chip_count host_count vm_count chips_per_vm. Replicas follow vm_count, not host_count
# (v5litepod-16 has 2 hosts but 4 VMs).
TPU_TOPOLOGIES: Final[tuple[TpuTopologyInfo, ...]] = _topologies(
    "v4-8 4 1 1 4; v4-16 8 2 2 4; v4-32 16 4 4 4; v4-64 32 8 8 4; v4-128 64 16 16 4;"
    "v4-256 128 32 32 4; v4-512 256 64 64 4; v4-1024 512 128 128 4; v4-2048 1024 256 256 4;"
    "v4-4096 2048 512 512 4;"
    "v5litepod-1 1 1 1 1; v5litepod-2 2 1 1 2; v5litepod-4 4 1 1 4; v5litepod-8 8 1 1 8;"
    "v5litepod-16 16 2 4 4; v5litepod-32 32 4 8 4; v5litepod-64 64 8 16 4;"
    "v5litepod-128 128 16 32 4; v5litepod-256 256 32 64 4;"
    "v5p-8 4 1 1 4; v5p-16 8 2 2 4; v5p-32 16 4 4 4; v5p-64 32 8 8 4; v5p-128 64 16 16 4;"
    "v5p-256 128 32 32 4; v5p-512 256 64 64 4; v5p-1024 512 128 128 4; v5p-2048 1024 256 256 4;"
    "v5p-4096 2048 512 512 4; v5p-8192 4096 1024 1024 4; v5p-12288 6144 1536 1536 4;"
    "v6e-1 1 1 1 1; v6e-4 4 1 1 4; v6e-8 8 1 1 8; v6e-16 16 4 4 4; v6e-32 32 8 8 4;"
    "v6e-64 64 16 16 4; v6e-128 128 32 32 4; v6e-256 256 64 64 4"
)
TPU_TOPOLOGY_BY_NAME: Final[Mapping[str, TpuTopologyInfo]] = MappingProxyType({t.name: t for t in TPU_TOPOLOGIES})

# TPU type prefix -> family. A type name belongs to the first family whose prefix it starts with.
TPU_FAMILY_PREFIXES: Final[tuple[tuple[str, str], ...]] = (
    ("v4-", "v4"),
    ("v5litepod-", "v5e"),
    ("v5e-", "v5e"),
    ("v5p-", "v5p"),
    ("v6e-", "v6e"),
)
TPU_FAMILIES: Final[tuple[str, ...]] = ("v4", "v5e", "v5p", "v6e")


class TpuHostResources(NamedTuple):
    """The host VM of one TPU family (cores and RAM in GB), as Marin's Iris config sizes it."""

    cpu: int
    ram_gb: int


TPU_HOST_RESOURCES: Final[Mapping[str, TpuHostResources]] = MappingProxyType(
    {
        "v4": TpuHostResources(cpu=240, ram_gb=400),
        "v5e": TpuHostResources(cpu=112, ram_gb=192),
        "v5p": TpuHostResources(cpu=208, ram_gb=448),
        "v6e": TpuHostResources(cpu=180, ram_gb=720),
    }
)
# ``with_tpu`` asks for this fraction of the family's host by default; disk is a flat default.
DEFAULT_TPU_HOST_FRACTION: Final[float] = 0.5
DEFAULT_TPU_DISK: Final[str] = "50g"

_GIB: Final[int] = 1024**3
TPU_HBM_BYTES_PER_CHIP: Final[Mapping[str, int]] = MappingProxyType(
    {"v4": 32 * _GIB, "v5e": 16 * _GIB, "v5p": 95 * _GIB, "v6e": 32 * _GIB}
)

# Device defaults Fray puts in a job's environment, keyed by TPU type prefix; every TPU also gets
# JAX_PLATFORMS="" (GPU too), CPU gets JAX_PLATFORMS=cpu.
LIBTPU_INIT_ARGS_BY_PREFIX: Final[tuple[tuple[tuple[str, ...], str], ...]] = (
    (("v5litepod-", "v5e-", "v5p-"), "--xla_tpu_scoped_vmem_limit_kib=50000"),
    (("v6e-",), "--xla_tpu_scoped_vmem_limit_kib=98304"),
)

# Peak FLOP/s per chip by lowercase device key and dtype. TPU types look up their generation
# ("v5p-8" -> "v5p", "v5litepod-16" -> "v5litepod"). GB200/GB300 are deliberately absent, as in Fray.
DEVICE_FLOPS: Final[Mapping[str, Mapping[str, float]]] = MappingProxyType(
    {
        "h100": {"fp64": 67e12, "fp32": 67e12, "tf32": 494.5e12, "fp16": 989.5e12, "bf16": 989.5e12,
                 "fp8": 1.979e15, "int8": 1.979e15},
        "h100-pcie": {"fp64": 51e12, "fp32": 51e12, "tf32": 378e12, "fp16": 756.5e12, "bf16": 756.5e12,
                      "fp8": 1.513e15, "int8": 1.513e15},
        "h200": {"fp64": 67e12, "fp32": 67e12, "tf32": 494.5e12, "fp16": 989.5e12, "bf16": 989.5e12,
                 "fp8": 1.979e15, "int8": 1.979e15},
        "a100": {"fp64": 19.5e12, "fp32": 19.5e12, "tf32": 156e12, "fp16": 312e12, "bf16": 312e12},
        "a100-40g": {"fp64": 19.5e12, "fp32": 19.5e12, "tf32": 156e12, "fp16": 312e12, "bf16": 312e12},
        "a100-80g": {"fp64": 19.5e12, "fp32": 19.5e12, "tf32": 156e12, "fp16": 312e12, "bf16": 312e12},
        "a10": {"fp32": 31.2e12, "tf32": 62.5e12, "fp16": 125e12, "bf16": 125e12},
        "a10g": {"fp32": 31.2e12, "tf32": 62.5e12, "fp16": 125e12, "bf16": 125e12},
        "a40": {"fp32": 37.4e12, "tf32": 74.8e12, "fp16": 149.7e12, "bf16": 149.7e12},
        "a6000": {"fp32": 38.7e12, "tf32": 154.85e12, "fp16": 154.85e12, "bf16": 154.85e12},
        "b100": {"fp64": 67e12, "fp32": 67e12, "tf32": 494.5e12, "fp16": 989.5e12, "bf16": 989.5e12,
                 "fp8": 1.979e15, "int8": 1.979e15},
        "b200": {"fp64": 40e12, "fp32": 80e12, "tf32": 1.25e15, "fp16": 2.5e15, "bf16": 2.5e15,
                 "fp8": 5e15, "int8": 5e15, "fp4": 1e16},
        "v100": {"fp64": 7e12, "fp32": 14e12, "fp16": 112e12},
        "v100-sxm": {"fp64": 7.8e12, "fp32": 15.7e12, "fp16": 125e12},
        "v100s": {"fp64": 8.2e12, "fp32": 16.4e12, "fp16": 130e12},
        "t4": {"fp32": 8.1e12, "fp16": 65e12, "int8": 130e12, "int4": 260e12},
        "l4": {"fp32": 30.3e12, "tf32": 60e12, "fp16": 121e12, "bf16": 121e12, "fp8": 242.5e12,
               "int8": 242.5e12},
        "l40s": {"fp32": 91.6e12, "tf32": 183.2e12, "fp16": 366.5e12, "bf16": 366.5e12, "fp8": 733e12,
                 "int8": 733e12},
        "gb10": {"bf16": 100e12},
        "mi300x": {"fp64": 163.4e12, "fp32": 163.4e12, "tf32": 653.7e12, "fp16": 1307.4e12,
                   "bf16": 1307.4e12, "fp8": 2614.9e12, "int8": 2614.9e12},
        "mi325x": {"fp64": 163.4e12, "fp32": 163.4e12, "tf32": 653.7e12, "fp16": 1307.4e12,
                   "bf16": 1307.4e12, "fp8": 2614.9e12, "int8": 2614.9e12},
        "mi350x": {"fp64": 72.1e12, "fp32": 144.2e12, "fp16": 2.3096e15, "bf16": 2.3096e15,
                   "fp8": 4.614e15, "int8": 4.614e15},
        "mi355x": {"fp64": 78.6e12, "fp32": 157.3e12, "fp16": 2.5166e15, "bf16": 2.5166e15,
                   "fp8": 5.0332e15, "int8": 5.0332e15},
        "auto": {"fp64": 67e12, "fp32": 67e12, "tf32": 494.5e12, "fp16": 989.5e12, "bf16": 989.5e12,
                 "fp8": 1.979e15, "int8": 1.979e15},
        "v3": {"bf16": 61.5e12},
        "v4": {"bf16": 275e12, "int8": 275e12},
        "v5litepod": {"bf16": 197e12, "int8": 393e12},
        "v5": {"bf16": 459e12},
        "v5p": {"bf16": 459e12},
        "v6e": {"bf16": 918e12, "int8": 1836e12},
        "trn1": {"fp32": 23.75e12, "tf32": 23.75e12, "fp16": 95e12, "bf16": 95e12, "int8": 190e12},
    }
)

# GPU models offered by the picker, grouped by family. Fray itself accepts any variant string;
# Iris lowercases it for constraints. NVL72 parts (GB200/GB300) schedule by rack.
GPU_FAMILIES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "Hopper": ("H100", "H200"),
        "Blackwell": ("B100", "B200", "GB200", "GB300"),
        "Ampere": ("A100", "A100-40G", "A100-80G", "A10", "A10G"),
        "Ada / Turing / Volta": ("L4", "L40", "L40S", "RTX4090", "T4", "V100"),
        "Any": ("auto",),
    }
)
KNOWN_GPU_VARIANTS: Final[tuple[str, ...]] = tuple(v for family in GPU_FAMILIES.values() for v in family)

# NVL72 racks (CoreWeave): variants with these lowercase prefixes coschedule by NVLink domain.
NVL72_PREFIXES: Final[tuple[str, ...]] = ("gb200", "gb300")
NVL72_RACK_SIZE: Final[int] = 18  # nodes sharing one NVLink switch
NVL72_SCHEDULABLE_RACK_NODES: Final[int] = 16  # largest gang bound hard to one rack
NVL72_GPUS_PER_NODE: Final[int] = 4

# Iris priority bands by name; Fray's ``JobRequest.priority`` is forwarded as the band number and 0
# lets the controller choose (the parent's band, or INTERACTIVE for a root job).
PRIORITY_BANDS: Final[Mapping[str, int]] = MappingProxyType(
    {"inherit": 0, "production": 1, "interactive": 2, "batch": 3, "system": 4}
)
