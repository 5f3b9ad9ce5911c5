"""Fray's resource model: devices, ``ResourceConfig``, ``JobRequest``, entrypoints, environments.

Each name is loaded on first use (as in ``fray_jupyter``), so a module that needs only the tables
(``resources.tables``, ``resources.sizes``) — the embedded controller's placement, say — does not
load pydantic and the models.
"""

from __future__ import annotations

from fray_jupyter.lazy import lazy_exports

# public name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["ANY_REGION", "ResourceConfig"], "fray_jupyter.resources.config"),
    **dict.fromkeys(
        ["CpuConfig", "DeviceConfig", "GpuConfig", "TpuConfig", "device_flops", "get_tpu_topology", "tpu_family",
         "tpu_hbm_bytes_per_chip", "tpu_hbm_capacity_bytes"], "fray_jupyter.resources.devices"),
    **dict.fromkeys(["BinaryEntrypoint", "CallableEntrypoint", "CellEntrypoint", "Entrypoint"],
                    "fray_jupyter.resources.entrypoint"),
    **dict.fromkeys(["EnvironmentConfig", "create_environment"], "fray_jupyter.resources.environment"),
    **dict.fromkeys(["JobRequest", "JobStatus"], "fray_jupyter.resources.job"),
    **dict.fromkeys(["DEVICE_FLOPS", "TPU_HBM_BYTES_PER_CHIP", "TPU_HOST_RESOURCES", "TPU_TOPOLOGIES", "TpuTopologyInfo"],
                    "fray_jupyter.resources.tables"),
}
__all__ = sorted(_EXPORTS)  # noqa: PLE0605 - the names of _EXPORTS, their one list
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
