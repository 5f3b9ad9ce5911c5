"""Controls <-> Fray objects: read the picker's controls into a ``ResourceConfig`` and ``JobRequest``
(every error names the control at fault), write a config back into them, and keep dependent
controls (option lists, alternatives, default placeholders) in line with the rest.

Rules: blank cpu/ram/disk mean the builder's default; regions are unset, pinned (comma-separated)
or ANY; fields without a control (``container_profile``, a TPU ``topology`` while the type is
unchanged, the seeded job's other fields) are carried over from what was seeded.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Sequence
from typing import Any, Final

import ipywidgets as widgets

from fray_jupyter.resources.config import ANY_REGION, HOST_FIELDS, ResourceConfig, builder_defaults
from fray_jupyter.resources.devices import (
    AnyDevice,
    CpuConfig,
    GpuConfig,
    TpuConfig,
    get_tpu_topology,
    tpu_family,
)
from fray_jupyter.resources.entrypoint import Entrypoint
from fray_jupyter.resources.environment import EnvironmentConfig
from fray_jupyter.resources.job import JobRequest
from fray_jupyter.resources.tables import GPU_FAMILIES
from fray_jupyter.views.snippets import number
from fray_jupyter.widgets.alternatives import TITLE as ALTERNATIVES_TITLE
from fray_jupyter.widgets.alternatives import Alternatives
from fray_jupyter.widgets.controls import (
    OTHER_GPUS,
    build_controls,
    gpu_family,
    host_hints,
    tpu_label,
    tpu_types,
)

ALTERNATIVES: Final = "alternatives"
# Error text (from the models or plan()) -> the control at fault; the first match wins.
ERROR_CONTROLS: Final = (
    (r"ResourceConfig\.cpu\b", "cpu"), (r"ResourceConfig\.ram\b", "ram"), (r"ResourceConfig\.disk\b", "disk"),
    (r"ResourceConfig\.regions\b|ANY_REGION", "regions"), (r"alternatives", ALTERNATIVES),
    (r"GpuConfig\.count|node-saturating", "gpu_count"),
    (r"ResourceConfig\.replicas|replicas \d+ must|nodes do not divide|rack slices|slice_count", "replicas"),
    (r"JobRequest\.name", "name"), (r"JobRequest\.priority", "priority"),
    (r"EnvironmentConfig|environment variable", "env"),
)
MODEL_FIELD: Final = re.compile(r"^[A-Z]\w+\.\w+: ")  # "ResourceConfig.ram: ": the label names it better
EntrypointLike = Entrypoint | Callable[..., Any] | str | Sequence[str]


class ControlError(ValueError):
    """A setting no job can have; ``control`` names the control at fault (None: no single one)."""

    def __init__(self, control: str | None, label: str | None, message: str) -> None:
        super().__init__(f"{label}: {message}" if label else message)
        self.control, self.label, self.message = control, label, message


class Form:
    """The controls plus what was seeded into them. ``on_new_box`` is called for each checkbox
    created for a GPU model the tables do not list."""

    def __init__(self, on_new_box: Callable[[str, widgets.Checkbox], None]) -> None:
        self.controls = build_controls()
        self.alternatives = Alternatives()
        self.base = ResourceConfig()
        self.job_base: JobRequest | None = None
        self.entrypoint: Entrypoint | None = None  # a seeded non-binary entrypoint (the command is then fixed)
        self.custom_gpus: list[str] = []
        self._on_new_box = on_new_box

    # -- errors ------------------------------------------------------------------------------------
    def error(self, control: str | None, message: str) -> ControlError:
        """An error naming ``control`` by its label (replicas is "Slices" for a TPU)."""
        if control == "replicas" and self.controls.kind.value == "tpu":
            control = "slices"
        label = ALTERNATIVES_TITLE if control == ALTERNATIVES else self.controls.label(control) if control else None
        return ControlError(control, label, message)

    def named(self, error: Exception) -> ControlError:
        """``error`` as a ``ControlError``, its control found from the message (``ERROR_CONTROLS``)."""
        if isinstance(error, ControlError):
            return error
        message = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
        control = next((name for pattern, name in ERROR_CONTROLS if re.search(pattern, message)), None)
        return self.error(control, MODEL_FIELD.sub("", message) if control else message)

    # -- dependent controls ------------------------------------------------------------------------
    def device(self) -> AnyDevice:
        """The primary device the controls show."""
        c = self.controls
        if c.kind.value == "tpu":
            return TpuConfig(variant=c.tpu_type.value)
        if c.kind.value == "gpu":
            return GpuConfig(variant=c.gpu_model.value, count=c.gpu_count.value)
        return CpuConfig()

    def sync(self) -> None:
        """Option lists for the chosen family, the alternatives on offer, the default placeholders."""
        c = self.controls
        if c.kind.value == "tpu":
            types = tpu_types(c.tpu_family.value)
            if c.tpu_type.value not in [t.name for t in types]:  # a new family: keep the VM shape if it has it
                old = get_tpu_topology(c.tpu_type.value)
                same = [t for t in types if (t.vm_count, t.chips_per_vm) == (old.vm_count, old.chips_per_vm)]
                with c.tpu_type.hold_sync():
                    c.tpu_type.options = [(tpu_label(t), t.name) for t in types]
                    c.tpu_type.value = (same or types)[0].name
            self.alternatives.offer_tpu(c.tpu_type.value)
        elif c.kind.value == "gpu":
            models = list(GPU_FAMILIES.get(c.gpu_family.value, self.custom_gpus))
            if c.gpu_model.value not in models:
                with c.gpu_model.hold_sync():
                    c.gpu_model.options, c.gpu_model.value = models, models[0]
            self.alternatives.offer_gpu(c.gpu_model.value, c.gpu_count.value, c.replicas.value)
        hints = host_hints(self.device(), builder_defaults(self.device()))
        for name in HOST_FIELDS:
            getattr(c, name).placeholder = hints[name]

    # -- reading -----------------------------------------------------------------------------------
    def _common(self) -> dict[str, Any]:
        c, common = self.controls, dict[str, Any]()
        for name in HOST_FIELDS:
            text = getattr(c, name).value.strip()
            if text and name == "cpu":
                try:
                    common[name] = float(text)
                except ValueError:
                    raise self.error("cpu", f"{text!r} is not a number of cores; write e.g. 8 or 0.5, "
                                            "or leave it blank for the default") from None
            elif text:
                common[name] = text
        if c.region_mode.value == "any":
            common["regions"] = [ANY_REGION]
        elif c.region_mode.value == "pin":
            regions = [r for r in re.split(r"[,\s]+", c.regions.value) if r]
            if not regions:
                raise self.error("regions", "list at least one region (e.g. us-central1), or choose unset or ANY")
            common["regions"] = regions
        for name in ("zone", "target_cluster", "image"):
            if text := getattr(c, name).value.strip():
                common[name] = text
        if not c.preemptible.value:
            common["preemptible"] = False
        if self.base.container_profile:
            common["container_profile"] = self.base.container_profile
        return common

    def resources(self) -> ResourceConfig:
        """The ``ResourceConfig`` the controls describe (``ValueError`` from the model if invalid)."""
        c, common = self.controls, self._common()
        alternatives = self.alternatives.selected(tpu=c.kind.value == "tpu")
        if c.kind.value == "tpu":
            resources = ResourceConfig.with_tpu([c.tpu_type.value, *alternatives], slice_count=c.slices.value, **common)
            seeded = self.base.device
            if isinstance(seeded, TpuConfig) and seeded.topology and seeded.variant == c.tpu_type.value:
                resources = ResourceConfig(**{**dict(resources), "device": seeded})
            return resources
        if c.kind.value == "gpu":
            return ResourceConfig.with_gpu(c.gpu_model.value, count=c.gpu_count.value, replicas=c.replicas.value,
                                           device_alternatives=alternatives or None, **common)
        return ResourceConfig.with_cpu(replicas=c.replicas.value, **common)

    def _env(self) -> dict[str, str]:
        env: dict[str, str] = {}
        for index, line in enumerate(self.controls.env.value.splitlines(), 1):
            if not line.strip():
                continue
            name, equals, value = line.partition("=")
            if not equals or not name.strip():
                raise self.error("env", f"line {index} {line!r} must look like KEY=value")
            env[name.strip()] = value
        return env

    def _entrypoint(self, given: EntrypointLike | None) -> Entrypoint:
        if isinstance(given, Entrypoint):
            return given
        if given is None and self.entrypoint is not None:
            return self.entrypoint
        command = self.controls.command.value if given is None else given
        if isinstance(command, str):
            try:
                argv = shlex.split(command)
            except ValueError as error:
                raise self.error("command", f"{error} in {command!r}") from None
        elif isinstance(command, (list, tuple)):
            argv = [str(part) for part in command]
        elif callable(command):
            return Entrypoint.from_callable(command)
        else:
            raise self.error("command", f"expected an Entrypoint, a callable, a command line or an argv list, "
                                        f"got {type(command).__name__}")
        if not argv:
            raise self.error("command", "give the command each task runs, e.g. python train.py")
        return Entrypoint.from_binary(argv[0], argv[1:])

    def job(self, resources: ResourceConfig, entrypoint: EntrypointLike | None = None) -> JobRequest:
        """The ``JobRequest`` running ``entrypoint`` (default: the command control) on ``resources``."""
        c, env = self.controls, self._env()
        base_env = self.job_base.environment if self.job_base is not None else None
        environment = base_env.model_copy(update={"env_vars": env}) if base_env is not None else (
            EnvironmentConfig(workspace=os.getcwd(), env_vars=env) if env else None)
        fields = dict(self.job_base) if self.job_base is not None else {}
        fields.update(name=c.name.value.strip(), entrypoint=self._entrypoint(entrypoint), resources=resources,
                      environment=environment, priority=c.priority.value, replicas=None)
        return JobRequest(**fields)

    # -- writing -----------------------------------------------------------------------------------
    def write_job(self, job: JobRequest) -> None:
        """Name, priority, env vars and command from ``job`` (its resources: ``write``)."""
        c = self.controls
        self.job_base = job
        c.name.value, c.priority.value = job.name, job.priority
        env = job.environment.env_vars if job.environment is not None else {}
        c.env.value = "\n".join(f"{name}={value}" for name, value in env.items())
        binary = job.entrypoint.binary_entrypoint
        self.entrypoint = None if binary is not None else job.entrypoint
        c.command.value = shlex.join([binary.command, *binary.args]) if binary else "(the job's Python entrypoint)"
        c.command.disabled = binary is None

    def write(self, resources: ResourceConfig) -> list[str]:
        """Set every resource control from ``resources``; return notes on what could not be shown."""
        c, device, notes = self.controls, resources.device, []
        alternatives = list(resources.device_alternatives or [])
        self.base = resources
        c.kind.value = device.kind
        keys: list[str] = []
        if isinstance(device, TpuConfig):
            c.tpu_family.value = tpu_family(device.variant)
            with c.tpu_type.hold_sync():
                c.tpu_type.options = [(tpu_label(t), t.name) for t in tpu_types(c.tpu_family.value)]
                c.tpu_type.value = device.variant
            slices, rest = divmod(resources.replicas, device.vm_count())
            if rest or not slices:
                notes.append(f"replicas={resources.replicas} is not a whole number of {device.variant} slices "
                             f"({device.vm_count()} VMs each); the picker asks for {max(1, slices)} slice(s).")
            c.slices.value, keys = max(1, slices), [tpu_family(a) for a in alternatives]
        elif isinstance(device, GpuConfig):
            self._write_gpu(device, alternatives)
            c.replicas.value, keys = resources.replicas, alternatives
        else:
            c.replicas.value = resources.replicas
            if alternatives:
                notes.append("device_alternatives are ignored for a CPU device; the picker drops them.")
        self.alternatives.set_ticked(keys)
        regions = resources.regions or []
        c.region_mode.value = "inherit" if not regions else "any" if regions == [ANY_REGION] else "pin"
        c.regions.value = ", ".join(regions) if c.region_mode.value == "pin" else ""
        c.zone.value, c.target_cluster.value = resources.zone or "", resources.target_cluster or ""
        c.image.value, c.preemptible.value = resources.image or "", resources.preemptible
        defaults = builder_defaults(device)
        for name in HOST_FIELDS:
            value = getattr(resources, name)
            getattr(c, name).value = "" if value == defaults[name] else number(value) if name == "cpu" else value
        return notes

    def _write_gpu(self, device: GpuConfig, alternatives: list[str]) -> None:
        c = self.controls
        for model in [device.variant, *alternatives]:
            if gpu_family(model) == OTHER_GPUS and model not in self.custom_gpus:
                self.custom_gpus.append(model)
            if (box := self.alternatives.add_gpu(model)) is not None:
                self._on_new_box(model, box)
        families = list(GPU_FAMILIES) + ([OTHER_GPUS] if self.custom_gpus else [])
        if list(c.gpu_family.options) != families:
            c.gpu_family.options = families
        c.gpu_family.value = gpu_family(device.variant)
        with c.gpu_model.hold_sync():
            c.gpu_model.options = list(GPU_FAMILIES.get(c.gpu_family.value, self.custom_gpus))
            c.gpu_model.value = device.variant
        c.gpu_count.value = device.count
