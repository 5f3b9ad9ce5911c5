"""The product in Notebook 7 (``jupyter notebook``): one document per page, no status bar, side
panels instead of JupyterLab's side bars. ``%%fray --dry-run`` shows its preview, a ``%%fray`` cell's
status panel follows its job to SUCCEEDED and ``%fray jobs`` lists it; the Fray Jobs sidebar opens from View > Left Sidebar on a notebook page and from the
command palette on the file browser page, lists jobs, raises a notification when one ends whose
"Show" reopens the closed panel on that job, and shows a job's tasks, logs and output files. (The picker in Notebook 7: test_picker.py. Every page is
watched for errors from our extension: conftest.py.)"""

from __future__ import annotations

import uuid

import pytest
from jobs_fixtures import SIDEBAR_ID, jobs_controller, lab_client  # noqa: F401  (fixtures)
from labserver import KERNEL_IDLE, Lab
from pages import LOAD, row, run_cells
from playwright.sync_api import Page, expect

from fray_jupyter.client import FrayClient
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig

SIDEBAR_ADDED = f"() => Array.from(window.jupyterapp?.shell.widgets('left') ?? []).some(w => w.id === '{SIDEBAR_ID}')"
STEPS = ("import os, pathlib, time\n"
         "print('step 1', flush=True)\n"
         "pathlib.Path(os.environ['IRIS_OUTPUT_DIR'], 'metrics.txt').write_text('loss 0.25\\n')\n"
         "time.sleep(5)\n"
         "print('step 2')")
"""A short ``%%fray`` cell body: a log line, an output file, a few seconds' wait (to be seen
running), a last line."""


def wait_for_sidebar(page: Page) -> None:
    """Wait until Notebook 7 has started and our plugin has put the sidebar in the left area."""
    page.wait_for_function("() => window.jupyterapp?.name === 'Jupyter Notebook'")
    page.evaluate("async () => { await window.jupyterapp.restored; }")
    page.wait_for_function(SIDEBAR_ADDED)
    expect(page.locator(f"#{SIDEBAR_ID}")).to_be_hidden()  # Notebook 7 starts with its side panels closed


def open_menu(page: Page, *labels: str) -> None:
    """Click through Notebook 7's menu bar: ``open_menu(page, "View", "Left Sidebar", "Show Fray Jobs")``."""
    page.locator("#menu-panel .lm-MenuBar-itemLabel", has_text=labels[0]).click()
    for label in labels[1:]:
        page.locator(".lm-Menu-itemLabel", has_text=label).click()


def close_side_panel(page: Page) -> None:
    """Close the left side panel with Notebook 7's own button (an ×: there is no tab bar to click)."""
    page.locator("#jp-left-stack .jp-SidePanel-collapse").click()


def test_fray_cells_show_a_preview_a_status_panel_at_succeeded_and_the_jobs_table(
        lab: Lab, page: Page, lab_client: FrayClient) -> None:  # noqa: F811 - the controller the kernel finds
    name = f"nb7-hello-{uuid.uuid4().hex[:6]}"
    dry = "%%fray --dry-run --tpu v5p-8 --slices 2 --name nb7-dry\nprint('hi')"
    cell = (f"%%fray --replicas 2 --name {name}\n"
            "from fray_jupyter import task_info\n"
            "print('hello from task', task_info().task_index)")
    url = lab.open_url(lab.notebook(f"{name}.ipynb", LOAD, dry, cell, f"%fray jobs --name {name}"), app="notebook")
    notebook = run_cells(page, url, 3)
    expect(notebook.locator(".jp-OutputArea-output .fray-preview .fray-replicas")).to_have_text("2", timeout=60_000)
    panel = notebook.locator(".fray-status-panel")
    expect(panel.locator(".fray-status-header .fray-job-id")).to_have_text(f"/alice/{name}", timeout=60_000)
    expect(panel.locator(".fray-status-header .fray-badge")).to_have_text("SUCCEEDED", timeout=60_000)
    log = panel.locator("pre.fray-log")
    expect(log).to_contain_text("[0] hello from task 0")
    expect(log).to_contain_text("[1] hello from task 1")
    expect(panel.locator(".fray-status-tasks .fray-task")).to_have_count(2)
    expect(panel.locator("button.fray-status-cancel")).to_be_disabled()
    page.keyboard.press("Shift+Enter")  # the last cell: %fray jobs
    expect(notebook.locator(".jp-OutputArea-output table.fray-jobs")).to_contain_text(f"/alice/{name}")


@pytest.mark.hub
def test_the_sidebar_opens_from_the_view_menu_and_follows_a_notebook_job(
        lab: Lab, page: Page, lab_client: FrayClient) -> None:  # noqa: F811
    name = f"nb7-steps-{uuid.uuid4().hex[:6]}"
    job_id = f"/alice/{name}"
    url = lab.open_url(lab.notebook(f"{name}.ipynb", LOAD, f"%%fray --name {name}\n{STEPS}"), app="notebook")
    page.goto(url)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    wait_for_sidebar(page)
    open_menu(page, "View", "Left Sidebar", "Show Fray Jobs")
    sidebar = page.locator(f"#{SIDEBAR_ID}")
    expect(sidebar).to_be_visible()

    page.locator(".jp-Cell .jp-InputArea-editor >> visible=true").first.click()
    page.keyboard.press("Shift+Enter")
    page.keyboard.press("Shift+Enter")
    expect(row(page, job_id).locator(".fj-Badge")).to_have_text("running", timeout=30_000)
    toast = page.locator(".Toastify__toast", has_text=f"Fray job {name} succeeded")
    expect(toast).to_be_visible(timeout=30_000)
    expect(row(page, job_id).locator(".fj-Badge")).to_have_text("succeeded")

    close_side_panel(page)
    expect(sidebar).to_be_hidden()
    toast.get_by_role("button", name="Show").click()  # the notification's action reopens the panel on the job
    expect(sidebar).to_be_visible()
    view = sidebar.locator(".fj-JobView")
    expect(view.locator(".fj-JobView-title")).to_have_text(name)
    expect(view.locator(".fj-Tasks tbody tr")).to_have_count(1)
    expect(view.locator(".fj-Logs")).to_contain_text("step 2", timeout=20_000)
    output = view.locator(".fj-Output")
    expect(output).to_contain_text("metrics.txt", timeout=20_000)
    output.get_by_role("button", name="Show metrics.txt").click()
    expect(output.locator("pre")).to_have_text("loss 0.25\n")


def test_the_sidebar_opens_from_the_palette_on_the_file_browser_page(
        lab: Lab, page: Page, lab_client: FrayClient) -> None:  # noqa: F811
    name = f"nb7-tree-{uuid.uuid4().hex[:6]}"
    job = JobRequest(name=name, entrypoint=Entrypoint.from_binary("sh", ["-c", "echo from the tree page"]),
                     resources=ResourceConfig(cpu=1, ram="256m", disk="1g"))
    job_id = lab_client.submit(plan(job, user="alice"))
    lab_client.wait(job_id, timeout=60)
    page.goto(lab.home_url("notebook"))
    wait_for_sidebar(page)
    open_menu(page, "View", "Activate Command Palette")
    page.locator(".lm-CommandPalette-input").fill("Show Fray Jobs")
    page.locator(".lm-CommandPalette-item[data-command='fray-jupyter:show-jobs']").click()
    sidebar = page.locator(f"#{SIDEBAR_ID}")
    expect(sidebar).to_be_visible()
    expect(row(page, job_id).locator(".fj-Badge")).to_have_text("succeeded", timeout=20_000)
    row(page, job_id).click()
    expect(sidebar.locator(".fj-JobView .fj-Logs")).to_contain_text("from the tree page", timeout=20_000)

    close_side_panel(page)
    expect(sidebar).to_be_hidden()
