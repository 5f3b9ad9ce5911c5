"""Fray's device configs (CPU, GPU, TPU) and the lookups behind them, with friendly errors."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator

from fray_jupyter.resources.model import FrayModel
from fray_jupyter.resources.suggest import unknown_choice
from fray_jupyter.resources.tables import (
    DEVICE_FLOPS,
    LIBTPU_INIT_ARGS_BY_PREFIX,
    TPU_FAMILY_PREFIXES,
    TPU_HBM_BYTES_PER_CHIP,
    TPU_TOPOLOGY_BY_NAME,
    TpuTopologyInfo,
)

MAX_GPUS_PER_REPLICA = 64


def get_tpu_topology(tpu_type: str) -> TpuTopologyInfo:
    """The topology row for a TPU type; ``ValueError`` with the nearest known type otherwise."""
    try:
        return TPU_TOPOLOGY_BY_NAME[tpu_type]
    except (KeyError, TypeError):
        raise ValueError(unknown_choice("TPU type", tpu_type, TPU_TOPOLOGY_BY_NAME)) from None


def tpu_family(tpu_type: str) -> str:
    """The family (v4, v5e, v5p, v6e) of a TPU type, by the prefix of its name."""
    for prefix, family in TPU_FAMILY_PREFIXES:
        if tpu_type.startswith(prefix):
            return family
    raise ValueError(f"cannot determine the TPU family of {tpu_type!r}; names start with v4-, v5litepod-, v5p- or v6e-")


def tpu_hbm_bytes_per_chip(family: str) -> int:
    """HBM bytes on one chip of a TPU family."""
    try:
        return TPU_HBM_BYTES_PER_CHIP[family]
    except KeyError:
        raise ValueError(unknown_choice("TPU family", family, TPU_HBM_BYTES_PER_CHIP)) from None


def tpu_hbm_capacity_bytes(tpu_type: str) -> int:
    """HBM bytes of a whole slice: its chip count times the family's HBM per chip."""
    return get_tpu_topology(tpu_type).chip_count * tpu_hbm_bytes_per_chip(tpu_family(tpu_type))


def flops_key(device_type: str) -> str:
    """The FLOPS table key for a device name: lowercase; a TPU type keeps only its generation
    (the part before the first '-' of a name starting with 'v': "v5p-8" -> "v5p")."""
    key = device_type.lower()
    if key.startswith("v") and "-" in key:
        return key.split("-", 1)[0]
    return key


def device_flops(device_type: str, dtype: str = "bf16") -> float | None:
    """Peak FLOP/s of one chip, or None when the device or dtype is not in the table.

    ``dtype`` is case-insensitive and may carry an ``amp_`` prefix ("amp_bf16" reads as "bf16").
    """
    per_dtype = DEVICE_FLOPS.get(flops_key(device_type))
    if per_dtype is None:
        return None
    return per_dtype.get(dtype.lower().removeprefix("amp_"))


def _known_flops(device_type: str, dtype: str) -> float:
    flops = device_flops(device_type, dtype)
    if flops is None:
        known = DEVICE_FLOPS.get(flops_key(device_type))
        if known is None:
            raise ValueError(f"no peak FLOP/s are known for device {device_type!r}")
        raise ValueError(unknown_choice(f"dtype for {device_type}", dtype, known))
    return flops


class _Device(FrayModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CpuConfig(_Device):
    """A CPU-only task: no accelerator is requested and none is sent to Iris."""

    _positional: ClassVar[tuple[str, ...]] = ("kind", "variant")
    kind: Literal["cpu"] = "cpu"
    variant: str = "cpu"

    def chip_count(self) -> int:
        """CPUs have no chips: 0."""
        return 0

    def device_flops(self, dtype: str = "bf16") -> float:
        """Fray has no CPU FLOPS figure: raises ``NotImplementedError``, as Fray does."""
        raise NotImplementedError("CPU FLOPS not available")

    def default_env_vars(self) -> dict[str, str]:
        """JAX runs on the CPU: ``JAX_PLATFORMS=cpu``."""
        return {"JAX_PLATFORMS": "cpu"}


class GpuConfig(_Device):
    """``count`` GPUs of one model per replica. Positional order is Fray's: (variant, kind, count)."""

    _positional: ClassVar[tuple[str, ...]] = ("variant", "kind", "count")
    variant: str
    kind: Literal["gpu"] = "gpu"
    count: int = 1

    def __init__(self, /, *args: Any, **kwargs: Any) -> None:
        if len(args) >= 2 and isinstance(args[1], int) and not isinstance(args[1], bool):
            raise ValueError(
                f"GpuConfig's second positional argument is kind, as in Fray; "
                f"write GpuConfig({args[0]!r}, count={args[1]})"
            )
        super().__init__(*args, **kwargs)

    @field_validator("variant")
    @classmethod
    def _variant_is_a_name(cls, variant: str) -> str:
        if not variant.strip() or any(c.isspace() for c in variant):
            raise ValueError(f"GPU variant {variant!r} must be a model name without spaces, such as 'H100'")
        return variant

    @field_validator("count")
    @classmethod
    def _count_in_range(cls, count: int) -> int:
        if not 1 <= count <= MAX_GPUS_PER_REPLICA:
            raise ValueError(f"GPU count {count} must be between 1 and {MAX_GPUS_PER_REPLICA} per replica")
        return count

    def chip_count(self) -> int:
        """GPUs per replica."""
        return self.count

    def device_flops(self, dtype: str = "bf16") -> float:
        """Peak FLOP/s of one GPU; ``ValueError`` when the model or dtype is unknown (GB200 is)."""
        return _known_flops(self.variant, dtype)

    def total_flops(self, dtype: str = "bf16") -> float:
        """Peak FLOP/s of one replica's GPUs."""
        return self.device_flops(dtype) * self.count

    def default_env_vars(self) -> dict[str, str]:
        """JAX picks the GPU itself: ``JAX_PLATFORMS=""``."""
        return {"JAX_PLATFORMS": ""}


class TpuConfig(_Device):
    """One VM of a TPU slice type. ``topology`` is informational and never sent to Iris."""

    _positional: ClassVar[tuple[str, ...]] = ("variant", "kind", "topology")
    variant: str
    kind: Literal["tpu"] = "tpu"
    topology: str | None = None

    @field_validator("variant")
    @classmethod
    def _known_type(cls, variant: str) -> str:
        get_tpu_topology(variant)
        return variant

    def chip_count(self) -> int:
        """Chips on one VM of the slice (the table's chips_per_vm), not the slice's total."""
        return get_tpu_topology(self.variant).chips_per_vm

    def vm_count(self) -> int:
        """VMs in one slice: the number of replicas one slice needs."""
        return get_tpu_topology(self.variant).vm_count

    def device_flops(self, dtype: str = "bf16") -> float:
        """Peak FLOP/s of one chip of this generation."""
        return _known_flops(self.variant, dtype)

    def total_flops(self, dtype: str = "bf16") -> float:
        """Peak FLOP/s of one VM's chips."""
        return self.device_flops(dtype) * self.chip_count()

    def default_env_vars(self) -> dict[str, str]:
        """``JAX_PLATFORMS=""`` plus the family's ``LIBTPU_INIT_ARGS`` (v5e/v5p 50000, v6e 98304 KiB)."""
        env = {"JAX_PLATFORMS": ""}
        for prefixes, args in LIBTPU_INIT_ARGS_BY_PREFIX:
            if self.variant.startswith(prefixes):
                env["LIBTPU_INIT_ARGS"] = args
                break
        return env


DeviceConfig = Annotated[CpuConfig | GpuConfig | TpuConfig, Field(discriminator="kind")]
AnyDevice = CpuConfig | GpuConfig | TpuConfig
