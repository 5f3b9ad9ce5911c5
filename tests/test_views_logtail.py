"""Log rows as a reader sees them (``views.logtail``): each stream played on a terminal and tracebacks
found by the shared vectors (the sidebar's ``logrows.ts`` runs the same ones), and the panel's tail HTML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fray_jupyter.iris.proto.logging_pb2 import LOG_LEVEL_ERROR, LogEntry
from fray_jupyter.views.logtail import LogScreen, collapse, log_tail_html, traceback_end, traceback_rows
from fray_jupyter.views.terminal import LIVE_LINES

VECTORS: dict[str, Any] = json.loads((Path(__file__).parent / "data" / "ansi_vectors.json").read_text())


def rows_of(case: dict[str, Any]) -> list[LogEntry]:
    return [LogEntry(key=key, source=source, data=data, seq=index + 1)
            for index, (key, source, data) in enumerate(case["rows"])]


@pytest.mark.parametrize("case", VECTORS["screen"], ids=[case["name"] for case in VECTORS["screen"]])
def test_shared_screen_vectors(case: dict[str, Any]) -> None:
    assert [[line.entry.seq - 1, line.text] for line in collapse(rows_of(case))] == case["shown"]


@pytest.mark.parametrize("case", VECTORS["screen"], ids=[case["name"] for case in VECTORS["screen"]])
def test_playing_row_by_row_shows_what_playing_at_once_shows(case: dict[str, Any]) -> None:
    rows, screen = rows_of(case), LogScreen()
    for row in rows:
        screen.feed([row])
    assert screen.shown() == collapse(rows)


@pytest.mark.parametrize("case", VECTORS["tracebacks"], ids=[case["name"] for case in VECTORS["tracebacks"]])
def test_shared_traceback_vectors(case: dict[str, Any]) -> None:
    lines = collapse(rows_of(case))
    assert [line.entry.seq - 1 for line in lines] == list(range(len(case["rows"])))  # no row redraws another
    assert traceback_end(lines, case["start"]) == case["end"]
    assert traceback_rows(lines, case["start"]) == set(case["marked"])
    assert max(case["marked"]) == case["end"]  # the status panel shows a traceback through its largest row


def test_the_live_region_is_the_shared_one_and_lines_above_it_are_final() -> None:
    assert LIVE_LINES == VECTORS["live_lines"]
    rows = [LogEntry(key="/u/j/0:0", source="stdout", data=f"line {i}", seq=i + 1) for i in range(LIVE_LINES + 5)]
    rows.append(LogEntry(key="/u/j/0:0", source="stdout", data=f"\x1b[{LIVE_LINES + 10}Aup", seq=len(rows) + 1))
    texts = [line.text for line in collapse(rows)]
    assert texts[:6] == [f"line {i}" for i in range(6)]  # the cursor could not reach them
    assert texts[6] == "upne 6"  # the top line of the screen: as far up as a cursor goes


def test_trimming_keeps_the_newest_lines_and_every_line_the_cursor_can_reach() -> None:
    screen = LogScreen()
    screen.feed(LogEntry(key="/u/j/0:0", source="stdout", data=f"line {i}", seq=i + 1) for i in range(500))
    screen.trim(100)
    texts = [line.text for line in screen.shown()]
    assert texts[-1] == "line 499" and len(texts) == 100
    screen.feed([LogEntry(key="/u/j/0:0", source="stdout", data=f"\x1b[{LIVE_LINES - 1}Atop", seq=501)])
    assert screen.shown()[1 - LIVE_LINES].text == f"tope {501 - LIVE_LINES}"  # the row began a line


def test_the_tail_html_labels_tints_marks_and_renders_each_row() -> None:
    rows = [LogEntry(key="/u/j/0:0", source="stdout", data="\x1b[32mok\x1b[0m <b>", seq=1),
            LogEntry(key="/u/j/0:0", source="stderr", data="ValueError: boom", level=LOG_LEVEL_ERROR, seq=2)]
    html = log_tail_html(collapse(rows), lambda row: "[0]", marked={1})
    assert html == ('<pre class="fray-log"><span class="fray-log-task ">[0] </span>'
                    '<span class="fray-ansi-fg-2">ok</span> &lt;b&gt;\n'
                    '<span class="fray-log-mark"><span class="fray-log-task fray-log-error">[0] </span>'
                    'ValueError: boom</span></pre>')
    assert "no log lines yet" in log_tail_html([], lambda row: "")
