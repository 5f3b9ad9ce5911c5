"""Logs a researcher can read, in a real JupyterLab (Debian Chromium): a job printing colours, a
1,000-step tqdm bar, a W&B link and a traceback shows colours, ONE progress line and a link in the
sidebar's job view and in a ``%%fray`` cell's status panel; the sidebar jumps to the traceback and
filters on the controller; hostile ANSI stays inert; a 200,000-line log keeps a few hundred rows in
the DOM while it is scrolled, and downloads whole."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from jobs_fixtures import SIDEBAR_ID, jobs_controller, lab_client  # noqa: F401  (fixtures)
from labserver import Lab
from magic_fixtures import lab_controller  # noqa: F401 - fixture
from pages import LOAD, open_in_sidebar, run_cells
from playwright.sync_api import Page, expect

from fray_jupyter.client import FrayClient
from tests.logjobs import EXCEPTION_LINE, WANDB, many_lines_script, python_job, researcher_script

MOST_DOM_ROWS = 300
HOSTILE = ("print('\\x1b[31m<img src=x onerror=window.__frayXss=1>\\x1b[0m')\n"
           "print('\\x1b]8;;javascript:window.__frayXss=2\\x07click me\\x1b]8;;\\x07')\n"
           "print('https://x.io/\\\"><img src=x onerror=window.__frayXss=3>')\n"
           "print('\\x1b]0;<script>window.__frayXss=4</script>\\x07title gone')")


def test_the_sidebar_shows_colours_one_progress_line_links_and_jumps_to_the_traceback(
        lab: Lab, page: Page, lab_client: FrayClient) -> None:  # noqa: F811
    job_id = lab_client.submit(python_job(f"colours-{uuid.uuid4().hex[:6]}", researcher_script(fail=True)))
    lab_client.wait(job_id, timeout=60)
    view = open_in_sidebar(page, lab, job_id)
    logs = view.locator(".fj-Logs")
    expect(logs.locator(".fj-ansi-fg-2.fj-ansi-bold")).to_have_text("green bold", timeout=20_000)
    expect(logs.locator("span[style='color:#ff8700']")).to_have_text("orange")
    link = logs.locator(f"a[href='{WANDB}']")
    expect(link).to_have_text(WANDB)
    expect(link).to_have_attribute("target", "_blank")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    bar = logs.locator(".fj-LogLine", has_text="it/s]")
    expect(bar).to_have_count(1)  # 1,000 redraws stored as rows, shown as one line
    expect(bar).to_contain_text("1000/1000")
    assert "\x1b" not in logs.inner_text() and "[1;32m" not in logs.inner_text()

    view.get_by_role("button", name="Jump to traceback").click()
    marked = logs.locator(".fj-LogLine-mark")
    expect(marked.first).to_contain_text("Traceback (most recent call last)")
    expect(marked.last).to_contain_text(EXCEPTION_LINE)

    view.locator(".fj-LogFilter").fill("training")
    view.locator(".fj-LogFilter").press("Enter")
    expect(logs.locator(".fj-LogLine")).to_have_count(1)
    expect(logs.locator(".fj-LogLine")).to_contain_text("training done")
    view.locator(".fj-LogFilter").fill("")
    view.locator(".fj-LogFilter").press("Enter")
    view.locator(".fj-LogLevel").select_option("warning")  # stderr is ERROR, tqdm frames INFO, stdout INFO
    expect(logs.locator(".fj-LogLine").last).to_contain_text(EXCEPTION_LINE)
    expect(logs.locator(".fj-LogLine", has_text="it/s]")).to_have_count(0)
    expect(logs.locator(".fj-LogLine", has_text="training done")).to_have_count(0)


def test_ansi_from_a_task_never_becomes_markup(lab: Lab, page: Page, lab_client: FrayClient) -> None:  # noqa: F811
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    job_id = lab_client.submit(python_job(f"hostile-ansi-{uuid.uuid4().hex[:6]}", HOSTILE))
    lab_client.wait(job_id, timeout=60)
    logs = open_in_sidebar(page, lab, job_id).locator(".fj-Logs")
    expect(logs.locator(".fj-ansi-fg-1")).to_have_text("<img src=x onerror=window.__frayXss=1>", timeout=20_000)
    expect(logs).to_contain_text("click me")
    expect(logs).to_contain_text("title gone")
    expect(page.locator(f"#{SIDEBAR_ID} img, #{SIDEBAR_ID} script")).to_have_count(0)
    hrefs = logs.locator("a").evaluate_all("links => links.map(a => a.getAttribute('href'))")
    assert hrefs == ["https://x.io/"]  # the URL ends at the quote; the javascript: OSC 8 target is no link
    assert page.evaluate("window.__frayXss") is None and dialogs == []


def test_the_status_panel_shows_colours_and_one_progress_line(
        lab: Lab, lab_controller: Path, page: Page) -> None:  # noqa: F811
    cell = f"%%fray --name ui-colours-{uuid.uuid4().hex[:6]}\n{researcher_script()}"
    panel = run_cells(page, lab.open_url(lab.notebook("logs-panel.ipynb", LOAD, cell)), 2).locator(".fray-status-panel")
    expect(panel.locator(".fray-status-header .fray-badge")).to_have_text("SUCCEEDED", timeout=90_000)
    log = panel.locator("pre.fray-log")
    expect(log.locator(".fray-ansi-fg-2.fray-ansi-bold")).to_have_text("green bold", timeout=20_000)
    expect(log.locator("span[style='color:#ff8700']")).to_have_text("orange")
    expect(log.locator(f"a[href='{WANDB}'][target='_blank'][rel='noopener noreferrer']")).to_have_count(1)
    text = log.inner_text()
    assert text.count("it/s]") == 1 and "1000/1000" in text and "\x1b" not in text
    assert "training done" in text


SIDEBAR_PAGE = 1000
"""Rows the sidebar reads per page (``PAGE`` in labextension/src/logfeed.ts)."""
TASKS, LINES_PER_TASK = 4, 50_000
"""A 200,000-line log, each task well within the controller's per-task cap (100,000 by default)."""


@pytest.mark.hub
def test_a_200000_line_log_keeps_a_few_hundred_dom_rows_while_scrolled_and_downloads_whole(
        lab: Lab, page: Page, lab_client: FrayClient) -> None:  # noqa: F811
    job_id = lab_client.submit(python_job(f"long-{uuid.uuid4().hex[:6]}", many_lines_script(LINES_PER_TASK),
                                          replicas=TASKS))
    lab_client.wait(job_id, timeout=180)
    view = open_in_sidebar(page, lab, job_id)
    logs = view.locator(".fj-Logs")
    expect(logs.locator(".fj-LogLine").last).to_contain_text(f"line {LINES_PER_TASK} of {LINES_PER_TASK}",
                                                             timeout=30_000)
    latest = view.get_by_role("button", name="Jump to latest")
    expect(latest).to_be_hidden()
    newest = int(logs.locator(".fj-LogLine").last.get_attribute("data-seq") or 0)
    first_seen = []
    for _ in range(3):  # scroll to the top three times: each reads the page before
        before = int(logs.locator(".fj-LogLine").first.get_attribute("data-seq") or 0)  # read before the scroll:
        logs.evaluate("node => { node.scrollTop = 0; }")  # the older page may be shown by the next line
        page.wait_for_function("([node, seq]) => Number(node.querySelector('.fj-LogLine').dataset.seq) < seq",
                               arg=[logs.element_handle(), before])
        first_seen.append(int(logs.locator(".fj-LogLine").first.get_attribute("data-seq") or 0))
        assert logs.locator(".fj-LogLine").count() <= MOST_DOM_ROWS
    assert first_seen == sorted(first_seen, reverse=True)
    assert first_seen[-1] < newest - 1.5 * SIDEBAR_PAGE  # older pages were read: opening reads the newest one
    expect(latest).to_be_visible()
    assert page.evaluate("() => document.querySelectorAll('.fj-LogLine').length") <= MOST_DOM_ROWS
    latest.click()
    expect(logs.locator(".fj-LogLine").last).to_contain_text(f"line {LINES_PER_TASK} of {LINES_PER_TASK}")
    expect(latest).to_be_hidden()

    with page.expect_download() as download:
        view.get_by_role("link", name="Download full log").click()
    path = download.value.path()
    assert download.value.suggested_filename == f"{job_id.strip('/').replace('/', '-')}.log"
    lines = Path(path).read_text().splitlines()
    assert len(lines) == TASKS * LINES_PER_TASK == 200_000
    assert sorted(lines) == sorted(f"[{task}] line {i} of {LINES_PER_TASK}" for task in range(TASKS)
                                   for i in range(1, LINES_PER_TASK + 1))
