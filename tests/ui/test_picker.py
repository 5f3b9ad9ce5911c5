"""The picker in a real JupyterLab (and Notebook 7): change the TPU type and slice count in the
rendered widget and see the replica count, the diagram and the protobuf text follow; against a
controller, the budget line shows the job's spend and the band it will run at."""

from __future__ import annotations

from pathlib import Path

import pytest
from labserver import Lab, run_first_cell
from playwright.sync_api import Page, expect

from fray_jupyter.client.client import FrayClient
from fray_jupyter.resources.tables import TPU_TOPOLOGY_BY_NAME
from fray_jupyter.widgets.controls import tpu_label
from tests.controller_harness import launch_request, start_controller, stop_quietly
from tests.waiting import until

CELL = ("from fray_jupyter import ResourceConfig\n"
        "from fray_jupyter.widgets import ResourcePicker\n"
        "ResourcePicker(resources=ResourceConfig.with_tpu('v5p-8'))")


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_changing_type_and_slices_updates_the_preview(lab: Lab, page: Page, app: str) -> None:
    run_first_cell(page, lab.open_url(lab.notebook(f"picker-{app}.ipynb", CELL), app))
    preview = page.locator(".fray-preview-area")
    replicas = preview.locator(".fray-replicas")
    expect(replicas).to_have_text("1", timeout=60_000)
    expect(preview.locator("pre.fray-request")).to_contain_text('variant: "v5p-8"')

    page.locator(".fray-tpu-type select").select_option(label=tpu_label(TPU_TOPOLOGY_BY_NAME["v5p-32"]))
    expect(replicas).to_have_text("4")
    expect(preview.locator("svg.fray-diagram")).to_have_attribute("data-groups", "1")
    expect(preview.locator("pre.fray-request")).to_contain_text('variant: "v5p-32"')
    expect(preview.locator("pre.fray-request mark", has_text="v5p-32")).to_have_count(1)

    slices = page.locator(".fray-slices input")
    slices.fill("3")
    slices.press("Enter")
    expect(replicas).to_have_text("12")
    # As Iris places it, a coscheduled job is ONE gang: 3 slices of v5p-32 make one 12-task gang,
    # which no 4-VM slice holds (views/diagram.py); the row shows tasks 0-3, "… 7 more", task 11.
    diagram = preview.locator("svg.fray-diagram")
    expect(diagram).to_have_attribute("data-groups", "1")
    expect(diagram).to_have_attribute("data-replicas", "12")
    expect(diagram.locator(".fray-group")).to_have_count(1)
    expect(diagram.locator(".fray-group")).to_contain_text("never placed by Iris")
    expect(diagram.locator(".fray-task")).to_have_count(5)
    expect(diagram.locator(".fray-more")).to_have_text("… 7 more")
    expect(preview.locator("pre.fray-request")).to_contain_text("replicas: 12")
    expect(preview.locator("pre.fray-request mark", has_text="replicas: 12")).to_have_count(1)
    expect(preview.locator(".fray-magic")).to_have_text("%%fray --tpu v5p-32 --slices 3 --name job")


def test_an_invalid_setting_shows_an_error_and_a_stale_preview(lab: Lab, page: Page) -> None:
    run_first_cell(page, lab.open_url(lab.notebook("picker-error.ipynb", CELL)))
    preview = page.locator(".fray-preview-area")
    expect(preview.locator(".fray-replicas")).to_have_text("1", timeout=60_000)
    ram = page.locator(".fray-ram input")
    ram.fill("lots")
    ram.press("Enter")
    expect(preview.locator(".fray-error")).to_contain_text("RAM")
    expect(preview.locator(".fray-stale-banner")).to_be_visible()
    expect(page.locator(".fray-ram.fray-invalid")).to_have_count(1)
    ram.fill("")
    ram.press("Enter")
    expect(preview.locator(".fray-error")).to_have_count(0)


def test_the_picker_shows_the_spend_and_the_band_it_will_run_at(lab: Lab, page: Page, tmp_path: Path) -> None:
    """Against a controller whose default limit is 1, with alice's one running task over it: her next
    job runs at batch, and the line follows the TPU type."""
    controller = start_controller(tmp_path / "state", "--slots", "2", "--budget-limit", "1")
    try:
        with FrayClient(controller.info.url, controller.info.token) as client:
            busy = client.submit(launch_request("busy", "sleep 300", user="alice"))
            until(lambda: client.user_budget("alice").budget_spent != 0, "alice's task placed", feed=client)
            cell = (f"import os\nos.environ['FRAY_CONTROLLER_TOKEN'] = {controller.info.token!r}\n"
                    "from fray_jupyter import ResourceConfig\nfrom fray_jupyter.widgets import ResourcePicker\n"
                    f"ResourcePicker(resources=ResourceConfig.with_tpu('v5p-8'), user='alice', "
                    f"controller={controller.info.url!r})")
            run_first_cell(page, lab.open_url(lab.notebook("picker-budget.ipynb", cell)))
            line = page.locator(".fray-fit-line .fray-budget")
            expect(line).to_have_attribute("data-band", "batch", timeout=60_000)
            expect(line).to_contain_text("budget: this job spends 4,744 (1 task(s) × 4,744: 1000 × 4 accelerator(s)")
            expect(line).to_contain_text("alice has spent 5 of 1, over the limit")
            expect(line).to_contain_text("band: batch — asked interactive, but alice is over budget")
            page.locator(".fray-tpu-type select").select_option(label=tpu_label(TPU_TOPOLOGY_BY_NAME["v5p-32"]))
            expect(line).to_contain_text("budget: this job spends 18,976 (4 task(s) × 4,744")
            client.terminate(busy)
    finally:
        stop_quietly(controller)
