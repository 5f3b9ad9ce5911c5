"""``ResourcePicker``: choose a job's resources with stock ipywidgets and see, live, what Iris receives.

Rule: every change re-reads all controls into a ``JobRequest`` (``form``) and runs ``plan()`` — the
same Plan submission sends — then renders it with ``views.preview``. Invalid settings show an inline
error naming the control (and mark it); the last valid preview stays only greyed out under a
"stale" banner. Above the preview, ``fitline`` says whether the plan fits the connected cluster
(non-blocking; "no controller" when none runs), what it costs its user's budget and at which band it
will run. Nothing raised while reacting to a control reaches the notebook. Seeding
(constructor or ``.value = ...``) sets every control with observers muted, then plans once.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from html import escape
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from fray_jupyter.planning import Plan, plan

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient
from fray_jupyter.resources.config import ResourceConfig
from fray_jupyter.resources.interop import coerce
from fray_jupyter.resources.job import JobRequest
from fray_jupyter.views.preview import STYLE, render_error_html, render_preview_html
from fray_jupyter.widgets.controls import REGION_MODE_HELP, row, section
from fray_jupyter.widgets.fitline import FitLine
from fray_jupyter.widgets.form import ALTERNATIVES, ControlError, EntrypointLike, Form

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient


def _show(widget: widgets.Widget, visible: bool) -> None:
    widget.layout.display = None if visible else "none"


class ResourcePicker(widgets.HBox):
    """Controls (left) and a live preview of the ``LaunchJobRequest`` (right).

    ``ResourcePicker(resources=rc)`` seeds every control from ``rc`` (fray-jupyter's or Marin's
    ``ResourceConfig``); ``ResourcePicker(job=jr)`` also seeds name, priority, env vars and command.
    ``.value`` is the ``ResourceConfig`` the controls describe (assign one to re-seed; it exists even
    when Iris would reject the job), ``.job()`` the ``JobRequest`` (only a valid one), ``.plan`` the
    Plan for the current settings (None while invalid), ``.error`` why they are invalid.
    ``controls`` holds each control by name, e.g. ``picker.controls.slices.value = 2``.
    ``controller`` (a URL) is the cluster the fit line asks; by default the one ``%%fray`` would use.
    ``.fit`` is the latest verdict and ``.budget`` the latest budget picture (None until known).
    """

    def __init__(self, resources: ResourceConfig | object | None = None, *, job: JobRequest | object | None = None,
                 user: str | None = None, controller: str | None = None, **kwargs: Any) -> None:
        self.form = Form(on_new_box=self._watch)
        self._controller = controller
        self._fit_client: FrayClient | None = None
        self.fitline = FitLine(self._client)
        self.controls, self.alternatives = self.form.controls, self.form.alternatives
        self.preview = widgets.HTML(layout=widgets.Layout(width="100%"))
        self.preview.add_class("fray-preview-area")
        self.notice = widgets.HTML(layout=widgets.Layout(display="none"))
        self._style = widgets.HTML(STYLE, layout=widgets.Layout(display="none"))  # once: a new sheet restyles the page
        self._region_help = widgets.HTML(layout=widgets.Layout(margin="0 0 2px 8px"))
        self._user, self._quiet = user, False
        self._plan: Plan | None = None
        self._last_valid: Plan | None = None  # the last valid plan: what the next change is compared with
        self._previous: Plan | None = None  # the plan shown before the current one
        self._last_html: str | None = None
        self._error: str | None = None
        self._invalid: widgets.Widget | None = None
        c = self.controls
        self._tpu_box = widgets.VBox([c.tpu_family, c.tpu_type, c.slices])
        self._gpu_box = widgets.VBox([c.gpu_family, c.gpu_model, c.gpu_count])
        super().__init__([self._style, self._controls_column(), self._preview_column()], **kwargs)
        self.layout.flex_flow, self.layout.align_items = "row wrap", "flex-start"
        for name, control in c.items():
            if name != "request_format":
                control.observe(self._on_change, names="value")
        c.request_format.observe(self._on_format, names="value")
        for key, box in self.alternatives.boxes().items():
            self._watch(key, box)
        if job is not None:
            job = coerce(job, JobRequest)
            with self._quietly():
                self.form.write_job(job)
            self._seed(job.resources)
        else:
            self._seed(ResourceConfig() if resources is None else coerce(resources, ResourceConfig))

    # -- public API --------------------------------------------------------------------------------
    @property
    def value(self) -> ResourceConfig:
        """The ``ResourceConfig`` the controls describe; ``ValueError`` naming the control if none."""
        try:
            return self.form.resources()
        except ValueError as error:
            raise self.form.named(error) from None

    @value.setter
    def value(self, resources: ResourceConfig | object) -> None:
        self._seed(coerce(resources, ResourceConfig))

    @property
    def plan(self) -> Plan | None:
        """The Plan for the current settings, or None while they are invalid."""
        return self._plan

    @property
    def fit(self) -> Any:
        """The latest ``client.fit.Fit`` for the current plan, or None (no controller, not known yet)."""
        return self.fitline.fit

    @property
    def budget(self) -> Any:
        """The latest ``iris.budget.BudgetPicture`` for the current plan (what it costs its user's budget,
        the band it runs at), or None until known."""
        return self.fitline.budget

    def _client(self) -> FrayClient | None:
        """A client of the controller the fit line asks, or None when none is configured or running."""
        from fray_jupyter.client.client import FrayClient
        from fray_jupyter.client.discovery import resolve
        from fray_jupyter.client.errors import FrayError

        try:
            url, token = resolve(self._controller, None, start=False)
        except FrayError:
            return None
        if self._fit_client is None or self._fit_client.url != url:
            self._fit_client = FrayClient(url, token, timeout=5, retry_for=0)
        return self._fit_client

    @property
    def error(self) -> str | None:
        """Why the current settings are invalid ("Control: message"), or None."""
        return self._error

    def job(self, entrypoint: EntrypointLike | None = None) -> JobRequest:
        """The ``JobRequest`` for the current settings, running ``entrypoint`` (an ``Entrypoint``, a
        callable, or a command line or argv list) or, by default, the picker's command. Planned before
        it is returned: ``ValueError`` naming the control when Iris would reject it."""
        try:
            job = self.form.job(self.form.resources(), entrypoint)
            plan(job, user=self._user)
        except ValueError as error:
            raise self.form.named(error) from None
        return job

    # -- layout ------------------------------------------------------------------------------------
    def _controls_column(self) -> widgets.VBox:
        c = self.controls
        column = widgets.VBox([
            self.notice,
            section("Device", c.kind, self._tpu_box, self._gpu_box, c.replicas, self.alternatives.box),
            section("Placement", c.region_mode, self._region_help, c.regions, c.zone, c.preemptible, c.target_cluster),
            section("Host resources per task <span class='fray-hint'>(blank = default)</span>", c.cpu, c.ram, c.disk),
            section("Job", c.name, c.priority, c.image, c.env, c.command),
        ], layout=widgets.Layout(flex="0 0 400px", margin="0 16px 0 0"))
        column.add_class("fray-controls")
        return column

    def _preview_column(self) -> widgets.VBox:
        return widgets.VBox([row(self.controls.request_format), self.fitline.widget, self.preview],
                            layout=widgets.Layout(flex="1 1 440px", min_width="0"))

    def _watch(self, key: str, box: widgets.Checkbox) -> None:
        def ticked(change: dict[str, Any]) -> None:
            self.alternatives.track(key, bool(change["new"]))
            self._on_change(change)

        box.observe(ticked, names="value")

    # -- reacting to controls ----------------------------------------------------------------------
    @contextmanager
    def _quietly(self) -> Iterator[None]:
        was, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = was

    def _on_change(self, _change: object = None) -> None:
        if self._quiet:
            return
        try:
            with self._quietly():
                self._sync()
        except Exception as error:  # noqa: BLE001 - the widget must never raise into the notebook
            self._fail(error)
            return
        self._refresh()

    def _sync(self) -> None:
        c, kind = self.controls, self.controls.kind.value
        _show(self._tpu_box, kind == "tpu")
        _show(self._gpu_box, kind == "gpu")
        _show(c.replicas, kind != "tpu")
        _show(self.alternatives.box, kind != "cpu")
        _show(c.regions, c.region_mode.value == "pin")
        self._region_help.value = f"<div class='fray-hint'>{REGION_MODE_HELP[c.region_mode.value]}</div>"
        self.form.sync()

    def _seed(self, resources: ResourceConfig) -> None:
        with self._quietly():
            notes = self.form.write(resources)
            self._sync()
        self.notice.value = "".join(f"<div class='fray-hint'>ⓘ {escape(note)}</div>" for note in notes)
        _show(self.notice, bool(notes))
        self._refresh()

    # -- planning and rendering --------------------------------------------------------------------
    def _refresh(self) -> None:
        try:
            new = plan(self.form.job(self.form.resources()), user=self._user)
            html = render_preview_html(new, previous=self._last_valid, request_format=self.controls.request_format.value,
                                       style=False)
        except Exception as error:  # noqa: BLE001 - shown inline, never raised into the notebook
            self._fail(error)
            return
        self._previous, self._plan, self._last_valid, self._error = self._last_valid, new, new, None
        self._mark(None)
        self._last_html = self.preview.value = html
        self.fitline.update(new)

    def _on_format(self, _change: object) -> None:
        if self._plan is None:
            return
        try:
            html = render_preview_html(self._plan, previous=self._previous,
                                       request_format=self.controls.request_format.value, style=False)
        except Exception as error:  # noqa: BLE001 - shown inline, never raised into the notebook
            self._fail(error)
            return
        self._last_html = self.preview.value = html

    def _fail(self, error: Exception) -> None:
        named: ControlError = self.form.named(error)
        self._plan, self._error = None, str(named)
        self.fitline.update(None)
        self._mark(named.control)
        self.preview.value = render_error_html(named.message, control=named.label, stale_html=self._last_html,
                                               style=False)

    def _mark(self, control: str | None) -> None:
        if self._invalid is not None:
            self._invalid.remove_class("fray-invalid")
        self._invalid = None
        if control is not None:
            self._invalid = self.alternatives.grid if control == ALTERNATIVES else getattr(self.controls, control)
            self._invalid.add_class("fray-invalid")
