"""The picker's stock ipywidgets controls and their layout: labelled, with units, built from the
resource tables. No rules live here beyond which options to offer; ``picker`` wires them to ``plan()``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any, Final

import ipywidgets as widgets

from fray_jupyter.resources.config import MAX_REPLICAS
from fray_jupyter.resources.devices import MAX_GPUS_PER_REPLICA, AnyDevice, TpuConfig, tpu_family
from fray_jupyter.resources.tables import (
    DEFAULT_TPU_HOST_FRACTION,
    GPU_FAMILIES,
    PRIORITY_BANDS,
    TPU_FAMILIES,
    TPU_TOPOLOGIES,
    TpuTopologyInfo,
)

LABEL_WIDTH: Final = "118px"
CONTROL_WIDTH: Final = "392px"
OTHER_GPUS: Final = "Other"  # the GPU family listing models seeded from a config but absent from the table
KINDS: Final = (("CPU", "cpu"), ("GPU", "gpu"), ("TPU", "tpu"))
REGION_MODES: Final = (("unset", "inherit"), ("pin", "pin"), ("ANY", "any"))
REGION_MODE_HELP: Final = {
    "inherit": "unset: a child job inherits its parent's region; a root job runs anywhere",
    "pin": "only these regions (comma-separated)",
    "any": "anywhere, and do not inherit the parent's region (ANY_REGION)",
}
PRIORITY_LABELS: Final = {"inherit": "inherit (controller decides)"}
FORMATS: Final = (("protobuf text", "text"), ("JSON", "json"))
DEFAULT_COMMAND: Final = "python main.py"


def tpu_types(family: str) -> list[TpuTopologyInfo]:
    """TPU slice types of one family, smallest first."""
    return [t for t in TPU_TOPOLOGIES if tpu_family(t.name) == family]


def shape(info: TpuTopologyInfo) -> str:
    """A VM shape in words: "1 VM × 4 chips"."""
    vms = "1 VM" if info.vm_count == 1 else f"{info.vm_count} VMs"
    return f"{vms} × {info.chips_per_vm} chips"


def tpu_label(info: TpuTopologyInfo) -> str:
    """A TPU type's option label: name, chips, VM shape ("v4-32 · 16 chips · 4 VMs × 4 chips")."""
    return f"{info.name} · {info.chip_count} chips · {shape(info)}"


def gpu_family(variant: str) -> str:
    """The picker's family for a GPU model, ``OTHER_GPUS`` when the table does not list it."""
    return next((family for family, models in GPU_FAMILIES.items() if variant in models), OTHER_GPUS)


def host_hints(device: AnyDevice, defaults: dict[str, Any]) -> dict[str, str]:
    """Placeholders for the cpu/ram/disk overrides: the builder's default and where it comes from,
    e.g. cpu "104 (50 % of v5p host)"."""
    if isinstance(device, TpuConfig):
        share = f"{DEFAULT_TPU_HOST_FRACTION:.0%}".replace("%", " %")
        origin = f"{share} of {tpu_family(device.variant)} host"
        return {"cpu": f"{defaults['cpu']:g} ({origin})", "ram": f"{defaults['ram']} ({origin})",
                "disk": f"{defaults['disk']} (TPU default)"}
    return {"cpu": f"{defaults['cpu']:g} (Fray default)", "ram": f"{defaults['ram']} (Fray default)",
            "disk": f"{defaults['disk']} (Fray default)"}


def _style(widget: widgets.Widget, key: str) -> None:
    widget.add_class(f"fray-{key.replace('_', '-')}")
    if hasattr(widget, "style") and "description_width" in widget.style.keys:
        widget.style.description_width = LABEL_WIDTH
    widget.layout.width = CONTROL_WIDTH
    if isinstance(widget, (widgets.Text, widgets.Textarea)):
        widget.continuous_update = False  # plan on Enter or leaving the field, not on every keystroke


@dataclass
class Controls:
    """Every control, by the name the picker and tests use. Each has the CSS class ``fray-<name>``."""

    kind: widgets.ToggleButtons
    tpu_family: widgets.ToggleButtons
    tpu_type: widgets.Dropdown
    slices: widgets.BoundedIntText
    gpu_family: widgets.Dropdown
    gpu_model: widgets.Dropdown
    gpu_count: widgets.BoundedIntText
    replicas: widgets.BoundedIntText
    region_mode: widgets.ToggleButtons
    regions: widgets.Text
    zone: widgets.Text
    preemptible: widgets.Checkbox
    target_cluster: widgets.Text
    image: widgets.Text
    cpu: widgets.Text
    ram: widgets.Text
    disk: widgets.Text
    name: widgets.Text
    priority: widgets.Dropdown
    env: widgets.Textarea
    command: widgets.Text
    request_format: widgets.ToggleButtons

    def items(self) -> Iterable[tuple[str, widgets.ValueWidget]]:
        """(name, control) pairs in declaration order."""
        return ((f.name, getattr(self, f.name)) for f in fields(self))

    def label(self, name: str) -> str:
        """The visible label of a control (its description)."""
        return str(getattr(self, name).description or name.replace("_", " ").capitalize())


def build_controls() -> Controls:
    """Fresh controls with Fray's defaults (a CPU job)."""
    first_tpu = tpu_types(TPU_FAMILIES[0])
    first_gpus = next(iter(GPU_FAMILIES.values()))
    priorities = [(PRIORITY_LABELS.get(name, name), number) for name, number in PRIORITY_BANDS.items()]
    c = Controls(
        kind=widgets.ToggleButtons(options=KINDS, value="cpu", description="Device"),
        tpu_family=widgets.ToggleButtons(options=TPU_FAMILIES, description="TPU family"),
        tpu_type=widgets.Dropdown(options=[(tpu_label(t), t.name) for t in first_tpu], description="TPU type"),
        slices=widgets.BoundedIntText(value=1, min=1, max=MAX_REPLICAS, description="Slices"),
        gpu_family=widgets.Dropdown(options=list(GPU_FAMILIES), description="GPU family"),
        gpu_model=widgets.Dropdown(options=first_gpus, description="GPU model"),
        gpu_count=widgets.BoundedIntText(value=1, min=1, max=MAX_GPUS_PER_REPLICA, description="GPUs per task"),
        replicas=widgets.BoundedIntText(value=1, min=1, max=MAX_REPLICAS, description="Replicas"),
        region_mode=widgets.ToggleButtons(options=REGION_MODES, value="inherit", description="Regions"),
        regions=widgets.Text(placeholder="us-central1, us-east5", description="Region list"),
        zone=widgets.Text(placeholder="(any zone)", description="Zone"),
        preemptible=widgets.Checkbox(value=True, description="Preemptible (may be reclaimed)", indent=False),
        target_cluster=widgets.Text(placeholder="(this cluster)", description="Target cluster"),
        image=widgets.Text(placeholder="(cluster default)", description="Task image"),
        cpu=widgets.Text(description="CPU (cores)"),
        ram=widgets.Text(description="RAM", tooltip="binary units: 16g = 16 GiB"),
        disk=widgets.Text(description="Disk", tooltip="binary units: 50g = 50 GiB"),
        name=widgets.Text(value="job", description="Job name"),
        priority=widgets.Dropdown(options=priorities, value=0, description="Priority"),
        env=widgets.Textarea(placeholder="KEY=value, one per line", description="Env vars", rows=3),
        command=widgets.Text(value=DEFAULT_COMMAND, description="Command"),
        request_format=widgets.ToggleButtons(options=FORMATS, value="text", description="Request as"),
    )
    for name, control in c.items():
        _style(control, name)
    for toggles in (c.kind, c.tpu_family, c.region_mode):
        toggles.style.button_width = "62px"
        toggles.add_class("widget-inline-hbox")  # label beside the buttons, like every other control
    c.request_format.style.button_width = "110px"
    c.preemptible.layout.margin = f"2px 0 2px {LABEL_WIDTH}"
    return c


def row(*children: widgets.Widget) -> widgets.HBox:
    """Children side by side."""
    return widgets.HBox(list(children), layout=widgets.Layout(align_items="center"))


def section(title: str, *children: widgets.Widget) -> widgets.VBox:
    """A titled group of controls."""
    header = widgets.HTML(f"<b>{title}</b>", layout=widgets.Layout(margin="8px 0 2px"))
    return widgets.VBox([header, *children])
