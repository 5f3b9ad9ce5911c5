"""Copyable code for the same request: the Python builder call, the ``%%fray`` line, ``iris job run``.

Rules: the Python snippet calls the builder that fits the device (``with_tpu``/``with_gpu``/
``with_cpu``) with only the arguments that differ from what that builder fills in, and evaluates
back to an equal ``ResourceConfig``. The ``%%fray`` line uses exactly ``fray_jupyter.flags``, so
parsing it gives the same job. ``iris job run`` spells out cpu, memory and disk (its defaults are
not Fray's) and lists on a ``#`` line what it has no flag for.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from typing import Any, Final

from fray_jupyter.iris.gpu_spec import parse_gpu_spec
from fray_jupyter.resources.config import ANY_REGION, HOST_FIELDS, ResourceConfig, builder_defaults
from fray_jupyter.resources.devices import CpuConfig, GpuConfig, TpuConfig
from fray_jupyter.resources.job import JobRequest
from fray_jupyter.resources.tables import PRIORITY_BANDS

BAND_NAMES: Final[dict[int, str]] = {band: name for name, band in PRIORITY_BANDS.items()}
# iris job run asks for --enable-extra-resources for accelerators and for memory/disk at or above these.
IRIS_EXTRA_MEMORY_BYTES: Final = 4 * 10**9
IRIS_EXTRA_DISK_BYTES: Final = 10 * 10**9
PLACEHOLDER_COMMAND: Final = ("python", "main.py")
CELL_FILE: Final = "cell.py"
"""A ``%%fray`` cell's code, saved as a file: ``iris job run`` ships the directory it runs from."""


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return repr(value)


def number(value: float) -> str:
    """A count as Python writes it, without a needless ".0": 104.0 -> "104", 0.5 -> "0.5"."""
    return _literal(float(value))


def _tpu_slices(resources: ResourceConfig) -> int | None:
    """Slices ``with_tpu`` would need to build this config, or None when it cannot."""
    device = resources.device
    if not isinstance(device, TpuConfig) or device.topology is not None:
        return None
    slices, rest = divmod(resources.replicas, device.vm_count())
    return slices if slices and not rest else None


def _builder(resources: ResourceConfig) -> tuple[str, list[str], set[str]]:
    """The builder call's name, its leading arguments, and the fields it sets itself."""
    device = resources.device
    slices = _tpu_slices(resources)
    if slices is not None:
        types = [device.variant, *(resources.device_alternatives or [])]
        head = [_literal(types if len(types) > 1 else types[0])] + ([f"slice_count={slices}"] if slices != 1 else [])
        return ".with_tpu", head, {"device", "replicas", "device_alternatives"}
    if isinstance(device, GpuConfig):
        return ".with_gpu", [_literal(device.variant)] + ([f"count={device.count}"] if device.count != 1 else []), {"device"}
    if isinstance(device, CpuConfig):
        return ".with_cpu", [], {"device"}
    return "", [], set()  # a TPU config with_tpu cannot build: the plain constructor


def python_snippet(resources: ResourceConfig) -> str:
    """A Python expression that evaluates to ``resources`` (with ``ResourceConfig``, ``ANY_REGION`` and
    ``TpuConfig`` in scope), e.g. ``ResourceConfig.with_tpu("v5p-8", slice_count=2)``."""
    builder, args, set_by_builder = _builder(resources)
    defaults = {name: field.get_default(call_default_factory=True) for name, field in ResourceConfig.model_fields.items()}
    if builder:
        defaults.update(builder_defaults(resources.device))
    for name in ResourceConfig.model_fields:
        value = getattr(resources, name)
        if name in set_by_builder or value == defaults[name]:
            continue
        if name == "device":
            topology = f", topology={_literal(value.topology)}" if value.topology is not None else ""
            shown = f"TpuConfig({_literal(value.variant)}{topology})"
        elif name == "regions" and value == [ANY_REGION]:
            shown = "[ANY_REGION]"
        else:
            shown = _literal(value)
        args.append(f"{name}={shown}")
    return f"ResourceConfig{builder}({', '.join(args)})"


def _gpu_spec(device: GpuConfig) -> tuple[str, bool]:
    """The ``--gpu`` spec for ``device`` and whether ``parse_gpu_spec`` reads it back."""
    if device.variant == "auto":
        return str(device.count), True
    for spec in (device.variant if device.count == 1 else None, f"{device.variant}x{device.count}"):
        try:
            if spec is not None and parse_gpu_spec(spec) == (device.variant, device.count):
                return spec, True
        except ValueError:
            pass
    return f"{device.variant}x{device.count}", False


def _host_flags(resources: ResourceConfig, spell_out: bool) -> list[str]:
    defaults = builder_defaults(resources.device)
    flags: list[str] = []
    for name, flag in zip(HOST_FIELDS, ("--cpu", "--memory", "--disk")):
        value = getattr(resources, name)
        if spell_out or value != defaults[name]:
            flags += [flag, number(value) if name == "cpu" else str(value)]
    return flags


def _regions(resources: ResourceConfig, any_flag: str | None) -> list[str]:
    regions = resources.regions or []
    if regions == [ANY_REGION]:
        return [any_flag] if any_flag else []
    return [part for region in regions for part in ("--region", region)]


def _env_vars(job: JobRequest) -> list[str]:
    env = job.environment.env_vars if job.environment is not None else {}
    return [part for name, value in env.items() for part in ("-e", name, value)]


def _optional(flag: str, value: object, show: Callable[[Any], str] = str) -> list[str]:
    return [] if value in (None, "", 0) else [flag, show(value)]


def magic_line(job: JobRequest) -> str:
    """The ``%%fray`` line for ``job``: only flags that differ from what ``flags.job_from_args`` fills in.
    (``container_profile``, ``max_retries_preemption`` and ``processes_per_task`` have no flag.) A
    ``#`` line follows when a GPU model cannot be written as a ``--gpu`` spec that parses back."""
    resources, device = job.resources, job.resources.device
    args, note = ["%%fray"], ""
    flag_replicas = 1
    if isinstance(device, TpuConfig):
        slices = max(1, resources.replicas // device.vm_count())
        flag_replicas = slices * device.vm_count()
        args += ["--tpu", device.variant, *(["--slices", str(slices)] if slices != 1 else [])]
    elif isinstance(device, GpuConfig):
        spec, readable = _gpu_spec(device)
        args += ["--gpu", spec]
        note = "" if readable else f"\n# --gpu {spec} does not parse back: flags cannot name the model {device.variant!r}"
    if not isinstance(device, CpuConfig):
        args += [part for alt in resources.device_alternatives or [] for part in ("--alternative", alt)]
    if job.replicas != flag_replicas:
        args += ["--replicas", str(job.replicas)]
    args += _host_flags(resources, spell_out=False)
    args += _regions(resources, "--any-region")
    args += _optional("--zone", resources.zone) + (["--non-preemptible"] if not resources.preemptible else [])
    args += _optional("--target-cluster", resources.target_cluster) + _optional("--image", resources.image)
    args += ["--name", job.name, *_env_vars(job)]
    args += _optional("--priority", job.priority, BAND_NAMES.__getitem__)
    args += _optional("--max-retries", job.max_retries_failure) + _optional("--max-task-failures", job.max_task_failures)
    args += _optional("--timeout", job.timeout and job.timeout.total_seconds(), number)
    return shlex.join(args) + note


def _command(job: JobRequest) -> tuple[str, ...]:
    binary = job.entrypoint.binary_entrypoint
    if binary is not None:
        return (binary.command, *binary.args)
    return ("python", CELL_FILE) if job.entrypoint.cell_entrypoint is not None else PLACEHOLDER_COMMAND


def _not_expressible(job: JobRequest) -> list[str]:
    resources = job.resources
    missing = [text for present, text in (
        (not resources.preemptible, "preemptible=False"),
        (resources.device_alternatives and not isinstance(resources.device, CpuConfig), "device_alternatives"),
        (resources.regions == [ANY_REGION], "regions=[ANY_REGION]"),
        (resources.image, "image"),
        (resources.container_profile, "container_profile"),
        (job.max_task_failures, "max_task_failures"),
        (job.entrypoint.callable_entrypoint is not None,
         f"a Python callable (shown as {shlex.join(PLACEHOLDER_COMMAND)})"),
    ) if present]
    return missing


def iris_command(job: JobRequest) -> str:
    """``iris job run`` for ``job`` (flags as in Iris's CLI: ``-e KEY VALUE``, ``--enable-extra-resources``,
    ``--max-retries``, …), then a ``#`` line naming what it cannot express, if anything. A cell job
    runs ``python cell.py``, after a ``#`` line saying to save the cell there first."""
    resources, device = job.resources, job.resources.device
    args = ["iris", "job", "run", "--job-name", job.name]
    if isinstance(device, TpuConfig):
        args += ["--tpu", device.variant]
    elif isinstance(device, GpuConfig):
        args += ["--gpu", _gpu_spec(device)[0]]
    extra = (not isinstance(device, CpuConfig) or resources.ram_bytes() >= IRIS_EXTRA_MEMORY_BYTES
             or resources.disk_bytes() >= IRIS_EXTRA_DISK_BYTES)
    args += ["--enable-extra-resources"] if extra else []
    args += _host_flags(resources, spell_out=True)
    args += _optional("--replicas", job.replicas if job.replicas != 1 else None)
    args += _regions(resources, None) + _optional("--zone", resources.zone)
    args += _optional("--target-cluster", resources.target_cluster)
    args += _optional("--priority", job.priority, BAND_NAMES.__getitem__)
    args += _optional("--max-retries", job.max_retries_failure)
    args += _optional("--timeout", job.timeout and job.timeout.total_seconds(), lambda s: str(max(1, round(s))))
    args += [*_env_vars(job), "--", *_command(job)]
    missing = _not_expressible(job)
    note = f"\n# iris job run has no flag for: {', '.join(missing)}" if missing else ""
    first = (f"# save the cell's code as {CELL_FILE} in the directory you run this from (iris job run "
             "ships that directory to every task), then:\n") if job.entrypoint.cell_entrypoint is not None else ""
    return first + shlex.join(args) + note
