"""Nested progress bars as a terminal shows them, in a real JupyterLab (Debian Chromium): a 4-task job
whose tasks each draw an outer bar and a nested ``leave=False`` inner bar — the bytes tqdm writes for
them (``position=1``: a newline down, the frame, ``ESC [ A`` back up; blanks to clear), which
``tests/test_views_terminal.py`` proves against real tqdm — shows at most 2 bar lines per task, with
the final counts, in the sidebar and in a ``%%fray`` cell's status panel. The log fits in one page
of the sidebar: an older page is played on its own above the rows held, so a bar drawn across that
boundary shows a frame on each side of it (``labextension/src/logrows.ts``)."""

from __future__ import annotations

import uuid
from pathlib import Path

from jobs_fixtures import jobs_controller, lab_client  # noqa: F401  (fixtures)
from labserver import Lab
from magic_fixtures import lab_controller  # noqa: F401 - fixture
from pages import LOAD, open_in_sidebar, run_cells
from playwright.sync_api import Page, expect

from fray_jupyter.client import FrayClient
from tests.logjobs import python_job

TASKS, EPOCHS, STEPS = 4, 3, 30  # 4 x 190 rows: one page of the sidebar (see the module docstring)
NESTED_BARS = f"""
import sys
def frame(name, n, total):
    filled = 20 * n // total
    return f"{{name}}: {{100 * n // total:3d}}%|{{'#' * filled}}{{' ' * (20 - filled)}}| {{n}}/{{total}} [00:01<00:00, 9.00it/s]"
out = sys.stderr
out.write("\\r" + frame("epoch", 0, {EPOCHS}))
for epoch in range({EPOCHS}):
    for step in range({STEPS} + 1):
        out.write("\\n\\r" + frame("step", step, {STEPS}) + "\\x1b[A")
        out.flush()
    out.write("\\n\\r" + " " * 60 + "\\x1b[A")  # leave=False: the inner bar is cleared
    out.write("\\r" + frame("epoch", epoch + 1, {EPOCHS}))
    out.flush()
out.write("\\n")
"""


def test_nested_bars_show_one_line_each_per_task_in_the_sidebar(
        lab: Lab, page: Page, lab_client: FrayClient) -> None:  # noqa: F811
    job_id = lab_client.submit(python_job(f"nested-{uuid.uuid4().hex[:6]}", NESTED_BARS, replicas=TASKS))
    lab_client.wait(job_id, timeout=120)
    assert len(lab_client.logs(job_id, max_lines=5000).entries) > TASKS * EPOCHS * STEPS  # every redraw stored
    logs = open_in_sidebar(page, lab, job_id).locator(".fj-Logs")
    bars = logs.locator(".fj-LogLine", has_text="it/s]")
    expect(bars).to_have_count(TASKS, timeout=30_000)  # the outer bar of each task; the inner ones cleared
    for index in range(TASKS):
        expect(bars.nth(index)).to_contain_text(f"epoch: 100%|{'#' * 20}| {EPOCHS}/{EPOCHS}")
    logs.evaluate("node => { node.scrollTop = 0; }")
    expect(logs.locator(".fj-LogLine").first).to_be_visible()
    logs.evaluate("node => { node.scrollTop = node.scrollHeight; }")
    expect(bars.last).to_contain_text(f"{EPOCHS}/{EPOCHS}")


def test_nested_bars_show_one_line_each_per_task_in_the_status_panel(
        lab: Lab, lab_controller: Path, page: Page) -> None:  # noqa: F811
    cell = f"%%fray --name ui-nested-{uuid.uuid4().hex[:6]} --replicas {TASKS}\n{NESTED_BARS}"
    panel = run_cells(page, lab.open_url(lab.notebook("nested-panel.ipynb", LOAD, cell)), 2).locator(".fray-status-panel")
    expect(panel.locator(".fray-status-header .fray-badge")).to_have_text("SUCCEEDED", timeout=120_000)
    log = panel.locator("pre.fray-log")
    expect(log).to_contain_text(f"{EPOCHS}/{EPOCHS}", timeout=30_000)
    text = log.inner_text()
    assert text.count("it/s]") == TASKS, text
    assert text.count(f"epoch: 100%|{'#' * 20}| {EPOCHS}/{EPOCHS}") == TASKS, text
    assert f"{STEPS}/{STEPS}" not in text  # the inner bars were cleared when done
