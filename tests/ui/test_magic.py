"""``%%fray`` in a real JupyterLab: the status panel follows a job to SUCCEEDED with every task's
log lines, and its Cancel button stops a long job (KILLED)."""

from __future__ import annotations

from pathlib import Path

from labserver import Lab
from magic_fixtures import lab_controller  # noqa: F401 - fixture
from pages import LOAD, run_cells
from playwright.sync_api import Page, expect

PER_TASK = ("%%fray --replicas 2 --name ui-hello\n"
            "from fray_jupyter import task_info\n"
            "print('hello from task', task_info().task_index, '<b>not bold</b>')")
LONG = ("%%fray --name ui-long\n"
        "import time\n"
        "print('working', flush=True)\n"
        "time.sleep(300)")


def test_the_panel_reaches_succeeded_with_every_tasks_logs(
        lab: Lab, lab_controller: Path, page: Page) -> None:  # noqa: F811 - the imported fixture
    panel = run_cells(page, lab.open_url(lab.notebook("magic-ok.ipynb", LOAD, PER_TASK)), 2).locator(
        ".fray-status-panel")
    expect(panel.locator(".fray-status-header .fray-job-id")).to_have_text("/alice/ui-hello", timeout=60_000)
    expect(panel.locator(".fray-status-header .fray-badge")).to_have_text("SUCCEEDED", timeout=60_000)
    log = panel.locator("pre.fray-log")
    expect(log).to_contain_text("[0] hello from task 0 <b>not bold</b>")  # job HTML shown as text
    expect(log).to_contain_text("[1] hello from task 1")
    expect(panel.locator(".fray-status-tasks .fray-task")).to_have_count(2)
    expect(panel.locator(".fray-status-progress")).to_contain_text("2/2")
    expect(panel.locator("button.fray-status-cancel")).to_be_disabled()
    assert (lab_controller / "fray-controller.json").exists()


def test_cancel_stops_a_long_job(lab: Lab, lab_controller: Path, page: Page) -> None:  # noqa: F811 - fixture
    panel = run_cells(page, lab.open_url(lab.notebook("magic-cancel.ipynb", LOAD, LONG)), 2).locator(
        ".fray-status-panel")
    badge = panel.locator(".fray-status-header .fray-badge")
    expect(panel.locator("pre.fray-log")).to_contain_text("[0] working", timeout=60_000)
    expect(badge).to_have_text("RUNNING")
    panel.locator("button.fray-status-cancel").click()
    expect(badge).to_have_text("KILLED", timeout=30_000)
    expect(panel.locator(".fray-status-failure")).to_contain_text("job /alice/ui-long KILLED")
    expect(panel.locator("button.fray-status-cancel")).to_be_disabled()


def test_dry_run_output_is_styled_as_the_pickers_preview(lab: Lab, page: Page) -> None:
    """JupyterLab right-aligns the cells of tables in HTML outputs and stripes their rows; the
    preview's cells stay left-aligned with its own padding and unstriped, as in the picker's
    preview widget."""
    cell = "%%fray --dry-run --name ui-dry -e WANDB_MODE offline\nprint('hi')"
    notebook = run_cells(page, lab.open_url(lab.notebook("magic-dry.ipynb", LOAD, cell)), 2)
    env_cell = notebook.locator(".jp-OutputArea-output .fray-preview table td").first
    expect(env_cell).to_be_visible(timeout=60_000)
    styles = env_cell.evaluate("cell => [getComputedStyle(cell).textAlign, getComputedStyle(cell).paddingRight]")
    assert styles == ["left", "10px"]
    rows = notebook.locator(".jp-OutputArea-output .fray-preview table.fray-env tr")
    backgrounds = rows.evaluate_all("rows => rows.map(row => getComputedStyle(row).backgroundColor)")
    assert len(backgrounds) >= 2 and set(backgrounds) == {"rgba(0, 0, 0, 0)"}  # no striped rows
