"""The picker in a real JupyterLab (and Notebook 7): change the TPU type and slice count in the
rendered widget and see the replica count, the diagram and the protobuf text follow."""

from __future__ import annotations

import pytest
from labserver import Lab, run_first_cell
from playwright.sync_api import Page, expect

from fray_jupyter.resources.tables import TPU_TOPOLOGY_BY_NAME
from fray_jupyter.widgets.controls import tpu_label

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
