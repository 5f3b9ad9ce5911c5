"""``UsageView``: the status panel's "watch it run" part — how each task uses what it asked for
(the task table's MEM / PEAK MEM / CPU columns and memory bar, drawn by ``views.job.tasks_html``),
the warnings of a peak over the request, the job's or its tree's totals, the task event timeline,
each status text's age and each silent task's silence — read with the panel's poll and drawn by
``views.usage``.

Rules:

* ``read`` runs in the panel's poll: the job's samples (``client.usage.job_usage``) and its tasks'
  events since it was submitted (``client.usage.task_events``; an earlier job of the same name had
  the same task ids), joined with their state changes (``client.timeline``); the
  totals are the job's own from what was read, or, for a job with jobs below it, the tree's listed
  jobs' (``client.usage.totals_over``, more calls: at most every ``TREE_TOTALS_EVERY_S``, and once
  the tree has settled).
* Samples are read once: each poll asks for those from ``LATE_MS`` before the newest held on
  (``job_usage``'s ``since_ms``), skipping those held, and keeps the newest ``KEEP_SAMPLES`` a
  task; the job's CPU time still counts the dropped ones. A new submission under the id starts again.
* Usage is secondary: a controller that cannot answer it (no stats service, a gRPC URL, a refused
  query) leaves what was shown and says why once in ``note``; it never fails the poll.
* While the job runs the panel polls at least every ``REFRESH_S`` seconds, so usage changes show
  even when no job state changes (the change feed only reports those).
* Silence (``client.liveness``) counts from each task's last log line the panel's log box saw, its
  status report and its attempt's start; a line the log box's filter hides is not seen. A bad
  ``$FRAY_SILENCE_AFTER`` is said in ``note`` and the default threshold used.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

import ipywidgets as widgets

from fray_jupyter.client import usage
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import FrayError
from fray_jupyter.client.liveness import DEFAULT_SILENCE_S, silence_after_ms, silent_ms
from fray_jupyter.client.status_text import StatusText
from fray_jupyter.client.timeline import timeline
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.tree import JobTree
from fray_jupyter.iris.usage import TaskEvent, TaskUsage, Totals
from fray_jupyter.views import usage as view
from fray_jupyter.views.job import note_html

REFRESH_S: Final[float] = 2.0
LATE_MS: Final[int] = 10_000
"""How far before the newest sample held a poll asks again (a worker's row may land late); those held are skipped."""
KEEP_SAMPLES: Final[int] = 3600
"""Samples kept per task (an hour of the embedded controller's): each poll reads only newer ones."""
TREE_TOTALS_EVERY_S: Final[float] = 10.0


class UsageView(widgets.VBox):
    """The warnings, totals and timeline of one job (see the module rules); the task table's cells
    are drawn by the panel from ``usage`` and ``silent``."""

    def __init__(self) -> None:
        self.usage: dict[str, TaskUsage] = {}
        self.events: list[TaskEvent] = []
        self.totals: Totals | None = None
        self.tree_totals = False
        self.note = ""
        self._totals_at = 0.0
        self._job: tuple[str, int] = ("", 0)
        self._dropped_cpu: dict[str, float] = {}
        self.warnings = widgets.HTML()
        self.totals_line = widgets.HTML()
        self.timeline = widgets.HTML()
        for widget, name in ((self.warnings, "warnings"), (self.totals_line, "totals"), (self.timeline, "timeline")):
            widget.add_class(f"fray-usage-{name}")
        style = widgets.HTML(view.STYLE, layout=widgets.Layout(display="none"))
        super().__init__([style, self.warnings, self.totals_line, self.timeline])

    def read(self, client: FrayClient, status: job_pb2.JobStatus, tasks: Sequence[job_pb2.TaskStatus],
             tree: JobTree) -> None:
        """Read the job's usage, events and totals (module rules); a failure is kept in ``note``."""
        if self._job != (status.job_id, status.submitted_at.epoch_ms):  # another submission: start again
            self._job, self.usage, self._dropped_cpu = (status.job_id, status.submitted_at.epoch_ms), {}, {}
        newest = max((one.samples[-1].ts_ms for one in self.usage.values() if one.samples), default=None)
        try:
            fresh = usage.job_usage(client, status, None if newest is None else newest - LATE_MS)
            events = usage.task_events(client, [task.task_id for task in tasks])
            below = bool(tree.jobs())
            if below and (time.monotonic() - self._totals_at >= TREE_TOTALS_EVERY_S or tree.settled):
                self.totals, self._totals_at = usage.totals_over(client, [status, *tree.jobs()]), time.monotonic()
        except (FrayError, ValueError) as error:
            self.note = f"usage not available: {error}"
            return
        found = self._merged(fresh)
        if not below:
            own = usage.job_totals(found, tasks, int(time.time() * 1000))
            self.totals = Totals(own.cpu_hours + sum(self._dropped_cpu.values()) / 3600, own.wall_hours,
                                 own.peak_memory_mb, own.tasks)
        self.usage, self.tree_totals, self.note = found, below, ""
        since = status.submitted_at.epoch_ms  # not an earlier submission's under the same name
        self.events = timeline(tasks, [event for event in events if event.ts_ms >= since])

    def _merged(self, new: Mapping[str, TaskUsage]) -> dict[str, TaskUsage]:
        """The samples kept with the ``new`` ones after them (those already held left out), at most
        ``KEEP_SAMPLES`` a task: the CPU seconds of those dropped are kept in ``_dropped_cpu``."""
        merged = {}
        for task_id, fresh in new.items():
            kept = self.usage[task_id].samples if task_id in self.usage else ()
            last = kept[-1].ts_ms if kept else -1
            samples = kept + tuple(sample for sample in fresh.samples if sample.ts_ms > last)
            if (cut := len(samples) - KEEP_SAMPLES) > 0:
                dropped = replace(fresh, samples=samples[:cut + 1]).cpu_seconds  # up to the first one kept
                self._dropped_cpu[task_id] = self._dropped_cpu.get(task_id, 0.0) + dropped
                samples = samples[cut:]
            merged[task_id] = replace(fresh, samples=samples)
        return merged

    def silent(self, tasks: Sequence[job_pb2.TaskStatus], last_lines: Mapping[str, int],
               texts: Mapping[str, StatusText], now_ms: int) -> dict[str, int]:
        """Task id → how long it has been silent, for each running task silent long enough."""
        try:
            after = silence_after_ms()
        except ValueError as error:  # said in the panel; the default threshold meanwhile
            self.note, after = str(error), int(DEFAULT_SILENCE_S * 1000)
        found = {}
        for task in tasks:
            report = texts.get(task.task_id)
            quiet = silent_ms(task, now_ms, last_line_ms=last_lines.get(task.task_id, 0),
                              last_report_ms=report.ts_ms if report else 0, after_ms=after)
            if quiet is not None:
                found[task.task_id] = quiet
        return found

    def show(self, task_ids: Sequence[str], now_ms: int) -> None:
        """Draw the warnings, totals and timeline as last read."""
        note = note_html(self.note, error=True) if self.note else ""
        self.warnings.value = note + view.warnings_html(self.usage, task_ids)
        self.totals_line.value = view.totals_html(self.totals, tree=self.tree_totals)
        self.timeline.value = view.timeline_html(self.events, now_ms)


def reported(texts: Mapping[str, StatusText], now_ms: int) -> dict[str, str]:
    """Task id → "reported 4 min ago" for each status text whose time is known."""
    return {task_id: words for task_id, text in texts.items() if (words := view.reported_words(text.ts_ms, now_ms))}
