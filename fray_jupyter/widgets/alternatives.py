"""The "also accept" checkboxes of a flexible request, and which alternatives to offer.

Rules: a TPU alternative must share the primary's VM shape (vm_count and chips_per_vm; a VM is
indivisible), and a family has at most one type of a given shape, so there is one box per other
family, showing that family's same-shape type or disabled when it has none. A GPU alternative must
gang at the primary's coscheduling level at the current replica count, so there is one box per
model, disabled when its level differs (a ticked box stays enabled so it can be unticked). The
order boxes were ticked in is the order of ``device_alternatives``.
"""

from __future__ import annotations

from typing import Final

import ipywidgets as widgets

from fray_jupyter.iris.coscheduling import gpu_gang_coscheduling_level
from fray_jupyter.resources.devices import get_tpu_topology
from fray_jupyter.resources.tables import GPU_FAMILIES, TPU_FAMILIES
from fray_jupyter.widgets.controls import CONTROL_WIDTH, shape, tpu_types

TITLE: Final = "Also accept"


def _gpu_level(variant: str, count: int, replicas: int) -> str | None:
    try:
        return gpu_gang_coscheduling_level(variant, count, replicas)
    except ValueError:
        return None


class Alternatives:
    """Checkboxes by key (a TPU family or a GPU model), the ticking order, and a note saying why
    some are greyed out. ``box`` is the whole group, ready to place in a layout."""

    def __init__(self) -> None:
        self.note = widgets.HTML(layout=widgets.Layout(width=CONTROL_WIDTH, margin="0 0 4px 8px"))
        self.tpu = {family: self._box(family) for family in TPU_FAMILIES}
        self.gpu = {model: self._box(model) for models in GPU_FAMILIES.values() for model in models}
        self.order: list[str] = []
        self.grid = widgets.GridBox(layout=widgets.Layout(grid_template_columns="repeat(auto-fill, minmax(120px, 1fr))",
                                                          width=CONTROL_WIDTH, margin="0 0 0 8px"))
        self.grid.add_class("fray-alternatives")
        title = widgets.HTML(f"{TITLE} <span class='fray-hint'>(flexible request: any one of these)</span>")
        self.box = widgets.VBox([title, self.grid, self.note])

    @staticmethod
    def _box(key: str) -> widgets.Checkbox:
        box = widgets.Checkbox(value=False, description=key, indent=False, layout=widgets.Layout(width="auto"))
        box.add_class(f"fray-alt-{key.lower()}")
        return box

    def boxes(self) -> dict[str, widgets.Checkbox]:
        """Every checkbox by key."""
        return {**self.tpu, **self.gpu}

    def add_gpu(self, model: str) -> widgets.Checkbox | None:
        """A new checkbox for a GPU model the table does not list; None when it exists already."""
        if model in self.gpu:
            return None
        self.gpu[model] = self._box(model)
        return self.gpu[model]

    def track(self, key: str, ticked: bool) -> None:
        """Keep the ticking order in step with one box."""
        if ticked and key not in self.order:
            self.order.append(key)
        elif not ticked and key in self.order:
            self.order.remove(key)

    def set_ticked(self, keys: list[str]) -> None:
        """Tick exactly ``keys``, in that order."""
        for key, box in self.boxes().items():
            box.value = key in keys
        self.order = list(keys)

    def _untick(self, key: str, box: widgets.Checkbox) -> None:
        box.value = False
        self.track(key, False)

    def offer_tpu(self, primary: str) -> None:
        """Offer, per other family, its type of the same VM shape as ``primary``."""
        want = get_tpu_topology(primary)
        family = next(f for f in TPU_FAMILIES if primary in [t.name for t in tpu_types(f)])
        missing = []
        for other, box in self.tpu.items():
            match = next((t.name for t in tpu_types(other)
                          if (t.vm_count, t.chips_per_vm) == (want.vm_count, want.chips_per_vm)), None)
            box.layout.display = "none" if other == family else None
            if other == family or match is None:
                self._untick(other, box)
            if other != family and match is None:
                missing.append(other)
            box.description, box.disabled = match or f"{other}: none", match is None
        self._show(list(self.tpu.values()), f"Greyed out: no {', '.join(missing)} type has this {shape(want)} "
                   "shape; a VM is indivisible, so alternatives must share it." if missing else "")

    def offer_gpu(self, primary: str, count: int, replicas: int) -> None:
        """Offer every other model that gangs like ``primary`` at ``replicas`` tasks of ``count`` GPUs."""
        level = _gpu_level(primary, count, replicas)
        apart = False
        for model, box in self.gpu.items():
            box.layout.display = "none" if model == primary else None
            if model == primary:
                self._untick(model, box)
            fits = replicas <= 1 or _gpu_level(model, count, replicas) == level
            box.disabled = not fits and not box.value
            apart = apart or (not fits and model != primary)
        self._show(list(self.gpu.values()), f"Greyed out: at {replicas} replicas they would gang by another "
                   f"level than {primary} ({level or 'invalid'}); alternatives must share one." if apart else "")

    def selected(self, tpu: bool) -> list[str]:
        """The ticked alternatives' names, in ticking order: TPU types (``tpu``) or GPU models."""
        if tpu:
            return [self.tpu[key].description for key in self.order if key in self.tpu]
        return [key for key in self.order if key in self.gpu]

    def _show(self, boxes: list[widgets.Checkbox], note: str) -> None:
        if tuple(self.grid.children) != tuple(boxes):
            self.grid.children = boxes
        self.note.value = f"<div class='fray-hint'>{note}</div>" if note else ""
