"""Fray's resource model: devices, ``ResourceConfig``, ``JobRequest``, entrypoints, environments."""

from fray_jupyter.resources.config import ANY_REGION, ResourceConfig
from fray_jupyter.resources.devices import (
    CpuConfig,
    DeviceConfig,
    GpuConfig,
    TpuConfig,
    device_flops,
    get_tpu_topology,
    tpu_family,
    tpu_hbm_bytes_per_chip,
    tpu_hbm_capacity_bytes,
)
from fray_jupyter.resources.entrypoint import BinaryEntrypoint, CallableEntrypoint, CellEntrypoint, Entrypoint
from fray_jupyter.resources.environment import EnvironmentConfig, create_environment
from fray_jupyter.resources.job import JobRequest, JobStatus
from fray_jupyter.resources.tables import (
    DEVICE_FLOPS,
    TPU_HBM_BYTES_PER_CHIP,
    TPU_HOST_RESOURCES,
    TPU_TOPOLOGIES,
    TpuTopologyInfo,
)

__all__ = [
    "ANY_REGION", "BinaryEntrypoint", "CallableEntrypoint", "CellEntrypoint", "CpuConfig", "DEVICE_FLOPS",
    "DeviceConfig", "Entrypoint", "EnvironmentConfig", "GpuConfig", "JobRequest", "JobStatus", "ResourceConfig",
    "TPU_HBM_BYTES_PER_CHIP", "TPU_HOST_RESOURCES", "TPU_TOPOLOGIES", "TpuConfig", "TpuTopologyInfo",
    "create_environment", "device_flops", "get_tpu_topology", "tpu_family", "tpu_hbm_bytes_per_chip",
    "tpu_hbm_capacity_bytes",
]
