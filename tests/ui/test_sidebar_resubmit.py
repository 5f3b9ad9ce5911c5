"""Resubmit from the Fray Jobs sidebar (real JupyterLab, Debian Chromium, the embedded controller):
after a confirmation, a finished job's request is sent again as ``<name>-r2``, which opens in the
job view, is announced (the sidebar's live region and a JupyterLab notification) and is listed; a
refused resubmit says why in the sidebar's error line and leaves the view where it was."""

from __future__ import annotations

import uuid

from frontend_errors import FrontendErrors
from jobs_fixtures import SIDEBAR_ID, jobs_controller, lab_client  # noqa: F401  (fixtures)
from labserver import Lab
from pages import open_in_sidebar, row
from playwright.sync_api import Locator, Page, expect

from fray_jupyter.client import FrayClient
from tests.controller_harness import launch_request


def resubmit(page: Page, view: Locator) -> None:
    """Click Resubmit and confirm in JupyterLab's dialog."""
    view.locator(".fj-Resubmit").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text("Resubmit job?")
    dialog.locator("button", has_text="Resubmit").click()


def test_resubmit_creates_the_new_job_and_opens_it(lab: Lab, page: Page,
                                                   lab_client: FrayClient) -> None:  # noqa: F811
    name = f"again-{uuid.uuid4().hex[:6]}"
    old = lab_client.submit(launch_request(name, "echo resubmitted"))
    lab_client.wait(old, timeout=60)
    lab_client.submit(launch_request(f"{name}-r2", "true"))  # taken: the next free name is -r3

    view = open_in_sidebar(page, lab, old)
    resubmit(page, view)

    expect(view.locator(".fj-JobView-title")).to_have_text(f"{name}-r3", timeout=20_000)
    expect(page.locator(f"#{SIDEBAR_ID} .fj-Notice")).to_have_text(f"Resubmitted {old} as {old}-r3.")
    expect(page.locator(".Toastify__toast", has_text=f"Fray job {name} resubmitted as {name}-r3")).to_have_count(1)
    assert lab_client.job(f"{old}-r3").request.entrypoint == lab_client.job(old).request.entrypoint
    view.locator("button", has_text="← All jobs").click()
    expect(row(page, f"{old}-r3")).to_be_visible(timeout=20_000)
    expect(page.locator(f"#{SIDEBAR_ID} .fj-Notice")).to_be_hidden()


def test_a_refused_resubmit_says_why(lab: Lab, page: Page, lab_client: FrayClient,  # noqa: F811
                                     frontend_errors: FrontendErrors) -> None:
    name = f"many-{uuid.uuid4().hex[:6]}"
    for number in range(2, 52):  # every name resubmit would try is taken
        lab_client.submit(launch_request(f"{name}-r{number}", "true"))
    old = lab_client.submit(launch_request(name, "true"))  # the newest: on the sidebar's first page

    view = open_in_sidebar(page, lab, old)
    resubmit(page, view)
    expect(page.locator(f"#{SIDEBAR_ID} > .fj-Error")).to_have_text(
        f"cannot resubmit {old}: /alice/{name}-r2 … -r51 are all taken; give a name", timeout=20_000)
    expect(view.locator(".fj-JobView-title")).to_have_text(name)
    expect(view.locator(".fj-Resubmit")).to_be_enabled()
    refusal = [p for p in frontend_errors.problems if p.startswith("HTTP 400 for POST") and "/resubmit?" in p]
    assert len(refusal) == 1, frontend_errors.problems  # the refusal itself: expected, and only it
    frontend_errors.problems.remove(refusal[0])
