"""The Fray Jobs sidebar's job tree in a real JupyterLab (Debian Chromium) on the embedded controller:
a coordinator with 3 children is one root row; its ▸ lists the children live, each labelled by its
own name one level deeper; a grandchild submitted later appears under its parent within 1.5 s; a
child's detail names its parent as a link; the expanded set survives a reload; cancelling the root
marks the whole tree KILLED; every row has its per-state task bar.

The children are launched by the test, as a coordinator's task would launch them (a LaunchJob named
``<parent>/<child>``, what Iris's in-task client sends); that tasks really do it is proven by
``tests/test_marin_tools.py``. Each test opens a workspace of its own, so the view it leaves in
JupyterLab's state DB reaches no other test."""

from __future__ import annotations

import time
import uuid

from jobs_fixtures import SIDEBAR_ID, jobs_controller, lab_client, launch_raw  # noqa: F401  (fixtures)
from labserver import Lab
from pages import LONG, launch_child, row, saved_view, show_sidebar, wait_running
from playwright.sync_api import Page, expect

from fray_jupyter.client import FrayClient
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.runtime_file import ControllerInfo
from tests.controller_harness import launch_request


def test_a_coordinator_is_one_root_whose_children_and_grandchildren_follow_live_and_die_with_it(
        lab: Lab, page: Page, jobs_controller: ControllerInfo, lab_client: FrayClient) -> None:  # noqa: F811
    tag = uuid.uuid4().hex[:6]
    root = launch_raw(jobs_controller, launch_request(f"coord-{tag}", LONG))
    wait_running(lab_client, root)
    steps = [launch_child(jobs_controller, root, f"step-{i}") for i in (1, 2, 3)]
    first_grandchild = launch_child(jobs_controller, steps[0], "eval")
    workspace = f"tree-{tag}"
    page.goto(f"{lab.url}/lab/workspaces/{workspace}?token={lab.token}")
    show_sidebar(page)
    sidebar = page.locator(f"#{SIDEBAR_ID}")

    root_row = row(page, root)
    expect(root_row).to_be_visible(timeout=20_000)
    expect(sidebar.locator(f".fj-JobRow[data-job-id^='{root}/']")).to_have_count(0)  # one root row
    toggle = root_row.locator("xpath=..").get_by_role("button", name=f"Show the child jobs of coord-{tag}")
    toggle.click()
    for index, step in enumerate(steps, start=1):
        expect(row(page, step).locator(".fj-JobRow-name")).to_have_text(f"step-{index}")
    indent = page.evaluate("""([a, b]) => [a, b].map(id => parseFloat(getComputedStyle(
        document.querySelector(`.fj-JobRow[data-job-id='${id}']`).parentElement).paddingLeft))""", [root, steps[0]])
    assert indent[1] > indent[0]
    row(page, steps[0]).locator("xpath=..").get_by_role("button", name="Show the child jobs of step-1").click()
    expect(row(page, first_grandchild).locator(".fj-JobRow-name")).to_have_text("eval")

    # A grandchild submitted now shows up under its (expanded) parent within 1.5 s.
    page.evaluate("""prefix => {
        window.__frayTree = {};
        new MutationObserver(() => {
            const found = document.querySelector(`.fj-JobRow[data-job-id='${prefix}/late']`);
            if (found && !window.__frayTree.listed) { window.__frayTree.listed = Date.now(); }
        }).observe(document.body, { subtree: true, childList: true });
    }""", steps[0])
    late = launch_child(jobs_controller, steps[0], "late")
    expect(row(page, late)).to_be_visible(timeout=10_000)
    appeared_ms = page.evaluate("window.__frayTree.listed") - lab_client.status(late).submitted_at.epoch_ms
    assert appeared_ms <= 1500, f"the grandchild was listed {appeared_ms} ms after it was submitted"
    tree = [root, *steps, first_grandchild, late]
    tree_rows = sidebar.locator(f".fj-TreeItem:has(.fj-JobRow[data-job-id^='{root}'])")
    expect(tree_rows.locator(".fj-TaskBar")).to_have_count(len(tree))  # a task bar on every row

    # A child's detail names its parent as a link; the link opens the parent.
    row(page, steps[1]).click()
    view = page.locator(".fj-JobView")
    expect(view.locator(".fj-JobView-parent")).to_have_text(f"parent: {root}")
    view.get_by_role("button", name=f"Open the parent job {root}").click()
    expect(view.locator(".fj-JobView-title")).to_have_text(f"coord-{tag}")
    expect(view.locator(".fj-Children .fj-ChildLink")).to_have_text(["step-1", "step-2", "step-3"])
    view.get_by_role("button", name="Back to all jobs").click()

    # The expanded parents are kept (JupyterLab's state DB, in this workspace) and survive a reload.
    deadline = time.monotonic() + 20
    while steps[0] not in saved_view(page, lab, workspace):
        assert time.monotonic() < deadline, "the expanded parents were never saved"
        page.wait_for_timeout(100)
    page.reload()
    show_sidebar(page)
    expect(row(page, late)).to_be_visible(timeout=20_000)
    expect(tree_rows).to_have_count(len(tree))

    # Cancelling the root (with the dialog's confirmation) marks the whole tree KILLED.
    root_row.click()
    view.get_by_role("button", name="Cancel job").click()
    page.locator(".jp-Dialog .jp-Dialog-button.jp-mod-warn").click()
    expect(view.locator(".fj-JobView-head .fj-Badge")).to_have_attribute("data-state", "killed", timeout=20_000)
    view.get_by_role("button", name="Back to all jobs").click()
    for job_id in tree:
        expect(row(page, job_id).locator(".fj-Badge")).to_have_attribute("data-state", "killed", timeout=20_000)
    assert {lab_client.status(job_id).state for job_id in tree} == {job_pb2.JOB_STATE_KILLED}
