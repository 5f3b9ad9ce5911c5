"""The status panel's log box (``widgets.logbox``) against the real controller: a researcher's job
(colours, a 1,000-step tqdm bar, a W&B link, a traceback) reads as a terminal shows it, the filter
runs on the controller, pausing freezes it, "Jump to traceback" finds the exception line, and the
full log is saved whole; and a log whose newest page collapses into a few lines is read
back past it, so its first lines show above the tail."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.client import FrayClient
from fray_jupyter.views.logtail import collapse
from fray_jupyter.widgets.logbox import TAIL_ROWS, LogBox
from tests.controller_harness import start_controller, stop_quietly
from tests.logjobs import (
    EXCEPTION_LINE,
    WANDB,
    collapsing_script,
    many_lines_script,
    python_job,
    researcher_script,
)

TASKS = 4
COLOURED_HTML = '<span class="fray-ansi-fg-2 fray-ansi-bold">green bold</span>'


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrayClient]:
    controller = start_controller(tmp_path_factory.mktemp("logbox") / "state", "--slots", str(TASKS))
    try:
        with FrayClient(controller.info.url, controller.info.token) as opened:
            yield opened
    finally:
        stop_quietly(controller)


@pytest.fixture(scope="module")
def failed_job(client: FrayClient) -> str:
    job_id = client.submit(python_job("researcher", researcher_script(fail=True)))
    client.wait(job_id, timeout=60)
    return job_id


def test_colours_one_progress_line_and_links(client: FrayClient, failed_job: str) -> None:
    box = LogBox(client, failed_job, max_rows=200)
    assert box.fetch() > 1000  # every redraw is a row of its own, as Iris stores them
    html = box.view.value
    assert '<span class="fray-ansi-fg-2 fray-ansi-bold">green bold</span>' in html
    assert '<span style="color:#ff8700">orange</span>' in html
    assert f'<a href="{WANDB}" target="_blank" rel="noopener noreferrer">{WANDB}</a>' in html
    assert html.count("it/s]") == 1 and "1000/1000" in html  # one progress line, at its last state
    assert "\x1b" not in html and "</span>training done" in html


def test_the_filter_runs_on_the_controller_and_starts_again(client: FrayClient, failed_job: str) -> None:
    box = LogBox(client, failed_job, max_rows=200)
    box.fetch()
    box.filter_text.value = "training"
    assert box.lines() == ["[0] training done"]
    box.filter_text.value = ""
    box.min_level.value = "ERROR"  # stderr lines are ERROR, but tqdm's frames on stderr are INFO
    shown = [line for line in box.lines() if line != "[0] "]  # the blank stderr row before tqdm's first frame is ERROR
    assert shown[0] == "[0] Traceback (most recent call last):" and shown[-1] == f"[0] {EXCEPTION_LINE}"
    assert not any("it/s" in line for line in shown)


def test_pausing_freezes_the_box_and_jumping_to_latest_shows_what_came(client: FrayClient, tmp_path: Path) -> None:
    job_id = client.submit(python_job("paused", "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n"
                                                "    time.sleep(0.5)"))
    box = LogBox(client, job_id, max_rows=200)
    client.wait(job_id, timeout=60)
    box.follow_button.value = False
    before = box.view.value
    assert box.fetch() == 3
    assert box.view.value == before and box.follow_button.description == "Jump to latest (3 new)"
    paused_view = box.view
    box.follow_button.value = True
    assert "</span>tick 2" in box.view.value and box.follow_button.description == "Following"
    assert box.view is not paused_view and paused_view.comm is None  # the view it replaced is closed, not leaked
    assert box.children == (box.tools, box.view, box.note)


def test_jump_to_traceback_shows_it_through_the_exception_line(client: FrayClient, failed_job: str) -> None:
    box = LogBox(client, failed_job, max_rows=5)
    box.fetch()
    assert box.jump_to_traceback()
    assert not box.following
    html = box.view.value
    assert html.count('class="fray-log-mark"') == 4  # Traceback, two File lines, the exception
    assert html.index("Traceback (most recent call last)") < html.index(EXCEPTION_LINE)
    assert html.endswith(f"{EXCEPTION_LINE}</span></pre>")
    assert "the last traceback ([0])" in box.note.value
    healthy = client.submit(python_job("healthy", "print('fine')"))
    client.wait(healthy, timeout=60)
    other = LogBox(client, healthy, max_rows=5)
    assert not other.jump_to_traceback() and "no Python traceback" in other.note.value


def test_the_full_log_is_saved_whole_page_by_page(client: FrayClient, tmp_path: Path) -> None:
    count = 12_345
    job_id = client.submit(python_job("chatty", many_lines_script(count)))
    client.wait(job_id, timeout=60)
    path, saved = LogBox(client, job_id, max_rows=10).save(tmp_path)
    assert path == tmp_path / "alice-chatty.log" and saved == count
    assert path.read_text().splitlines() == [f"[0] line {i} of {count}" for i in range(1, count + 1)]
    assert not list(tmp_path.glob("*.part"))


@pytest.fixture(scope="module")
def collapsing_job(client: FrayClient) -> str:
    job_id = client.submit(python_job("collapsing", collapsing_script(), replicas=TASKS))
    client.wait(job_id, timeout=120)
    return job_id


def test_the_tail_page_alone_collapses_into_a_few_lines_without_the_first_ones(client: FrayClient,
                                                                                 collapsing_job: str) -> None:
    """The case itself: the newest page is full, shows far fewer lines than the box holds, and
    none of them is the first line."""
    tail = client.logs(collapsing_job, tail=True, max_lines=TAIL_ROWS).entries
    lines = collapse(tail)
    assert len(tail) == TAIL_ROWS and len(lines) < 40
    assert not any("green bold" in line.text for line in lines)


def test_the_box_reads_back_to_the_first_lines_and_keeps_the_tail(client: FrayClient, collapsing_job: str) -> None:
    box = LogBox(client, collapsing_job, max_rows=200)
    assert box.fetch() > TAIL_ROWS  # earlier pages were read
    html = box.view.value
    assert html.count(COLOURED_HTML) == TASKS
    assert html.count(f'<a href="{WANDB}" target="_blank" rel="noopener noreferrer">{WANDB}</a>') == TASKS
    lines = box.lines()
    assert lines[0].endswith("green bold then orange, run at " + WANDB)
    assert sum(line.endswith(EXCEPTION_LINE) for line in lines) == TASKS  # the tail is still there
    assert len(lines) < 200  # every row of the log is held: the first line is the log's first


def test_a_box_filled_by_its_tail_reads_no_earlier_page(client: FrayClient, collapsing_job: str) -> None:
    box = LogBox(client, collapsing_job, max_rows=5)
    assert box.fetch() == TAIL_ROWS
    assert COLOURED_HTML not in box.view.value
