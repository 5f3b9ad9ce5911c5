"""The picker's "will it fit?" line: the verdict of ``client.fit`` for the current plan, which
device types and regions the connected cluster offers, and what the job costs its user's budget and at
which band it runs (``client.budget``: without a controller, only the job's own spend).

Rules: never blocks the picker — a gang no slice can hold is ``never`` at once (no controller
needed); otherwise the verdict is computed on one background thread (the controller's shape is
cached ~10 s by ``fit``) and only the newest request's answer is shown. The controller is the one
the notebook would use (``$FRAY_CONTROLLER_URL`` or the running embedded controller, never started
here); with none, the line says so. A dim line lists the device types (of the chosen kind) and
regions the cluster offers; one it has no group for stays selectable, with one line saying "this
cluster has no group for …".
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from html import escape
from typing import TYPE_CHECKING, Final

import ipywidgets as widgets

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient
    from fray_jupyter.client.fit import Fit
    from fray_jupyter.iris.budget import BudgetPicture
    from fray_jupyter.planning import Plan

NO_CONTROLLER: Final[str] = ("fit: no controller — start one (`fray-jupyter controller`) or submit once to see "
                             "whether this fits a cluster")


def offered(client: FrayClient, kind: str = "") -> tuple[set[str], set[str]]:
    """(device variants of ``kind`` — any kind when empty —, regions) the controller's scale groups
    offer, variants lowercase (cached with fit's shape)."""
    from fray_jupyter.client.fit import shape

    status, _, _ = shape(client)
    groups = status.status.groups
    variants = {g.device_variant.lower() for g in groups if g.device_variant and g.device_type in (kind or g.device_type)}
    return variants, {g.region for g in groups if g.region}


def catalog(kind: str, variants: set[str], regions: set[str]) -> str:
    """One line marking what the cluster offers for a kind of device ("tpu", "gpu", "cpu"):
    "this cluster has tpu v4-32, v5p-8 · regions us-central1"."""
    where = ", ".join(sorted(regions)) or "none named"
    if kind == "cpu":
        return f"this cluster's regions: {where}"
    shown = ", ".join(sorted(variants)) or "none"
    return f"this cluster has {kind} {shown} · regions {where}"


def missing(plan: Plan, variants: set[str], regions: set[str]) -> list[str]:
    """What ``plan`` asks for that no group offers: its device variants (when none is offered) and
    its pinned regions (when none is offered)."""
    wanted = [v.lower() for v in (plan.device.variant, *(plan.job.resources.device_alternatives or ()))]
    gaps = []
    if plan.chips_per_task and not any(v in variants for v in wanted):
        gaps.append(" / ".join(wanted))
    pinned = [c.values for c in plan.wire_constraints if c.key == "region"]
    if pinned and not any(r in regions for values in pinned for r in values):
        gaps.append("region " + " / ".join(r for values in pinned for r in values))
    return gaps


class FitLine:
    """An HTML widget showing the verdict for the latest plan given to ``update``."""

    def __init__(self, connect: Callable[[], FrayClient | None]) -> None:
        self.widget = widgets.HTML()
        self.widget.add_class("fray-fit-line")
        self.fit: Fit | None = None
        self.budget: BudgetPicture | None = None
        self._connect = connect
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fray-fit")
        self._lock = threading.Lock()
        self._generation = 0
        self.pending: Future[None] | None = None

    def update(self, plan: Plan | None) -> None:
        """Show the verdict for ``plan`` (None: clear the line) without waiting for a controller."""
        from fray_jupyter.client.budget import budget

        with self._lock:
            self._generation += 1
            generation = self._generation
        if plan is None:
            self._show(generation, None, "")
            return
        if plan.errors:
            from fray_jupyter.client.fit import Fit

            self._show(generation, Fit("never", plan.errors[0]), "", picture=budget(plan, None))
            return
        self.pending = self._pool.submit(self._compute, plan, generation)

    def _compute(self, plan: Plan, generation: int) -> None:
        from fray_jupyter.client.budget import budget
        from fray_jupyter.client.errors import FrayError
        from fray_jupyter.client.fit import fit

        client = self._connect()
        if client is None:
            self._show(generation, None, NO_CONTROLLER, picture=budget(plan, None))
            return
        try:
            result = fit(plan, client)
            gaps = missing(plan, *offered(client))
            kind = plan.request.resources.device.WhichOneof("device") or "cpu"
            marks = catalog(kind, *offered(client, kind))
        except FrayError as error:
            self._show(generation, None, f"fit: unknown — {' '.join(str(error).split())}", picture=budget(plan, None))
            return
        note = f"this cluster has no group for {', '.join(gaps)}" if gaps else ""
        self._show(generation, result, note, marks, budget(plan, client))

    def _show(self, generation: int, result: Fit | None, note: str, marks: str = "",
              picture: BudgetPicture | None = None) -> None:
        from fray_jupyter.views.preview import render_budget

        with self._lock:
            if generation != self._generation:
                return
            self.fit, self.budget = result, picture
        verdict = result.verdict if result is not None else "unknown"
        lines = [result.line] if result is not None else []
        if result is not None and result.candidates:
            lines.append("on " + ", ".join(str(c) for c in result.candidates[:3]))
        if note:
            lines.append(note)
        dim = f'<br><span class="fray-hint fray-offered">{escape(marks)}</span>' if marks else ""
        shown = (f'<div class="fray-fit" data-verdict="{verdict}">'
                 + "<br>".join(escape(line) for line in lines) + dim + "</div>") if lines else ""
        self.widget.value = shown + (render_budget(picture) if picture is not None else "")

    def wait(self, timeout: float = 10.0) -> Fit | None:
        """Block until the newest verdict (and budget picture) is shown (for tests and scripts); returns it."""
        if self.pending is not None:
            self.pending.result(timeout)
        return self.fit
