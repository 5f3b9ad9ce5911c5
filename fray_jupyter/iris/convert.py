"""Fray -> Iris conversion of resources, environment and entrypoint, and Iris's client-side rules
that change what is sent (CPU floor for accelerators, TPU replica adjustment, slice env vars)."""

from __future__ import annotations

import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import cloudpickle

from fray_jupyter.iris.outputs import ERROR_FILE, MAX_RESULT_BYTES, RESULT_FILE
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.resources.config import ResourceConfig
from fray_jupyter.resources.devices import AnyDevice, GpuConfig, TpuConfig, get_tpu_topology
from fray_jupyter.resources.entrypoint import Entrypoint
from fray_jupyter.resources.environment import EnvironmentConfig
from fray_jupyter.resources.sizes import parse_size

MIN_ACCELERATOR_CPU_MILLICORES: Final[int] = 4000
IRIS_ENV_DEFAULTS: Final[dict[str, str]] = {"HF_DATASETS_TRUST_REMOTE_CODE": "1", "TOKENIZERS_PARALLELISM": "false"}
# Added by Iris when the extras ask for the ``gpu`` extra ("gpu" or "<package>:gpu").
IRIS_GPU_EXTRA_ENV: Final[dict[str, str]] = {
    "NCCL_RAS_ENABLE": "1", "NCCL_DEBUG": "WARN", "NCCL_DEBUG_TIMESTAMP": "[%F %T.%3f]",
}
IRIS_SLICE_COUNT, IRIS_TASKS_PER_SLICE = "IRIS_SLICE_COUNT", "IRIS_TASKS_PER_SLICE"
MULTIGPU_MODULE: Final[str] = "iris.jax.multigpu_main"

# Commands run through bash so the worker expands $IRIS_PYTHON and $IRIS_WORKDIR itself.
CALLABLE_PICKLE, CALLABLE_RUNNER = "_callable.pkl", "_callable_runner.py"
CELL_SCRIPT: Final[str] = "_fray_cell.py"
_RUN_FILE = "exec $IRIS_PYTHON -u $IRIS_WORKDIR/{}"
_RUNNER_SOURCE: Final[bytes] = textwrap.dedent(
    f"""\
    # Written by fray-jupyter: load the pickled (function, args, kwargs), call it, and leave its
    # return value (cloudpickle) or its exception (JSON) in $IRIS_OUTPUT_DIR, whose files become
    # the attempt's output archive.
    import json, os, traceback
    import cloudpickle

    output_dir = os.environ.get("IRIS_OUTPUT_DIR", "")

    def leave(name, data):
        if output_dir:
            os.makedirs(output_dir, exist_ok=True)
            partial = os.path.join(output_dir, "." + name + ".partial")
            with open(partial, "wb") as out:
                out.write(data)
            os.replace(partial, os.path.join(output_dir, name))

    try:
        with open(os.path.join(os.environ["IRIS_WORKDIR"], {CALLABLE_PICKLE!r}), "rb") as payload:
            function, args, kwargs = cloudpickle.load(payload)
        value = function(*args, **kwargs)
        try:
            data = cloudpickle.dumps(value)
        except Exception as error:
            raise TypeError(f"the return value ({{type(value).__name__}}) could not be pickled: {{error}}") from None
        if len(data) > {MAX_RESULT_BYTES}:
            raise ValueError(
                f"the return value is {{len(data):,}} bytes pickled, over fray-jupyter's limit of "
                f"{MAX_RESULT_BYTES:,} bytes ({MAX_RESULT_BYTES // 2**20} MiB): write large results to "
                "storage and return their path"
            )
    except BaseException as error:
        kind = type(error)
        leave({ERROR_FILE!r}, json.dumps({{
            "type": kind.__qualname__ if kind.__module__ == "builtins" else f"{{kind.__module__}}.{{kind.__qualname__}}",
            "message": str(error),
            "traceback": traceback.format_exc(),
        }}).encode())
        raise
    leave({RESULT_FILE!r}, data)
    """
).encode()


@dataclass(frozen=True)
class ResourceSpec:
    """Iris's per-task resources before encoding: cores, sizes (text or bytes) and the device."""

    cpu: float
    memory: str | int
    disk: str | int
    device: job_pb2.DeviceConfig | None = None

    @property
    def requested_millicores(self) -> int:
        """``int(cpu * 1000)``, Iris's truncation."""
        return int(self.cpu * 1000)

    @property
    def millicores(self) -> int:
        """What is sent: the requested millicores, raised to 4000 when there is an accelerator."""
        if self.device is not None:
            return max(self.requested_millicores, MIN_ACCELERATOR_CPU_MILLICORES)
        return self.requested_millicores

    def to_proto(self) -> job_pb2.ResourceSpecProto:
        """Wire form; sizes parsed in binary units."""
        spec = job_pb2.ResourceSpecProto(
            cpu_millicores=self.millicores,
            memory_bytes=parse_size(self.memory, name="ram"),
            disk_bytes=parse_size(self.disk, name="disk"),
        )
        if self.device is not None:
            spec.device.CopyFrom(self.device)
        return spec


def convert_device(device: AnyDevice) -> job_pb2.DeviceConfig | None:
    """CPU sends no device; TPU sends its variant and chips per VM; GPU its variant (case kept) and count."""
    if isinstance(device, TpuConfig):
        return job_pb2.DeviceConfig(tpu=job_pb2.TpuDevice(variant=device.variant, count=device.chip_count()))
    if isinstance(device, GpuConfig):
        return job_pb2.DeviceConfig(gpu=job_pb2.GpuDevice(variant=device.variant, count=device.count))
    return None


def convert_resources(resources: ResourceConfig) -> ResourceSpec:
    """Fray cpu/ram/disk/device -> Iris cpu/memory/disk/device. Replicas travel separately."""
    return ResourceSpec(cpu=resources.cpu, memory=resources.ram, disk=resources.disk,
                        device=convert_device(resources.device))


@dataclass(frozen=True)
class EnvironmentSpec:
    """Iris's environment before encoding."""

    env_vars: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)
    pip_packages: tuple[str, ...] = ()
    extras: tuple[str, ...] = ()
    setup_scripts: tuple[str, ...] | None = None
    sync_packages: tuple[str, ...] = ()

    @property
    def wants_gpu_extra(self) -> bool:
        """True when an extra is ``gpu`` or ``<package>:gpu``."""
        return any(extra.rpartition(":")[2] == "gpu" for extra in self.extras)

    def iris_defaults(self) -> dict[str, str]:
        """Variables Iris adds under the job's own: the HF/tokenizers defaults, NCCL for GPU extras."""
        return {**IRIS_ENV_DEFAULTS, **(IRIS_GPU_EXTRA_ENV if self.wants_gpu_extra else {})}

    def to_proto(self) -> job_pb2.EnvironmentConfig:
        """Wire form: Iris defaults overridden by ``env_vars``; blank setup scripts dropped.

        ``setup_scripts=None`` sends no setup: fray-jupyter ships no uv-sync script (a notebook is
        not a uv workspace), where Marin's client would generate one; a job for a named cluster whose
        workspace is a uv project gets Iris's before it is converted (``iris.setup``). See
        tests/conformance.
        """
        return job_pb2.EnvironmentConfig(
            env_vars={**self.iris_defaults(), **self.env_vars},
            secrets=self.secrets,
            setup_scripts=[s for s in self.setup_scripts or () if s.strip()],
        )


def convert_environment(env: EnvironmentConfig | None, device: AnyDevice | None = None) -> EnvironmentSpec | None:
    """Fray's rule: the job's env vars, plus each device default not already set; None only when
    there is neither an environment nor any variable."""
    env_vars = dict(env.env_vars) if env is not None else {}
    for name, value in (device.default_env_vars() if device is not None else {}).items():
        env_vars.setdefault(name, value)
    if env is None and not env_vars:
        return None
    if env is None:
        return EnvironmentSpec(env_vars=env_vars)
    return EnvironmentSpec(
        env_vars=env_vars, secrets=dict(env.secrets), pip_packages=tuple(env.pip_packages),
        extras=tuple(env.extras), sync_packages=tuple(env.sync_packages),
        setup_scripts=None if env.setup_scripts is None else tuple(env.setup_scripts),
    )


@dataclass(frozen=True)
class IrisEntrypoint:
    """The command a task runs and the files written into its work dir first."""

    command: tuple[str, ...]
    workdir_files: dict[str, bytes] = field(default_factory=dict)

    def to_proto(self, setup_commands: list[str]) -> job_pb2.RuntimeEntrypoint:
        """Wire form with the environment's setup commands."""
        proto = job_pb2.RuntimeEntrypoint(setup_commands=setup_commands, workdir_files=self.workdir_files)
        proto.run_command.argv.extend(self.command)
        return proto


def convert_entrypoint(entrypoint: Entrypoint) -> IrisEntrypoint:
    """Binary -> ``[command, *args]``. Callable -> cloudpickle of (fn, args, kwargs) plus a runner
    script, run as ``bash -c "exec $IRIS_PYTHON -u $IRIS_WORKDIR/_callable_runner.py"`` as Iris does.
    Cell -> its source as ``_fray_cell.py``, run the same way."""
    if entrypoint.binary_entrypoint is not None:
        binary = entrypoint.binary_entrypoint
        return IrisEntrypoint((binary.command, *binary.args))
    if entrypoint.callable_entrypoint is not None:
        call = entrypoint.callable_entrypoint
        _pickle_module_by_value(call.callable)
        payload = cloudpickle.dumps((call.callable, tuple(call.args), dict(call.kwargs)))
        return IrisEntrypoint(("bash", "-c", _RUN_FILE.format(CALLABLE_RUNNER)),
                              {CALLABLE_PICKLE: payload, CALLABLE_RUNNER: _RUNNER_SOURCE})
    assert entrypoint.cell_entrypoint is not None
    return IrisEntrypoint(("bash", "-c", _RUN_FILE.format(CELL_SCRIPT)),
                          {CELL_SCRIPT: entrypoint.cell_entrypoint.source.encode()})


def _pickle_module_by_value(function: object) -> None:
    """As Iris does: ship the function's module inside the pickle when a worker could not import it
    (no package or spec, e.g. a script, or a module under a ``tests`` path)."""
    module = sys.modules.get(getattr(function, "__module__", "") or "")
    if module is None or module.__name__ == "__main__":
        return  # cloudpickle already pickles __main__ by value
    path = Path(getattr(module, "__file__", None) or "").parts
    if module.__package__ is None or module.__spec__ is None or "tests" in path:
        cloudpickle.register_pickle_by_value(module)


def wrap_multiprocess(entrypoint: IrisEntrypoint, resources: ResourceSpec, processes_per_task: int) -> IrisEntrypoint:
    """Run ``processes_per_task`` GPU processes per task under Iris's multi-GPU supervisor; the GPU
    count must divide evenly among them."""
    gpus = resources.device.gpu.count if resources.device is not None and resources.device.HasField("gpu") else 0
    if gpus <= 0:
        raise ValueError("processes_per_task > 1 requires a GPU device")
    if gpus % processes_per_task:
        raise ValueError(f"processes_per_task ({processes_per_task}) must divide the GPU count ({gpus})")
    prefix = ("python", "-m", MULTIGPU_MODULE, "--nproc", str(processes_per_task),
              "--devices-per-proc", str(gpus // processes_per_task), "--")
    return IrisEntrypoint((*prefix, *entrypoint.command), entrypoint.workdir_files)


def adjust_tpu_replicas(device: AnyDevice, replicas: int) -> int:
    """Iris's rule for multi-VM TPU slices: 1 replica becomes one slice (``vm_count``); any other
    count must be a multiple of ``vm_count``. Other devices keep their count."""
    if not isinstance(device, TpuConfig) or (vms := get_tpu_topology(device.variant).vm_count) <= 1:
        return replicas
    if replicas == 1:
        return vms
    if replicas % vms:
        raise ValueError(
            f"TPU type '{device.variant}' requires {vms} VMs per slice, so replicas must be a multiple of "
            f"{vms} (got replicas={replicas}); for N slices use replicas=N*{vms} or slice_count=N"
        )
    return replicas


def slice_topology_env(device: AnyDevice, replicas: int) -> dict[str, str]:
    """Iris tells multi-slice TPU jobs their shape: ``IRIS_SLICE_COUNT`` and ``IRIS_TASKS_PER_SLICE``
    when there is more than one slice; nothing otherwise."""
    if not isinstance(device, TpuConfig):
        return {}
    per_slice = device.vm_count()
    slices = replicas // per_slice
    return {IRIS_SLICE_COUNT: str(slices), IRIS_TASKS_PER_SLICE: str(per_slice)} if slices > 1 else {}


def with_slice_topology_env(env_vars: dict[str, str], device: AnyDevice, replicas: int) -> dict[str, str]:
    """Iris owns the slice variables: any the job set are replaced by ``slice_topology_env``."""
    own = {k: v for k, v in env_vars.items() if k not in (IRIS_SLICE_COUNT, IRIS_TASKS_PER_SLICE)}
    return {**own, **slice_topology_env(device, replicas)}

