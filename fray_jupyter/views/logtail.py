"""Log rows as a researcher reads them: each stream played on a terminal, tracebacks found, the
status panel's tail as inert HTML. The sidebar's ``labextension/src/logrows.ts`` follows the same
rules and runs the same vectors (``tests/data/ansi_vectors.json``); ``tests/test_views_terminal.py``
proves these rules against a terminal emulator fed the raw output.

Rules:

* A stored row is one line as Iris captured it (``iris.loglines``: a carriage return ends a row as
  a newline does, and trailing blanks are dropped), so a tqdm bar arrives as one row per redraw.
  The rows of each task attempt and stream (log key and ``source``) are played in order on a
  terminal of its own (``views.terminal``, ``LIVE_LINES`` screen lines above scrollback). Each row
  after the first starts on a new line, except:

  - a row that *redraws* — its text (``views.ansi``) is a tqdm frame (Iris's pattern,
    ``iris.highlights.is_progress_bar``), or it starts by erasing the line (``ESC [ 2K``: rich) or
    by blanking it and moving up (blanks then ``ESC [ A``: tqdm clearing a nested bar) — starts at
    column 0 of the cursor's line when that line is blank or was last written by a redraw, and
    always when it then moves up (``REWINDS``: rich's live display going back over its frame);
  - a blank row on a redraw's line right after a *clear* (a redraw showing nothing) clears that
    line too (tqdm clearing its bars with blanks the capture dropped);
  - a blank row right after a frame written on the cursor's line waits for the next row: before
    a redraw or another blank row it was a newline (a finished bar stays); before any other row
    it was the bar's clear (``leave=False``), so that row is written on the cleared line.

  The cursor moves that tqdm, rich and pip make between a stream's lines then move it across that
  terminal's lines: nested and parallel bars show as their latest frames, one line per bar; a
  ``leave=False`` bar is gone when done; ordinary lines are never merged.
* What is shown: every line of every stream's terminal (blank lines below its cursor left out),
  each carrying the row that last wrote it. A line sits at the place of that row in the log; a
  line below another of its terminal sits no higher than it (so a bar's lines stay in their
  terminal order and move together to where their latest frame is).
* Pages: a screen plays the rows it is given from a fresh terminal per stream. A line whose
  earlier frames came before the first row given shows as the given rows draw it (a redraw with
  no line above it to return to starts at the top of its terminal), and a filter plays only the
  rows it passes.
* A traceback starts at a row containing ``TRACEBACK`` and ends at the first later row of the
  same key and stream whose text (after a rank tag) is not indented: the exception line; or at
  its last row when the log ends first. Its rows are those of its key and stream from start to
  end: rows of other tasks or streams written in between are shown, not marked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

from fray_jupyter.iris.highlights import is_progress_bar, without_rank_tag
from fray_jupyter.iris.proto import logging_pb2
from fray_jupyter.views.ansi import Span, cells_spans, line_spans, spans_html
from fray_jupyter.views.terminal import LIVE_LINES, Line, Terminal

LogEntry = logging_pb2.LogEntry
TRACEBACK: Final[str] = "Traceback (most recent call last)"
ERASES_LINE: Final[re.Pattern[str]] = re.compile(r"\x1b\[[02]?K| +\x1b\[\d*A")
"""A row that starts by erasing its line (rich), or by blanking it and moving up (tqdm clearing a
bar below another): a redraw."""
REWINDS: Final[re.Pattern[str]] = re.compile(r"(?:\x1b\[[02]?K| +)\x1b\[\d*A")
"""A redraw that then moves up (rich's live display going back over its last frame, tqdm clearing a
nested bar): it always starts on the cursor's line."""
_UNSAFE_NAME: Final[re.Pattern[str]] = re.compile(r"[^A-Za-z0-9._-]")
LEVEL_CLASSES: Final[dict[int, str]] = {
    logging_pb2.LOG_LEVEL_WARNING: "fray-log-warning", logging_pb2.LOG_LEVEL_ERROR: "fray-log-error",
    logging_pb2.LOG_LEVEL_CRITICAL: "fray-log-error",
}


def shown_text(data: str) -> str:
    """What a terminal shows for a stored row (``views.ansi``), as plain text."""
    return "".join(span.text for span in line_spans(data))


def redraws(data: str) -> bool:
    """Whether a row redraws the line the cursor is on (see the module rules)."""
    if ERASES_LINE.match(data) is not None:
        return True
    # a frame shows "|" or "," (Iris's two patterns), so a row without either is none: not played
    return ("|" in data or "," in data) and is_progress_bar(shown_text(data))


@dataclass(frozen=True)
class ShownLine:
    """A line as a reader sees it: the row that last wrote it (its task, stream, level and place in
    the log), its spans and its plain text."""

    entry: LogEntry
    spans: list[Span]
    text: str


@dataclass(frozen=True)
class _Write:
    entry: LogEntry
    redraw: bool


class _Stream:
    """One task attempt's stream: its terminal and the rank of its lines among the log's."""

    def __init__(self, rank: int) -> None:
        self.rank = rank
        self.terminal = Terminal(LIVE_LINES)
        self.started = False
        self.held: LogEntry | None = None
        """A blank row after a redraw, waiting for the next row to say what it was."""

    def play(self, row: LogEntry) -> None:
        """Play one row (see the module rules)."""
        redraw = redraws(row.data)
        held, self.held = self.held, None
        if held is not None:
            if row.data and not redraw:  # the blank row was the bar's clear: this row is written on the cleared line
                self._clear(held)
                self._start(row, same_line=True)
                self.terminal.play(row.data)
                return
            self._start(held, same_line=False)
        mark, last = self.terminal.line(self.terminal.row).mark, self.terminal.mark
        if not row.data and isinstance(mark, _Write) and mark.redraw and isinstance(last, _Write):
            if last.redraw and not shown_text(last.entry.data):  # a clear goes on
                self._clear(row)
                return
            if mark is last:
                self.held = row
                return
        same_line = redraw and (REWINDS.match(row.data) is not None or self._returns())
        self._start(row, same_line=same_line, redraw=redraw)
        self.terminal.play(row.data)

    def _clear(self, row: LogEntry) -> None:
        """A blank row that clears the cursor's line (the blanks it wrote were dropped by the capture)."""
        self._start(row, same_line=True, redraw=True)
        self.terminal.play("\x1b[2K")

    def _on_redraw(self) -> bool:
        """Whether the cursor's line was last written by a redraw."""
        mark = self.terminal.line(self.terminal.row).mark
        return isinstance(mark, _Write) and mark.redraw

    def _returns(self) -> bool:
        """Whether a redraw returns to the cursor's line: it is blank or was last written by a redraw."""
        return not self.terminal.line(self.terminal.row).cells or self._on_redraw()

    def _start(self, row: LogEntry, *, same_line: bool, redraw: bool = False) -> None:
        """Start ``row``: at column 0 of the cursor's line or of the next (the first row where the cursor is)."""
        terminal = self.terminal
        terminal.mark = _Write(row, redraw)
        if self.started:
            terminal.carriage_return()
            if not same_line:
                terminal.line_feed()
        self.started = True
        here = terminal.line(terminal.row)
        if here.mark is None:
            here.mark = terminal.mark

    def lines(self) -> list[tuple[tuple[int, int, int], Line]]:
        """The terminal's lines with their sort keys (see the module rules)."""
        keyed, floor = [], 0
        for index, line in enumerate(self.terminal.shown()):
            if isinstance(line.mark, _Write):
                floor = max(floor, line.mark.entry.seq)
            keyed.append(((floor, self.rank, index), line))
        return keyed


class LogScreen:
    """The rows of a log played as a terminal shows them, per task attempt and stream (see the
    module rules). Feed it rows in log order; ``shown`` is what a reader sees."""

    def __init__(self) -> None:
        self._streams: dict[tuple[str, str], _Stream] = {}

    def feed(self, rows: Iterable[LogEntry]) -> None:
        """Play ``rows`` after those fed before."""
        for row in rows:
            name = (row.key, row.source)
            stream = self._streams.get(name)
            if stream is None:
                stream = self._streams[name] = _Stream(len(self._streams))
            stream.play(row)

    def _keyed(self) -> list[tuple[tuple[int, int, int], Line]]:
        return sorted((item for stream in self._streams.values() for item in stream.lines()), key=lambda item: item[0])

    def shown(self) -> list[ShownLine]:
        """Every line, in the order a reader sees them."""
        return [_shown(line) for _, line in self._keyed() if isinstance(line.mark, _Write)]

    def trim(self, keep: int) -> None:
        """Forget the final lines older than the newest ``keep`` lines."""
        keyed = self._keyed()
        old: dict[int, int] = {}
        for (_, rank, _), _line in keyed[:max(0, len(keyed) - keep)]:
            old[rank] = old.get(rank, 0) + 1
        for stream in self._streams.values():
            stream.terminal.drop(old.get(stream.rank, 0))


def _shown(line: Line) -> ShownLine:
    """The line as shown, worked out once per write into it."""
    write = line.mark
    assert isinstance(write, _Write)
    memo = line.memo
    if isinstance(memo, tuple) and memo[0] is write:
        return memo[1]  # type: ignore[no-any-return]
    spans = cells_spans(line.cells, cut=line.cut)
    shown = ShownLine(write.entry, spans, "".join(span.text for span in spans))
    line.memo = (write, shown)
    return shown


def collapse(rows: Iterable[LogEntry]) -> list[ShownLine]:
    """The lines a reader sees of ``rows`` (see the module rules), in order."""
    screen = LogScreen()
    screen.feed(rows)
    return screen.shown()


def _same_stream(one: LogEntry, other: LogEntry) -> bool:
    return one.key == other.key and one.source == other.source


def traceback_end(lines: Sequence[ShownLine], start: int) -> int:
    """The index of the line ending the traceback that starts at ``lines[start]``."""
    head, end = lines[start].entry, start
    for index in range(start + 1, len(lines)):
        if not _same_stream(lines[index].entry, head):
            continue
        end = index
        text = without_rank_tag(lines[index].text)
        if text and not text[0].isspace():
            break
    return end


def traceback_rows(lines: Sequence[ShownLine], start: int) -> frozenset[int]:
    """The indices of the lines of the traceback that starts at ``lines[start]``: those of its key
    and stream through ``traceback_end`` (so the largest is ``traceback_end``'s)."""
    head = lines[start].entry
    return frozenset(index for index in range(start, traceback_end(lines, start) + 1)
                     if _same_stream(lines[index].entry, head))


def log_tail_html(lines: Sequence[ShownLine], label: Callable[[LogEntry], str], *, empty: str = "no log lines yet",
                  marked: Container[int] = frozenset()) -> str:
    """The status panel's log box: one line per shown line, the task label of the row that wrote it
    (``label``; tinted by that row's ``level``) then the line as a terminal shows it; lines at the
    indices in ``marked`` (a traceback) highlighted. ``empty`` when there are none."""
    if not lines:
        return f'<div class="fray-status fray-dim fray-log-empty">{escape(empty)}</div>'
    out = []
    for index, line in enumerate(lines):
        level = LEVEL_CLASSES.get(line.entry.level, "")
        html = f'<span class="fray-log-task {level}">{escape(label(line.entry))} </span>{spans_html(line.spans)}'
        out.append(f'<span class="fray-log-mark">{html}</span>' if index in marked else html)
    return f'<pre class="fray-log">{chr(10).join(out)}</pre>'


def log_file_name(job_id: str) -> str:
    """The file a job's full log is saved or downloaded as: ``/alice/train`` → ``alice-train.log``
    (the id's parts joined by ``-``, any character but letters, digits, ``.``, ``_`` and ``-``
    replaced by ``_``)."""
    return _UNSAFE_NAME.sub("_", "-".join(part for part in job_id.split("/") if part) or "job") + ".log"
