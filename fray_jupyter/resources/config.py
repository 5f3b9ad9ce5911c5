"""``ResourceConfig``: what one replica (task) of a job needs, and Fray's builders for it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar, Final

from pydantic import Field, field_validator, model_validator

from fray_jupyter.resources.devices import (
    AnyDevice,
    CpuConfig,
    DeviceConfig,
    GpuConfig,
    TpuConfig,
    get_tpu_topology,
    tpu_family,
    tpu_hbm_bytes_per_chip,
)
from fray_jupyter.resources.model import FrayModel
from fray_jupyter.resources.sizes import parse_size, scale_size
from fray_jupyter.resources.tables import DEFAULT_TPU_DISK, DEFAULT_TPU_HOST_FRACTION, TPU_HOST_RESOURCES

ANY_REGION: Final[str] = "*"
"""The region marker meaning ANY: run anywhere and do not inherit the parent's region.
Use it alone: ``regions=[ANY_REGION]``. ``None`` means UNSET (inherit); a list of regions PINS."""

MAX_CPU: Final[float] = (2**31 - 1) / 1000  # millicores are an int32 on the wire
MAX_REPLICAS: Final[int] = 100_000
CPU_FLOPS: Final[float] = 100e9  # Fray's nominal figure for a CPU-only replica
HOST_FIELDS: Final[tuple[str, ...]] = ("cpu", "ram", "disk")
"""The host resources of a replica, which the builders fill in when not given."""


def _names(value: Any, field: str, example: str) -> Any:
    if isinstance(value, str):
        raise ValueError(f"{field} must be a list such as [{value!r}], not a bare string {value!r}")
    if value is not None:
        for entry in value:
            if not isinstance(entry, str) or not entry.strip():
                raise ValueError(f"{field} entries must be non-empty names such as {example!r}, got {entry!r}")
    return value


class ResourceConfig(FrayModel):
    """Resources for one replica, plus the replica count builders carry (``with_tpu`` sets it).

    Defaults are Fray's: 1 core, ``"4g"`` RAM, ``"64g"`` disk, CPU device, preemptible, regions
    UNSET. Sizes are binary ("16g" = 16 GiB). ``JobRequest.replicas`` wins over ``replicas`` here.
    """

    _positional: ClassVar[tuple[str, ...]] = (
        "cpu", "ram", "disk", "device", "preemptible", "regions", "zone", "target_cluster", "replicas",
        "device_alternatives", "image", "container_profile",
    )
    cpu: float = 1
    ram: str = "4g"
    disk: str = "64g"
    device: DeviceConfig = Field(default_factory=CpuConfig)
    preemptible: bool = True
    regions: list[str] | None = None
    zone: str | None = None
    target_cluster: str | None = None
    replicas: int = 1
    device_alternatives: list[str] | None = None
    image: str | None = None
    container_profile: str | None = None

    @field_validator("cpu")
    @classmethod
    def _cpu_in_range(cls, cpu: float) -> float:
        if not (math.isfinite(cpu) and 0.001 <= cpu <= MAX_CPU):
            raise ValueError(f"cpu {cpu!r} must be between 0.001 and {MAX_CPU:g} cores")
        return cpu

    @field_validator("ram", "disk", mode="before")
    @classmethod
    def _size(cls, size: Any, info: Any) -> Any:
        if isinstance(size, int) and not isinstance(size, bool):
            size = str(size)
        parse_size(size, name=info.field_name)
        return size

    @field_validator("regions", mode="before")
    @classmethod
    def _regions(cls, regions: Any) -> Any:
        return _names(regions, "regions", "us-central1")

    @field_validator("device_alternatives", mode="before")
    @classmethod
    def _alternatives(cls, alternatives: Any) -> Any:
        return _names(alternatives, "device_alternatives", "v5p-8")

    @field_validator("replicas")
    @classmethod
    def _replicas_in_range(cls, replicas: int) -> int:
        if not 1 <= replicas <= MAX_REPLICAS:
            raise ValueError(f"replicas {replicas} must be between 1 and {MAX_REPLICAS}")
        return replicas

    @model_validator(mode="after")
    def _tpu_alternatives_share_the_vm(self) -> ResourceConfig:
        if isinstance(self.device, TpuConfig) and self.device_alternatives:
            check_tpu_shapes([self.device.variant, *self.device_alternatives])
        return self

    # -- figures ---------------------------------------------------------------------------------

    def chip_count(self) -> int:
        """Accelerator chips over all replicas: chips per replica (per VM for TPU) x replicas."""
        return self.device.chip_count() * self.replicas

    def device_flops(self, dtype: str = "bf16") -> float:
        """Peak FLOP/s of one chip of the device."""
        return self.device.device_flops(dtype)

    def total_flops(self, dtype: str = "bf16") -> float:
        """Peak FLOP/s of the whole job: Fray's nominal 100 GFLOP/s for CPU, else per chip x chips."""
        if isinstance(self.device, CpuConfig):
            return CPU_FLOPS
        return self.device_flops(dtype) * self.chip_count()

    def hbm_capacity_bytes(self) -> int | None:
        """Accelerator memory over all replicas (TPU: chips x HBM per chip); None where no table has it."""
        if isinstance(self.device, TpuConfig):
            return self.chip_count() * tpu_hbm_bytes_per_chip(tpu_family(self.device.variant))
        return None

    def ram_bytes(self) -> int:
        """RAM per replica in bytes (binary units)."""
        return parse_size(self.ram, name="ram")

    def disk_bytes(self) -> int:
        """Disk per replica in bytes (binary units)."""
        return parse_size(self.disk, name="disk")

    def scale(
        self, factor: float | None = None, /, *, cpu: float | None = None, ram: float | None = None,
        disk: float | None = None,
    ) -> ResourceConfig:
        """A copy with cpu, ram and disk multiplied: ``scale(2)`` doubles all three, ``scale(ram=0.5)``
        halves RAM only. Everything else is kept. A factor and keyword factors together is an error."""
        if factor is not None and (cpu is not None or ram is not None or disk is not None):
            raise ValueError("Pass either a single factor or cpu/ram/disk keyword factors, not both.")
        cpu_f, ram_f, disk_f = (factor, factor, factor) if factor is not None else (
            1.0 if cpu is None else cpu, 1.0 if ram is None else ram, 1.0 if disk is None else disk)
        scaled = {"cpu": self.cpu * cpu_f, "ram": scale_size(self.ram, ram_f), "disk": scale_size(self.disk, disk_f)}
        return ResourceConfig(**{**dict(self), **scaled})

    # -- builders --------------------------------------------------------------------------------

    @staticmethod
    def with_tpu(tpu_type: str | Sequence[str], *, slice_count: int = 1, **kwargs: Any) -> ResourceConfig:
        """TPU slices: ``replicas = slice_count x vm_count``, one replica per VM.

        A list is a flexible request: the first type is the device, the rest go to
        ``device_alternatives``; all must share vm_count and chips_per_vm. CPU and RAM default to half
        the primary family's host VM (v5p: 104 cores, "224g"), disk to "50g"; kwargs override them.
        """
        if not isinstance(tpu_type, (str, list, tuple)):
            raise ValueError(f"tpu_type must be a TPU type such as 'v5p-8' or a list of them, got {tpu_type!r}")
        types = [tpu_type] if isinstance(tpu_type, str) else list(tpu_type)
        if not types:
            raise ValueError("tpu_type must be non-empty")
        check_tpu_shapes(types)
        if isinstance(slice_count, bool) or not isinstance(slice_count, int) or slice_count < 1:
            raise ValueError(f"slice_count {slice_count!r} must be a whole number of slices, at least 1")
        for taken in ("device", "replicas", "device_alternatives"):
            if taken in kwargs:
                raise ValueError(f"with_tpu sets {taken} itself; pass the TPU type(s) and slice_count instead")
        primary = types[0]
        host = TPU_HOST_RESOURCES[tpu_family(primary)]
        kwargs.setdefault("cpu", max(1, int(host.cpu * DEFAULT_TPU_HOST_FRACTION)))
        kwargs.setdefault("ram", f"{int(host.ram_gb * DEFAULT_TPU_HOST_FRACTION)}g")
        kwargs.setdefault("disk", DEFAULT_TPU_DISK)
        return ResourceConfig(
            device=TpuConfig(variant=primary),
            replicas=slice_count * get_tpu_topology(primary).vm_count,
            device_alternatives=types[1:] or None,
            **kwargs,
        )

    @staticmethod
    def with_gpu(gpu_type: str, count: int = 1, **kwargs: Any) -> ResourceConfig:
        """``count`` GPUs of ``gpu_type`` per replica; multi-node jobs pass ``replicas=N``."""
        return ResourceConfig(device=GpuConfig(variant=gpu_type, count=count), **kwargs)

    @staticmethod
    def with_cpu(**kwargs: Any) -> ResourceConfig:
        """A CPU-only replica; kwargs as for ``ResourceConfig``."""
        return ResourceConfig(device=CpuConfig(), **kwargs)


def builder_defaults(device: AnyDevice) -> dict[str, Any]:
    """cpu, ram and disk the builder for ``device`` fills in: ``with_tpu``'s half-host figures for a
    TPU type, Fray's ``ResourceConfig`` defaults otherwise."""
    built = ResourceConfig.with_tpu(device.variant) if isinstance(device, TpuConfig) else ResourceConfig()
    return {name: getattr(built, name) for name in HOST_FIELDS}


def check_tpu_shapes(types: Sequence[str]) -> None:
    """Every TPU type of a flexible request must exist and share vm_count and chips_per_vm: a VM is
    indivisible, so a v6e-8 job could not fall back to a v6e-4 VM."""
    shapes = {t: get_tpu_topology(t) for t in types}
    if len({(s.vm_count, s.chips_per_vm) for s in shapes.values()}) > 1:
        listed = ", ".join(f"{t} ({s.vm_count} VM x {s.chips_per_vm} chips)" for t, s in shapes.items())
        raise ValueError(
            f"all TPU types in a flexible request must share both vm_count and chips_per_vm; got {listed}"
        )

