"""Log rows as a reader sees them (``views.logtail``): redraws collapsed and tracebacks found by the
shared vectors (the sidebar's ``logrows.ts`` runs the same ones), and the panel's tail HTML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fray_jupyter.iris.proto.logging_pb2 import LOG_LEVEL_ERROR, LogEntry
from fray_jupyter.views import logtail
from fray_jupyter.views.logtail import collapse, collapse_into, log_tail_html, traceback_end, traceback_rows

VECTORS: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "ansi_vectors.json").read_text())


def rows_of(case: dict[str, Any]) -> list[LogEntry]:
    return [LogEntry(key=key, source=source, data=data, seq=index + 1)
            for index, (key, source, data) in enumerate(case["rows"])]


@pytest.mark.parametrize("case", VECTORS["collapse"], ids=[case["name"] for case in VECTORS["collapse"]])
def test_shared_collapse_vectors(case: dict[str, Any]) -> None:
    rows = rows_of(case)
    assert [row.seq - 1 for row in collapse(rows)] == case["shown"]


@pytest.mark.parametrize("case", VECTORS["collapse"], ids=[case["name"] for case in VECTORS["collapse"]])
def test_collapsing_page_by_page_shows_what_collapsing_at_once_shows(case: dict[str, Any]) -> None:
    rows, shown = rows_of(case), []
    for row in rows:
        collapse_into(shown, [row])
    assert shown == collapse(rows)


@pytest.mark.parametrize("case", VECTORS["tracebacks"], ids=[case["name"] for case in VECTORS["tracebacks"]])
def test_shared_traceback_vectors(case: dict[str, Any]) -> None:
    assert traceback_end(rows_of(case), case["start"]) == case["end"]
    assert traceback_rows(rows_of(case), case["start"]) == set(case["marked"])
    assert max(case["marked"]) == case["end"]  # the status panel shows a traceback through its largest row


def test_the_lookback_is_the_shared_one_and_bounds_the_search() -> None:
    assert logtail.REDRAW_LOOKBACK == VECTORS["redraw_lookback"]
    frame = " 10%|# | 1/10 [00:01<00:09, 1.00it/s]"
    between = [LogEntry(key="/u/j/1:0", source="stdout", data=f"other {i}") for i in range(logtail.REDRAW_LOOKBACK)]
    rows = [LogEntry(key="/u/j/0:0", source="stderr", data=frame), *between,
            LogEntry(key="/u/j/0:0", source="stderr", data=frame)]
    assert len(collapse(rows)) == len(rows)  # the first frame is past the lookback: kept
    assert len(collapse([rows[0], *between[1:], rows[-1]])) == len(rows) - 2


def test_the_tail_html_labels_tints_marks_and_renders_each_row() -> None:
    rows = [LogEntry(key="/u/j/0:0", source="stdout", data="\x1b[32mok\x1b[0m <b>"),
            LogEntry(key="/u/j/0:0", source="stderr", data="ValueError: boom", level=LOG_LEVEL_ERROR)]
    html = log_tail_html(rows, lambda row: "[0]", marked={1})
    assert html == ('<pre class="fray-log"><span class="fray-log-task ">[0] </span>'
                    '<span class="fray-ansi-fg-2">ok</span> &lt;b&gt;\n'
                    '<span class="fray-log-mark"><span class="fray-log-task fray-log-error">[0] </span>'
                    'ValueError: boom</span></pre>')
    assert "no log lines yet" in log_tail_html([], lambda row: "")
