"""``JobStatusPanel``: one job and the jobs below it, live, in a notebook output — stock
ipywidgets over ``views.job``, ``views.tree`` and ``views.snapshot``.

Rules:

* A background thread refreshes the panel (``refresh``): the job's diagnosis (status, tasks with
  their attempts, the failed ones' root causes, each task's status text: ``client.diagnostics``),
  its tree (``client.tree``: one CHILDREN page per parent shown, none for a settled subtree), and
  the log rows after the log box's cursor (by default the whole tree's); it stops once the job is
  terminal, the jobs below it have ended and its last log rows are in. The kernel stays free for
  other cells meanwhile (ipykernel sends widget updates from threads).
* When the controller has a change feed (the embedded one: ``widgets.feed``, one listener per
  client shared by all panels), the thread refreshes when the feed says the job or a job below it
  changed — at most every ``FEED_MIN_INTERVAL`` s, so a chatty tree costs a few refreshes a second
  — and at least every ``FEED_REFRESH`` s; it does not poll. Otherwise (a real Iris, a gRPC URL,
  or while the feed is down) it polls every ``poll_first`` seconds while something changes and
  backs off by ``BACKOFF`` per quiet poll up to ``poll_max``, so an idle job costs little.
* Shown by IPython (a cell's result, ``display``), the panel also writes a static snapshot into
  the cell output and rewrites it as the tree's states change and once it has settled
  (``widgets.snapshot``): a notebook reopened without its kernel shows that instead.
* Failures to reach the controller are shown in the panel and retried at ``poll_max``; nothing a
  poll or a click raises reaches the notebook. While a call to the panel's controller is being
  resent (``client.retry``), the panel says so in the one word for it, "still retrying (attempt 3,
  1.2 s)", and clears it once the controller answers.
* The poller thread also stops for good (saying why in the panel) when the job was replaced by a
  newer submission of the same name (its submission time changed) or no longer exists, when the
  panel is closed (``close``, or a newer panel for the same job in this kernel), and after
  ``max_failures`` polls in a row failed to reach the controller (gone for good: ``%fray status``
  makes a new panel). So a kernel holds at most one poller per live job.
* While the job runs, the panel also lists the endpoints its tasks (and its children's) registered
  (its actors), read with each poll (``widgets.endpoints``).
* Everything the job or controller wrote is HTML-escaped by ``views.job``; the log tail, with its
  filter, follow, traceback and save controls, is ``widgets.logbox``.
* Cancel asks the controller to terminate the job (and so every job below it) and polls at once;
  the button is disabled once the job is terminal.
* Each poll also reads how the tasks use what they asked for, their event timeline, the tree's
  totals and each running task's silence (``widgets.usage``); while the job runs the panel polls
  at least every ``widgets.usage.REFRESH_S`` seconds, so usage shows even when no state changes.
  The request as sent (``views.request``, secrets redacted as Iris shows them) is drawn once.
* Each task's row of CPU / Memory / Threads buttons captures a running task in the background and
  shows the capture in the panel (``widgets.look_inside``); it is redrawn with each poll.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import ipywidgets as widgets

from fray_jupyter.client import results, retry
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.diagnostics import Diagnosis, diagnose
from fray_jupyter.client.errors import FrayError, JobNotFound
from fray_jupyter.client.tree import failed_children, fetch_tree
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import job_state_name
from fray_jupyter.iris.tree import FailedChild, JobTree
from fray_jupyter.views import job as view
from fray_jupyter.views.request import request_html
from fray_jupyter.views.tree import failed_html, tree_lines
from fray_jupyter.widgets import feed
from fray_jupyter.widgets.endpoints import EndpointsView
from fray_jupyter.widgets.logbox import LogBox
from fray_jupyter.widgets.look_inside import InspectView
from fray_jupyter.widgets.snapshot import SnapshotOutput, diagnosed_html
from fray_jupyter.widgets.tree import TreeView
from fray_jupyter.widgets.usage import REFRESH_S, UsageView, reported

if TYPE_CHECKING:
    from fray_jupyter.client.handle import JobHandle

BACKOFF: Final[float] = 1.6
LOG_LINES: Final[int] = 200
MAX_FAILED_POLLS: Final[int] = 60
"""Polls in a row that may fail to reach the controller (about 5 minutes at ``poll_max``) before
the poller gives up."""
FEED_REFRESH: Final[float] = 60.0
"""Seconds between refreshes of a panel that the change feed keeps up to date (a safety net)."""
FEED_MIN_INTERVAL: Final[float] = 0.25
"""Seconds at least between two refreshes the change feed asks for."""
DRAIN_GRACE: Final[float] = 0.2
"""Seconds between seeing the job finish and the last log fetch (late rows reach the store)."""


class JobStatusPanel(widgets.VBox):
    """Live status of ``job_id`` on ``client``'s controller: polled once at once, then in the
    background. ``start=False`` leaves all polling to the caller (``refresh()``); ``log_lines``
    bounds the tail kept and shown (``widgets.logbox``)."""

    def __init__(self, client: FrayClient, job_id: str, *, start: bool = True, log_lines: int = LOG_LINES,
                 poll_first: float = 0.25, poll_max: float = 5.0, max_failures: int = MAX_FAILED_POLLS,
                 **kwargs: Any) -> None:
        self.client, self.job_id = client, job_id
        self.poll_first, self.poll_max, self.max_failures = poll_first, poll_max, max_failures
        self.ended = ""  # why the poller stopped for good (replaced, gone, unreachable), else ""
        self._failures = 0
        self.diagnosis: Diagnosis | None = None
        self.polled_ms: int | None = None  # when ``diagnosis`` was read
        self.tree: JobTree | None = None
        self.failed_below: list[FailedChild] = []
        self.snapshot = SnapshotOutput()
        self._milestone: tuple[Any, ...] = ()
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._unreachable = False
        self._outputs_read = False
        self._unwatch: Callable[[], None] = lambda: None

        self.header = widgets.HTML(view.header_html(job_pb2.JobStatus(job_id=job_id)))
        self.progress = widgets.IntProgress(value=0, min=0, max=1, description="0/0",
                                            layout=widgets.Layout(width="420px"))
        self.reason = widgets.HTML()
        self.tasks = widgets.HTML()
        self.usage_view, self.inspect = UsageView(), InspectView(client)
        self.diagnostics = widgets.HTML()
        self.logs = LogBox(client, job_id, max_rows=log_lines, include_children=True)
        self.tree_view = TreeView(job_id, self._follow_logs)
        self.failure = widgets.HTML()
        self.outputs = widgets.HTML()
        self.endpoints, self.request = EndpointsView(), widgets.HTML()
        self.message = widgets.HTML()
        self.cancel_button = widgets.Button(description="Cancel", icon="stop", button_style="danger",
                                            tooltip="terminate the job and all its tasks")
        self.cancel_button.on_click(self._on_cancel)
        for widget, name in ((self.header, "header"), (self.progress, "progress"), (self.reason, "reason"),
                             (self.tasks, "tasks"), (self.logs, "logs"), (self.failure, "failure"),
                             (self.diagnostics, "diagnostics"), (self.tree_view, "tree-view"),
                             (self.outputs, "outputs"), (self.endpoints, "endpoints"), (self.request, "request"),
                             (self.message, "message"), (self.inspect, "inspect"),
                             (self.cancel_button, "cancel")):
            widget.add_class(f"fray-status-{name}")
        toolbar = widgets.HBox([self.progress, self.cancel_button], layout=widgets.Layout(align_items="center"))
        style = widgets.HTML(view.STYLE, layout=widgets.Layout(display="none"))  # once, not on every redraw
        super().__init__([style, self.header, toolbar, self.reason, self.failure, self.diagnostics, self.tree_view,
                          self.tasks, self.inspect, self.usage_view, self.endpoints, self.outputs, self.request, self.logs,
                          self.message],
                         **kwargs)
        self.add_class("fray-status-panel")
        if start:
            self.refresh()  # shown filled in (and as text where widgets are not rendered)
            self.start()

    @classmethod
    def of(cls, handle: JobHandle, **kwargs: Any) -> JobStatusPanel:
        """The live panel of the job a ``JobHandle`` names (``JobStatusPanel.of(job)`` after
        ``%%fray -o job``); ``kwargs`` as for the constructor."""
        return cls(handle.client, handle.job_id, **kwargs)

    # -- state -------------------------------------------------------------------------------------
    @property
    def state(self) -> str:
        """The job state's name (``"running"``), ``"unknown"`` before the first poll."""
        return job_state_name(self.status.state) if self.status is not None else "unknown"

    @property
    def status(self) -> job_pb2.JobStatus | None:
        """The job's status as last read (None before the first poll)."""
        return self.diagnosis.status if self.diagnosis is not None else None

    @property
    def task_list(self) -> tuple[job_pb2.TaskStatus, ...]:
        """The job's tasks as last read."""
        return self.diagnosis.tasks if self.diagnosis is not None else ()

    @property
    def done(self) -> bool:
        """Whether the job is terminal and every job below it has ended (its panel no longer changes)."""
        return self.status is not None and view.is_terminal(self.status) and (self.tree is None or self.tree.settled)

    # -- polling -----------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the background poller (once; not for a job already seen terminal or given up
        on); a poller of an older panel for the same job stops."""
        if self._thread is None and not self.done and not self.ended:
            older = _FOLLOWING.get(self.job_id)
            if older is not None and older is not self:
                older._end("a newer panel follows this job; this one stopped updating")
            _FOLLOWING[self.job_id] = self
            self._unwatch = retry.watch(self._on_retry)  # for as long as the poller runs
            self._thread = threading.Thread(target=self._run, name=f"fray-status {self.job_id}", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop polling (the panel keeps what it shows)."""
        self._stopped.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the poller to finish (the job is terminal, or ``stop()``); True if it did."""
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def close(self) -> None:
        """Stop polling and close the widgets."""
        self.stop()
        super().close()

    def refresh(self) -> bool:
        """Poll once and redraw; True if anything changed. Errors are shown, not raised."""
        with self._lock:
            try:
                changed = self._poll()
            except JobNotFound:
                self._end(f"job {self.job_id} no longer exists on the controller; stopped following it")
                return False
            except FrayError as error:
                self._unreachable = True
                self._failures += 1
                if self._failures >= self.max_failures:
                    self._end(f"{error}; stopped polling after {self._failures} failed attempts "
                              f"(run %fray status {self.job_id} to look again)")
                else:
                    self.message.value = view.note_html(f"{error} (retrying)", error=True)
                return False
            self._failures = 0
            if self._unreachable:
                self._unreachable, self.message.value = False, ""
            self._render()
            if self.ended:
                self.message.value = view.note_html(self.ended)
            return changed

    def _end(self, reason: str) -> None:
        """Stop polling for good and say why."""
        self.ended = reason
        self.message.value = view.note_html(reason, error=True)
        self.stop()

    def _poll(self) -> bool:
        was_done, polled_ms = self.done, view.now_ms()
        diagnosis = diagnose(self.client, self.job_id)
        status = diagnosis.status
        if self.status is not None and status.submitted_at.epoch_ms != self.status.submitted_at.epoch_ms:
            self.ended = ("this job was replaced by a newer submission of the same name; this panel no longer "
                          "follows it")
            self.stop()
            return False
        tree = fetch_tree(self.client, status, self.tree)
        self.usage_view.read(self.client, status, diagnosis.tasks, tree)
        fetched = self.logs.fetch()
        while view.is_terminal(status) and tree.settled and not was_done:  # drain the rows written as it ended
            time.sleep(DRAIN_GRACE)
            if not (more := self.logs.fetch()):
                break
            fetched += more
        endpoints = self.endpoints.read(self.client, self.job_id, status)
        changed = (self.diagnosis is None or diagnosis != self.diagnosis or tree != self.tree or fetched > 0
                   or endpoints)
        if view.is_terminal(status) and status.state != job_pb2.JOB_STATE_SUCCEEDED and (
                [job.job_id for job in tree.failed()] != [child.status.job_id for child in self.failed_below]):
            self.failed_below = failed_children(self.client, tree)
        self.diagnosis, self.tree, self.polled_ms = diagnosis, tree, polled_ms
        return changed

    def _follow_logs(self, job_id: str, include_children: bool) -> None:
        """Point the log tail at ``job_id`` (the tree's choice); a controller error is shown."""
        try:
            self.logs.follow_job(job_id, include_children)
        except FrayError as error:
            self.message.value = view.note_html(str(error), error=True)

    @property
    def lines(self) -> list[str]:
        """The log rows the panel shows, as ``[task] text`` lines."""
        return self.logs.lines()

    @property
    def cursor(self) -> int:
        """The log cursor: rows after it are fetched next."""
        return self.logs.cursor

    def _on_retry(self, event: retry.Retrying) -> None:
        """Show a resend to this panel's controller while it lasts (``client.retry``'s watchers)."""
        if event.url != self.client.url or self.ended:
            return
        if event.phase == "retrying":
            self.message.value = view.note_html(event.line(), error=True)
        elif event.phase == "answered" and not self._unreachable:
            self.message.value = ""

    def _run(self) -> None:
        delay, following = self.poll_first, None
        try:
            while not self._stopped.is_set():
                if following is None and not self._unreachable:
                    following = feed.watch(self.client, self.job_id, self._wake)
                elif following is not None and not following.listening:
                    following.unsubscribe(self._wake)
                    following = None  # the feed went away: poll until it is back
                    delay = self.poll_first
                wait = FEED_REFRESH if following is not None else self.poll_max if self._unreachable else delay
                self._wait(wait if self.status is None or view.is_terminal(self.status) else min(wait, REFRESH_S))
                if self._stopped.is_set():
                    return
                changed = self._refresh_safely()
                if self.done:
                    return
                if following is not None:
                    self._stopped.wait(FEED_MIN_INTERVAL)
                delay = self.poll_first if changed else min(delay * BACKOFF, self.poll_max)
        finally:
            self._unwatch()
            if following is not None:
                following.unsubscribe(self._wake)

    def _wait(self, timeout: float) -> None:
        self._wake.wait(timeout)
        self._wake.clear()

    def _refresh_safely(self) -> bool:
        try:
            return self.refresh()
        except Exception as error:  # noqa: BLE001 - a poller must never die with a traceback
            self.message.value = view.note_html(f"status panel error: {type(error).__name__}: {error}", error=True)
            return False

    # -- drawing -----------------------------------------------------------------------------------
    def _render(self) -> None:
        diagnosis, tree = self.diagnosis, self.tree
        if diagnosis is None or tree is None:
            return
        status, tasks = diagnosis.status, diagnosis.tasks
        self.header.value = view.header_html(status)
        total = status.task_count or len(tasks) or 1
        self.progress.max = total
        self.progress.value = min(status.completed_count, total)
        self.progress.description = f"{status.completed_count}/{status.task_count}"
        self.progress.bar_style = {job_pb2.JOB_STATE_SUCCEEDED: "success", job_pb2.JOB_STATE_KILLED: "warning"}.get(
            status.state, "danger" if view.is_terminal(status) else "info")
        self.reason.value = view.pending_html(status, tasks)
        now = view.now_ms()
        silent = self.usage_view.silent(tasks, self.logs.last_line_ms, diagnosis.status_texts, now)
        self.tasks.value = view.tasks_html(tasks, self.usage_view.usage, silent)
        self.inspect.show(tasks)
        self.usage_view.show([task.task_id for task in tasks], now)
        self.endpoints.show()
        if not self.request.value and diagnosis.request.name:
            self.request.value = request_html(diagnosis.request)
        self.failure.value = view.failure_html(status, tasks, self.lines) + failed_html(self.job_id, self.failed_below)
        self.diagnostics.value = view.diagnosis_html(status, tasks, diagnosis.limits, diagnosis.root_causes,
                                                     diagnosis.details, reported(diagnosis.status_texts, now))
        self.tree_view.show(tree)
        if view.is_terminal(status):
            self.cancel_button.disabled = True
            if not self._outputs_read:
                self._outputs_read = True
                self.outputs.value = self._outputs_html(tasks)
        milestone = (status.state, tuple((job.job_id, job.state) for job in tree.jobs()), self.done,
                     len(self.failed_below))
        if milestone != self._milestone:
            self._milestone = milestone
            self.snapshot.update(self.snapshot_html())

    def snapshot_html(self) -> str:
        """The static snapshot of what the panel shows now (``views.snapshot``), dated by the poll it
        shows: the same state drawn twice is the same bytes."""
        with self._lock:
            diagnosis, failed, polled_ms = self.diagnosis, self.failed_below, self.polled_ms
            tree = self.tree or JobTree(self.status or job_pb2.JobStatus(job_id=self.job_id))
            rows = list(self.logs.rows)
        return diagnosed_html(tree, diagnosis, rows, self.logs.label, failed, taken_ms=polled_ms,
                              usage=self.usage_view.usage)

    @staticmethod
    def _outputs_html(tasks: tuple[job_pb2.TaskStatus, ...]) -> str:
        """What the ended job's tasks wrote (read once), or why it could not be read."""
        try:
            return view.outputs_html([results.task_outputs(task).files for task in tasks])
        except results.ResultUnavailable as error:
            return view.outputs_html([], str(error))

    # -- cancel ------------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Terminate the job (its tasks end KILLED) and poll at once."""
        self.cancel_button.disabled = True
        self.cancel_button.description = "Cancelling…"
        try:
            self.client.terminate(self.job_id)
        except FrayError as error:
            self.cancel_button.disabled, self.cancel_button.description = False, "Cancel"
            self.message.value = view.note_html(f"cancel failed: {error}", error=True)
            return
        self.cancel_button.description = "Cancelled"
        self.message.value = view.note_html("cancel requested")
        if self._thread is not None and self._thread.is_alive():
            self._wake.set()
        else:
            self.refresh()

    def _on_cancel(self, _button: widgets.Button) -> None:
        try:
            self.cancel()
        except Exception as error:  # noqa: BLE001 - raised in a click handler it would vanish; show it
            self.message.value = view.note_html(f"cancel failed: {type(error).__name__}: {error}", error=True)

    # -- non-widget front ends -----------------------------------------------------------------------
    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        bundle: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)
        if bundle is not None and self.status is not None:
            lines = tree_lines(self.tree) if self.tree is not None else []
            bundle["text/plain"] = "\n".join([view.status_text(self.status, self.task_list), *lines])
        return bundle

    def _ipython_display_(self) -> None:
        """Shown by IPython: the widget view, then the static snapshot beside it (``widgets.snapshot``)."""
        from IPython.display import display

        display(self._repr_mimebundle_(), raw=True)  # type: ignore[no-untyped-call]
        self.snapshot.show(self.snapshot_html())


_FOLLOWING: weakref.WeakValueDictionary[str, JobStatusPanel] = weakref.WeakValueDictionary()
"""The panel whose poller follows each job id in this kernel (one at a time)."""
