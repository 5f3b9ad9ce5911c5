"""A coordinator's ``%%fray`` status panel in a real JupyterLab: its steps appear in the panel's tree
as they are submitted (a step's own step under it), the log tail follows the whole tree or one step,
and Cancel on the coordinator marks the whole tree KILLED in the panel."""

from __future__ import annotations

import uuid

from labserver import Lab
from magic_fixtures import lab_controller  # noqa: F401 - fixture
from pages import LOAD, run_cells
from playwright.sync_api import Page, expect

COORDINATOR = """%%fray --name {name}
import sys, time
from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, fray_client
def step(name, code):
    return fray_client().submit(JobRequest(name=name, entrypoint=Entrypoint.from_binary(sys.executable, ["-c", code]),
                                           resources=ResourceConfig.with_cpu(cpu=1, ram="256m", disk="1g")))
NESTED = '''
import sys, time
from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, fray_client
print("step-0 submits its own step", flush=True)
fray_client().submit(JobRequest(name="sub", entrypoint=Entrypoint.from_binary(sys.executable, ["-c", "import time; time.sleep(300)"]),
                                resources=ResourceConfig.with_cpu(cpu=1, ram="256m", disk="1g"))).wait()
'''
steps = [step("step-0", NESTED)] + [step(f"step-{{i}}", f"print('hello from step {{i}}', flush=True); import time; time.sleep(300)")
                                    for i in (1, 2)]
steps[0].wait()
"""


def test_a_coordinators_tree_grows_live_and_cancel_kills_all_of_it(
        lab: Lab, lab_controller: object, page: Page) -> None:  # noqa: F811 - the imported fixture
    name = f"ui-coord-{uuid.uuid4().hex[:6]}"
    root = f"/alice/{name}"
    notebook = run_cells(page, lab.open_url(lab.notebook(f"{name}.ipynb", LOAD, COORDINATOR.format(name=name))), 2)
    panel = notebook.locator(".fray-status-panel")
    tree = panel.locator(".fray-status-tree")
    rows = tree.locator("tr.fray-tree-row")
    expect(rows).to_have_count(4, timeout=60_000)  # three steps, and step-0's own step
    assert rows.evaluate_all("rows => rows.map(r => [r.dataset.jobId, r.dataset.depth])") == [
        [f"{root}/step-0", "1"], [f"{root}/step-0/sub", "2"], [f"{root}/step-1", "1"], [f"{root}/step-2", "1"]]
    expect(rows.locator(".fray-badge")).to_have_text(["RUNNING"] * 4, timeout=60_000)
    log = panel.locator(".fray-status-logs pre.fray-log")
    expect(log).to_contain_text("[step-1/0] hello from step 1", timeout=30_000)  # the whole tree's by default
    expect(log).to_contain_text("[step-0/0] step-0 submits its own step")
    choice = panel.locator(".fray-status-logs-of select")
    choice.select_option(label="step-2")
    expect(log).to_contain_text("[0] hello from step 2", timeout=30_000)
    expect(log).not_to_contain_text("hello from step 1")

    panel.locator("button.fray-status-cancel").click()
    expect(panel.locator(".fray-status-header .fray-badge")).to_have_text("KILLED", timeout=30_000)
    expect(rows.locator(".fray-badge")).to_have_text(["KILLED"] * 4, timeout=30_000)
    expect(panel.locator("button.fray-status-cancel")).to_be_disabled()
    snapshot = notebook.locator(".fray-snapshot")
    expect(snapshot).to_have_attribute("data-final", "true", timeout=30_000)
    expect(snapshot).to_be_hidden()  # beside the live panel
