"""fray-jupyter: describe, preview and launch Fray jobs on Iris from a notebook.

The public API is importable from here; each name is loaded on first use, so ``import
fray_jupyter`` (and ``%load_ext fray_jupyter``) stays cheap until a model or plan is needed.
"""

from __future__ import annotations

from typing import Any

from fray_jupyter.lazy import lazy_exports

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        ["ANY_REGION", "ResourceConfig"], "fray_jupyter.resources.config"),
    **dict.fromkeys(
        ["CpuConfig", "GpuConfig", "TpuConfig", "DeviceConfig", "get_tpu_topology", "tpu_family",
         "tpu_hbm_bytes_per_chip", "tpu_hbm_capacity_bytes", "device_flops"], "fray_jupyter.resources.devices"),
    **dict.fromkeys(
        ["TPU_TOPOLOGIES", "TPU_HOST_RESOURCES", "TPU_HBM_BYTES_PER_CHIP", "DEVICE_FLOPS", "TpuTopologyInfo",
         "DEFAULT_TPU_HOST_FRACTION"], "fray_jupyter.resources.tables"),
    **dict.fromkeys(
        ["Entrypoint", "BinaryEntrypoint", "CallableEntrypoint", "CellEntrypoint"], "fray_jupyter.resources.entrypoint"),
    **dict.fromkeys(["EnvironmentConfig", "create_environment"], "fray_jupyter.resources.environment"),
    **dict.fromkeys(["JobRequest", "JobStatus"], "fray_jupyter.resources.job"),
    **dict.fromkeys(["convert_constraints", "Constraint"], "fray_jupyter.iris.constraints"),
    **dict.fromkeys(["resolve_coscheduling", "CoschedulingConfig"], "fray_jupyter.iris.coscheduling"),
    **dict.fromkeys(
        ["convert_resources", "convert_environment", "convert_entrypoint", "adjust_tpu_replicas"],
        "fray_jupyter.iris.convert"),
    **dict.fromkeys(
        ["build_launch_request", "client_revision_date", "DEFAULT_CLIENT_REVISION_DATE"], "fray_jupyter.iris.request"),
    **dict.fromkeys(["plan", "Plan"], "fray_jupyter.planning"),
    **dict.fromkeys(["ResourcePicker", "JobStatusPanel"], "fray_jupyter.widgets"),
    **dict.fromkeys(["connect", "FrayClient", "FrayError", "JobHandle"], "fray_jupyter.client"),
    **dict.fromkeys(["task_info", "TaskInfo"], "fray_jupyter.task"),
    **dict.fromkeys(["RemoteError", "ResultUnavailable"], "fray_jupyter.client.results"),
    **dict.fromkeys(["fray_client", "submit", "FrayProtocolClient", "FrayJobHandle"], "fray_jupyter.fray_protocol"),
    **dict.fromkeys(["FrayMagics"], "fray_jupyter.magics"),
}
__all__ = sorted(_EXPORTS)  # noqa: PLE0605 - the names of _EXPORTS, their one list
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext fray_jupyter``: register the ``%%fray`` and ``%fray`` magics."""
    from fray_jupyter.magics import load_ipython_extension as load

    load(ipython)


# -- Jupyter entry points: the server extension (fray_jupyter.server) and the prebuilt labextension
def _jupyter_server_extension_points() -> list[dict[str, str]]:
    """Where Jupyter Server finds ``_load_jupyter_server_extension``."""
    return [{"module": "fray_jupyter.server"}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """The prebuilt labextension inside the package (built from ``labextension/``)."""
    return [{"src": "labextension", "dest": "fray-jupyter"}]
