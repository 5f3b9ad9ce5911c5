"""``LogBox``: the status panel's log tail — stock ipywidgets over ``views.logtail``.

Rules:

* The box shows the newest ``max_rows`` lines a reader sees (``views.logtail``: each task attempt's
  stream played on a terminal, so bars show as their latest frames; colours rendered, URLs as
  links, everything else inert). Every fetched page is played after the ones before it. Its first fetch is the newest
  ``TAIL_ROWS`` rows (``tail``), later ones follow the cursor; both carry the filter.
* The filter runs on the controller: ``substring`` and ``min_level`` (Iris's level names) are sent
  with every fetch; changing either starts the box again from the newest matching rows.
* A first fetch whose lines do not fill the box (a tail of tqdm redraws collapses into a dozen
  lines) reads the pages before it (``before``) until they show ``max_rows`` lines, the log's first
  row is read, or ``BACKFILL_ROWS`` rows are held; it plays them all from the oldest, so the first
  lines (a coloured line, a W&B link) are shown above the tail. The lines are counted each time the
  rows held have doubled (reading on costs a request, counting a replay). A controller that cannot
  read below a cursor (gRPC) shows the tail alone.
* The box reads ``job_id``'s own rows, or with ``include_children`` its whole tree's (a row of a job
  below it labelled by its path from it, ``[step/0]``); ``follow_job`` points it at another job of
  the tree, starting again from the newest rows.
* Following: the box scrolls itself (newest line at the bottom, where it stays while the reader
  is there; scrolled up, it keeps its distance from the newest line). "Following" pressed off
  pauses it: what it shows no longer changes and the button counts the rows that came meanwhile
  ("Jump to latest"); pressed again it shows the newest rows, scrolled to the bottom.
* "Jump to traceback" asks the controller for the job's last row containing ``TRACEBACK`` and shows
  that traceback through its exception line, highlighted, paused (whatever the filter).
* "Save full log" streams every row of the job (``FrayClient.log_pages``, one page in memory at a
  time) to ``<cwd>/<views.logtail.log_file_name>`` as ``[task] text`` lines, in a thread, and says
  where it went; a failure is said in the box, never raised.
* Fetches may come from the panel's poller thread and from clicks at once: one lock orders them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import ipywidgets as widgets

from fray_jupyter.client.errors import FrayError
from fray_jupyter.client.logs import log_prefix, log_text
from fray_jupyter.iris.loglines import LEVELS
from fray_jupyter.iris.proto.logging_pb2 import LogEntry
from fray_jupyter.iris.states import split_key
from fray_jupyter.views.job import note_html
from fray_jupyter.views.logtail import (
    TRACEBACK,
    LogScreen,
    ShownLine,
    collapse,
    log_file_name,
    log_tail_html,
    traceback_rows,
)

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient

TAIL_ROWS: Final[int] = 2000
"""Rows of the first fetch (many collapse: a tqdm bar's redraws become one line)."""
BACKFILL_ROWS: Final[int] = 50_000
"""Most rows a first fetch reads back to fill the box (see the module rules)."""
TRACEBACK_ROWS: Final[int] = 500
"""Rows read from a traceback's first line to find its end."""
LEVEL_OPTIONS: Final[list[tuple[str, str]]] = [("all levels", ""), *((f"{name.lower()}+", name) for name in LEVELS)]


class LogBox(widgets.VBox):
    """The log tail of ``job_id`` on ``client``, with its filter, follow, traceback and save
    controls (see the module rules)."""

    def __init__(self, client: FrayClient, job_id: str, *, max_rows: int, include_children: bool = False,
                 **kwargs: Any) -> None:
        self.client, self.job_id, self.max_rows = client, job_id, max_rows
        self.include_children = include_children
        self.screen = LogScreen()
        self.rows: list[ShownLine] = []
        """The lines shown (the newest ``max_rows`` of ``screen``'s)."""
        self.cursor = 0
        self.last_line_ms: dict[str, int] = {}
        """Task id → the time of its newest row fetched (what a task's silence counts from)."""
        self.unseen = 0
        self._started = False
        self._lock = threading.RLock()
        self.filter_text = widgets.Text(placeholder="filter lines (on the controller)", continuous_update=False,
                                        layout=widgets.Layout(width="18em"))
        self.min_level = widgets.Dropdown(options=LEVEL_OPTIONS, value="", layout=widgets.Layout(width="9em"),
                                          tooltip="lowest level shown (Iris's levels)")
        fit = widgets.Layout(width="auto")
        self.follow_button = widgets.ToggleButton(value=True, description="Following", icon="arrow-down", layout=fit,
                                                  tooltip="press to pause the log; press again to jump to the latest line")
        self.traceback_button = widgets.Button(description="Jump to traceback", icon="bug", layout=fit,
                                               tooltip="show the last Python traceback in the job's log")
        self.save_button = widgets.Button(description="Save full log", icon="download", layout=fit,
                                          tooltip=f"write every line to ./{log_file_name(job_id)}")
        self.note = widgets.HTML()
        self.view = self._new_view(self._tail_html())
        self.filter_text.observe(self._on_filter, names="value")
        self.min_level.observe(self._on_filter, names="value")
        self.follow_button.observe(self._on_follow, names="value")
        self.traceback_button.on_click(lambda _button: self._guarded(self.jump_to_traceback))
        self.save_button.on_click(lambda _button: self._save_in_background())
        self.tools = widgets.HBox([self.filter_text, self.min_level, self.follow_button, self.traceback_button,
                                   self.save_button])
        self.tools.add_class("fray-log-tools")
        super().__init__([self.tools, self.view, self.note], **kwargs)

    # -- what is shown -------------------------------------------------------------------------
    @property
    def following(self) -> bool:
        """Whether new rows are shown as they come (not paused, not showing a traceback)."""
        return bool(self.follow_button.value)

    def lines(self) -> list[str]:
        """The lines shown, as ``[task] text`` lines (the text as a terminal shows it)."""
        with self._lock:
            return [f"{self.label(line.entry)} {line.text}" for line in self.rows]

    @staticmethod
    def _new_view(html: str) -> widgets.HTML:
        """A log view showing ``html`` (a new one opens scrolled to its newest line)."""
        view = widgets.HTML(html)
        view.add_class("fray-log-box")
        return view

    def _replace_view(self, html: str) -> None:
        """Show ``html`` in a new view in place of the current one, which is closed (its model freed)."""
        old, self.view = self.view, self._new_view(html)
        self.children = (self.tools, self.view, self.note)
        old.close()

    def _tail_html(self) -> str:
        empty = "no matching log lines yet" if self.filter_text.value or self.min_level.value else "no log lines yet"
        return log_tail_html(self.rows, self.label, empty=empty)

    def label(self, row: LogEntry) -> str:
        """A row's task label: ``[3]``, or below the box's job ``[step/0]`` (``client.logs.log_prefix``)."""
        return log_prefix(row, self.job_id)

    def _show_latest(self) -> None:
        """Show the newest rows in a fresh view (so it is scrolled to the bottom)."""
        self.unseen = 0
        self.follow_button.description, self.follow_button.icon = "Following", "arrow-down"
        self._replace_view(self._tail_html())

    # -- fetching ------------------------------------------------------------------------------
    def fetch(self) -> int:
        """Fetch the rows after the cursor (the newest ``TAIL_ROWS`` the first time) and show
        them if following; returns how many came. ``FrayError`` is the caller's to show."""
        with self._lock:
            query = {"substring": self.filter_text.value, "min_level": self.min_level.value,
                     "include_children": self.include_children}
            if self._started:
                page = self.client.logs(self.job_id, cursor=self.cursor, **query)
                entries = list(page.entries)
            else:
                page = self.client.logs(self.job_id, tail=True, max_lines=TAIL_ROWS, **query)
                entries = list(page.entries)
                if len(entries) >= TAIL_ROWS:  # rows may come before them
                    entries = self._with_earlier(entries, query)
                self._started = True
            self.cursor = page.cursor
            for entry in entries:
                task_id = split_key(entry.key)[0]
                self.last_line_ms[task_id] = max(self.last_line_ms.get(task_id, 0), entry.timestamp.epoch_ms)
            if entries:
                self.screen.feed(entries)
                self.screen.trim(self.max_rows)
                self.rows = self.screen.shown()[-self.max_rows:]
                if self.following:
                    self.view.value = self._tail_html()
                else:
                    self.unseen += len(entries)
                    self.follow_button.description = f"Jump to latest ({self.unseen} new)"
            return len(entries)

    def _with_earlier(self, entries: list[LogEntry], query: dict[str, Any]) -> list[LogEntry]:
        """``entries`` (a full tail page) with the pages before them, oldest first, read until their
        lines fill the box (see the module rules)."""
        counted = 0
        while len(entries) < BACKFILL_ROWS:
            if len(entries) >= 2 * counted:
                counted = len(entries)
                if len(collapse(entries)) >= self.max_rows:
                    break
            try:
                page = self.client.logs(self.job_id, tail=True, max_lines=TAIL_ROWS,
                                        before=min(row.seq for row in entries), **query)
            except FrayError as error:
                if error.code != "unimplemented":
                    raise
                break  # no log service (gRPC): the tail alone
            entries = [*page.entries, *entries]
            if len(page.entries) < TAIL_ROWS:
                break  # the log's first row is held
        return entries

    def follow_job(self, job_id: str, include_children: bool) -> None:
        """Show ``job_id``'s rows (with ``include_children``, its tree's) from the newest on."""
        with self._lock:
            self.job_id, self.include_children = job_id, include_children
        self._on_filter({})

    def _on_filter(self, _change: dict[str, Any]) -> None:
        with self._lock:
            self.screen, self.rows = LogScreen(), []
            self.cursor, self._started = 0, False
            if self.following:
                self.view.value = self._tail_html()
            else:
                self.follow_button.value = True  # shows the (empty) latest
        self._guarded(self.fetch)

    def _on_follow(self, change: dict[str, Any]) -> None:
        with self._lock:
            if change["new"]:
                self._show_latest()
            else:
                self.follow_button.description, self.follow_button.icon = "Jump to latest", "arrow-down"

    def jump_to_traceback(self) -> bool:
        """Show the job's last traceback, paused (see the module rules); False when there is none."""
        with self._lock:
            found = self.client.logs(self.job_id, substring=TRACEBACK, tail=True, max_lines=1,
                                     include_children=self.include_children).entries
            if not found:
                self.note.value = note_html("no Python traceback in this job's log")
                return False
            first = found[-1].seq
            rows = collapse(self.client.logs(self.job_id, cursor=first - 1, max_lines=TRACEBACK_ROWS,
                                             include_children=self.include_children).entries)
            start = next(index for index, line in enumerate(rows) if line.entry.seq == first)
            marks = traceback_rows(rows, start)
            self.follow_button.value = False
            self._replace_view(log_tail_html(rows[start:max(marks) + 1], self.label,
                                             marked={index - start for index in marks}))
            self.note.value = note_html(f"the last traceback ({self.label(rows[start].entry)}); "
                                        "press Jump to latest to follow the log again")
            return True

    # -- saving --------------------------------------------------------------------------------
    def save(self, directory: Path | None = None) -> tuple[Path, int]:
        """Write every row of the job to ``directory`` (default: the current one), one page in
        memory at a time, replacing the file only once it is whole; returns (path, rows)."""
        path = (directory or Path.cwd()) / log_file_name(self.job_id)
        partial = path.with_name(path.name + ".part")
        count = 0
        with partial.open("w", encoding="utf-8") as out:
            for page in self.client.log_pages(self.job_id):
                out.write(log_text(page.entries))
                count += len(page.entries)
        partial.replace(path)
        return path, count

    def _save_in_background(self) -> None:
        self.save_button.disabled = True
        self.note.value = note_html("saving the full log…")

        def run() -> None:
            try:
                path, count = self.save()
                self.note.value = note_html(f"saved {count:,} lines to {path}")
            except (FrayError, OSError) as error:
                self.note.value = note_html(f"could not save the log: {error}", error=True)
            finally:
                self.save_button.disabled = False
        threading.Thread(target=run, name=f"fray-save-log {self.job_id}", daemon=True).start()

    def _guarded(self, action: Callable[[], object]) -> None:
        """Run a click's action; a controller error is shown in the box, not raised (a click
        handler's exception would vanish)."""
        try:
            action()
        except FrayError as error:
            self.note.value = note_html(str(error), error=True)
