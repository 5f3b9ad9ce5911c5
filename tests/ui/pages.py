"""What browser tests do on a page, shared by every test module: open a notebook and run its cells,
open the Fray Jobs sidebar and find a job's row, launch child jobs as a coordinator's task would,
and read the workspace JupyterLab saved. Test modules import these from here, never from each other."""

from __future__ import annotations

from jobs_fixtures import SIDEBAR_ID, launch_raw
from labserver import KERNEL_IDLE, Lab
from playwright.sync_api import Locator, Page, expect

from fray_jupyter.client import FrayClient
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.runtime_file import ControllerInfo
from tests.controller_harness import launch_request
from tests.waiting import until

LOAD = "%load_ext fray_jupyter.magics"
LONG = "sleep 300"
"""A command that outlives any test: the job stays RUNNING until the test ends it."""


def run_cells(page: Page, url: str, count: int) -> Locator:
    """Open the notebook alone (``reset``: the workspace would reopen earlier notebooks), wait for
    its kernel, run its first ``count`` cells in order, and return the notebook's panel."""
    page.goto(f"{url}&reset")
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    notebook = page.locator(".jp-NotebookPanel")
    expect(notebook).to_have_count(1)
    notebook.locator(".jp-Cell .jp-InputArea-editor").first.click()
    for _ in range(count):
        page.keyboard.press("Shift+Enter")
    return notebook


def show_sidebar(page: Page) -> None:
    """Open the sidebar once JupyterLab has restored its layout (every plugin has added its panels)."""
    page.wait_for_function("() => window.jupyterapp?.restored")
    page.evaluate("async () => { await window.jupyterapp.restored; }")
    expect(page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab[title='Fray Jobs']")).to_have_count(1)
    page.evaluate(f"window.jupyterapp.shell.activateById('{SIDEBAR_ID}')")
    expect(page.locator(f"#{SIDEBAR_ID}")).to_be_visible()


def row(page: Page, job_id: str) -> Locator:
    """The job's row in the sidebar list."""
    return page.locator(f".fj-JobRow[data-job-id='{job_id}']")


def open_in_sidebar(page: Page, lab: Lab, job_id: str) -> Locator:
    """Open JupyterLab, the sidebar, and the job's view; return the view."""
    page.goto(f"{lab.url}/lab?token={lab.token}")
    show_sidebar(page)
    row(page, job_id).click()
    view = page.locator(".fj-JobView")
    expect(view.locator(".fj-JobView-title")).to_have_text(job_id.rsplit("/", 1)[1], timeout=20_000)
    return view


def launch_child(info: ControllerInfo, parent: str, name: str, command: str = LONG) -> str:
    """Launch ``<parent>/<name>`` as the parent's task would (Iris's child-job naming)."""
    request = launch_request("child", command)  # Fray's name rules are the client's, not Iris's
    request.name = f"{parent}/{name}"
    return launch_raw(info, request)


def wait_running(client: FrayClient, job_id: str) -> None:
    """Block until ``job_id`` is RUNNING, woken by the controller's change feed (``tests/waiting.py``)."""
    until(lambda: client.state([job_id])[job_id] == job_pb2.JOB_STATE_RUNNING, f"{job_id} running", feed=client)


def saved_view(page: Page, lab: Lab, workspace: str) -> str:
    """The workspace as JupyterLab's server stores it (the state DB's entries included), as text."""
    return page.request.get(f"{lab.url}/lab/api/workspaces/{workspace}?token={lab.token}").text()
