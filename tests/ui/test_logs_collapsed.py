"""A log whose newest page collapses into fewer lines than the view holds reads to its start, in a
real JupyterLab: a 4-task job prints a coloured line with a W&B link, then nested
tqdm bars (a few thousand redraws per task), then a traceback. Its tail page shows a few dozen lines,
so no scrollbar appears; the sidebar's log view and the status panel's log read the pages before it
and show the first line, its colour and its link, with the traceback still below."""

from __future__ import annotations

import uuid

import pytest
from jobs_fixtures import jobs_controller, lab_client  # noqa: F401  (fixtures)
from labserver import Lab
from pages import LOAD, row, run_cells, show_sidebar
from playwright.sync_api import Page, expect

from fray_jupyter.client import FrayClient
from tests.logjobs import EXCEPTION_LINE, WANDB, collapsing_script, python_job

TASKS = 4
COLOURED_TEXT = f"green bold then orange, run at {WANDB}"


@pytest.fixture(scope="module")
def collapsing_job(lab_client: FrayClient) -> str:  # noqa: F811 - the imported fixture
    """The finished 4-task job whose tail collapses."""
    job_id = lab_client.submit(python_job(f"collapsing-{uuid.uuid4().hex[:6]}", collapsing_script(), replicas=TASKS))
    lab_client.wait(job_id, timeout=180)
    return job_id


def test_the_sidebar_reads_a_collapsing_log_to_its_first_line(lab: Lab, page: Page, collapsing_job: str,
                                                              lab_client: FrayClient) -> None:  # noqa: F811
    page.goto(f"{lab.url}/lab?token={lab.token}")
    show_sidebar(page)
    row(page, collapsing_job).click()
    logs = page.locator(".fj-JobView .fj-Logs")
    coloured = logs.locator(".fj-LogLine", has_text=COLOURED_TEXT)
    expect(coloured).to_have_count(TASKS, timeout=60_000)  # read from pages before the tail, without a scroll
    expect(coloured.first.locator(".fj-ansi-fg-2.fj-ansi-bold")).to_have_text("green bold")
    link = coloured.first.locator(f"a[href='{WANDB}']")
    expect(link).to_have_text(WANDB)
    expect(link).to_have_attribute("target", "_blank")
    expect(logs.locator(".fj-LogLine", has_text=EXCEPTION_LINE)).to_have_count(TASKS)  # the tail is still held
    logs.evaluate("node => { node.scrollTop = 0; }")
    first = logs.locator(".fj-LogLine").first
    expect(first).to_contain_text(COLOURED_TEXT)
    first_row = lab_client.logs(collapsing_job, max_lines=1).entries[0]
    expect(first).to_have_attribute("data-seq", str(first_row.seq))  # nothing above it: the log's first row


def test_the_status_panel_reads_a_collapsing_log_to_its_first_line(lab: Lab, page: Page, collapsing_job: str) -> None:
    cells = (LOAD, f"%fray status {collapsing_job}")
    panel = run_cells(page, lab.open_url(lab.notebook("collapsing-panel.ipynb", *cells)), 2).locator(".fray-status-panel")
    expect(panel.locator(".fray-status-header .fray-badge")).to_have_text("SUCCEEDED", timeout=60_000)
    log = panel.locator("pre.fray-log")
    expect(log.locator(".fray-ansi-fg-2.fray-ansi-bold")).to_have_count(TASKS, timeout=30_000)
    expect(log.locator(".fray-ansi-fg-2.fray-ansi-bold").first).to_have_text("green bold")
    expect(log.locator(f"a[href='{WANDB}'][target='_blank']")).to_have_count(TASKS)
    text = log.inner_text()
    assert text.splitlines()[0].endswith(COLOURED_TEXT) and text.count(EXCEPTION_LINE) == TASKS, text
