"""Log rows as a researcher reads them: redraws collapsed, tracebacks found, the status panel's tail
as inert HTML. The sidebar's ``labextension/src/logrows.ts`` follows the same rules and runs the
same vectors (``tests/data/ansi_vectors.json``).

Rules:

* A stored row is one line as Iris captured it (``iris.loglines``: a carriage return ends a row),
  so a tqdm bar arrives as one row per redraw. A row *redraws* when what it shows
  (``views.ansi``) is a tqdm frame (Iris's pattern, ``iris.highlights.is_progress_bar``) or when it starts by erasing the line (``ESC [
  2K``, ``ESC [ K``: rich's redraw). A redraw replaces the previous shown row of the same task
  attempt and stream (its log key and ``source``), looked for among the last
  ``REDRAW_LOOKBACK`` shown rows, when that row is blank or itself a redraw; the new row is shown
  at its own, later place. So a bar is one line that moves to where its latest frame is, a
  finished bar stays when the next one starts (tqdm's blank row comes between), each task keeps
  its own bar, and ordinary lines are never merged.
* A traceback starts at a row containing ``TRACEBACK`` and ends at the first later row of the
  same key and stream whose text (after a rank tag) is not indented: the exception line; or at
  its last row when the log ends first. Its rows are those of its key and stream from start to
  end: rows of other tasks or streams written in between are shown, not marked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, MutableSequence, Sequence
from html import escape
from typing import Final

from fray_jupyter.iris.highlights import is_progress_bar, without_rank_tag
from fray_jupyter.iris.proto import logging_pb2
from fray_jupyter.views.ansi import line_html, line_spans

LogEntry = logging_pb2.LogEntry
REDRAW_LOOKBACK: Final[int] = 1000
TRACEBACK: Final[str] = "Traceback (most recent call last)"
ERASES_LINE: Final[re.Pattern[str]] = re.compile(r"\x1b\[[02]?K")
_UNSAFE_NAME: Final[re.Pattern[str]] = re.compile(r"[^A-Za-z0-9._-]")
LEVEL_CLASSES: Final[dict[int, str]] = {
    logging_pb2.LOG_LEVEL_WARNING: "fray-log-warning", logging_pb2.LOG_LEVEL_ERROR: "fray-log-error",
    logging_pb2.LOG_LEVEL_CRITICAL: "fray-log-error",
}


def shown_text(data: str) -> str:
    """What a terminal shows for a stored row (``views.ansi``), as plain text."""
    return "".join(span.text for span in line_spans(data))


def redraws(data: str) -> bool:
    """Whether a row redraws the line before it (see the module rules)."""
    return ERASES_LINE.match(data) is not None or is_progress_bar(shown_text(data))


def _replaceable(data: str) -> bool:
    return not shown_text(data).strip() or redraws(data)


def collapse_into(shown: MutableSequence[LogEntry], rows: Iterable[LogEntry]) -> None:
    """Append ``rows`` to the already collapsed ``shown``, each redraw replacing the row it redraws."""
    for row in rows:
        if redraws(row.data):
            for back in range(len(shown) - 1, max(-1, len(shown) - 1 - REDRAW_LOOKBACK), -1):
                previous = shown[back]
                if previous.key == row.key and previous.source == row.source:
                    if _replaceable(previous.data):
                        del shown[back]
                    break
        shown.append(row)


def collapse(rows: Iterable[LogEntry]) -> list[LogEntry]:
    """The rows a reader sees (see the module rules), in order."""
    shown: list[LogEntry] = []
    collapse_into(shown, rows)
    return shown


def traceback_end(rows: Sequence[LogEntry], start: int) -> int:
    """The index of the row ending the traceback that starts at ``rows[start]``."""
    head, end = rows[start], start
    for index in range(start + 1, len(rows)):
        row = rows[index]
        if row.key != head.key or row.source != head.source:
            continue
        end = index
        text = without_rank_tag(shown_text(row.data))
        if text and not text[0].isspace():
            break
    return end


def traceback_rows(rows: Sequence[LogEntry], start: int) -> frozenset[int]:
    """The indices of the rows of the traceback that starts at ``rows[start]``: those of its key
    and stream through ``traceback_end`` (so the largest is ``traceback_end``'s)."""
    head = rows[start]
    return frozenset(index for index in range(start, traceback_end(rows, start) + 1)
                     if rows[index].key == head.key and rows[index].source == head.source)


def log_tail_html(rows: Sequence[LogEntry], label: Callable[[LogEntry], str], *, empty: str = "no log lines yet",
                  marked: Container[int] = frozenset()) -> str:
    """The status panel's log box: one line per row, its task label (``label``; tinted by the
    row's ``level``) then the row as a terminal shows it; rows at the indices in
    ``marked`` (a traceback) highlighted. ``empty`` when there are no rows."""
    if not rows:
        return f'<div class="fray-status fray-dim fray-log-empty">{escape(empty)}</div>'
    lines = []
    for index, row in enumerate(rows):
        level = LEVEL_CLASSES.get(row.level, "")
        line = f'<span class="fray-log-task {level}">{escape(label(row))} </span>{line_html(row.data)}'
        lines.append(f'<span class="fray-log-mark">{line}</span>' if index in marked else line)
    return f'<pre class="fray-log">{chr(10).join(lines)}</pre>'


def log_file_name(job_id: str) -> str:
    """The file a job's full log is saved or downloaded as: ``/alice/train`` → ``alice-train.log``
    (the id's parts joined by ``-``, any character but letters, digits, ``.``, ``_`` and ``-``
    replaced by ``_``)."""
    return _UNSAFE_NAME.sub("_", "-".join(part for part in job_id.split("/") if part) or "job") + ".log"
