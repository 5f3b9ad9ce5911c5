"""The Fray Jobs sidebar on a shared cluster's worth of jobs (real JupyterLab, Debian Chromium): an
embedded controller holding 10,000 finished jobs of 50 users (``tests/seeded_store.shared_cluster``,
written through the store before it starts) stands in for the lab's controller while this module
runs. Opened, the sidebar lists my 50 newest roots of 200 and never holds more than a few dozen rows
in the DOM, even scrolled or with a parent expanded; Everyone and a picked user switch whose jobs
are listed; a search over all 10,000 finds a step 9,000 jobs down (past the deepest page Iris
lists); the view survives a reload. How fast each of these is: ``bench/sidebar_scale.py``."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest
from jobs_fixtures import SIDEBAR_ID, lab_runtime_file
from labserver import Lab
from pages import saved_view, show_sidebar
from playwright.sync_api import Locator, Page, expect

from fray_jupyter.runtime_file import read_runtime_file, write_runtime_file
from tests.controller_harness import ControllerProcess, start_controller, stop_quietly
from tests.seeded_store import ME, NEEDLE, seed_store, shared_cluster
from tests.waiting import until

MAX_DOM_ROWS = 100
"""Rows the windowed list may hold at once ("a few hundred" is the issue's bound; it holds ~30)."""


def server_follows(lab: Lab, url: str) -> None:
    """Wait until the lab's server reaches the controller at ``url`` (it resolves it per request)."""
    until(lambda: httpx.get(f"{lab.url}/fray/status", params={"token": lab.token}).json()["url"] == url,
          f"the server following {url}")


@pytest.fixture(scope="module")
def seeded(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    """The seeded controller, announced in the lab's runtime file for this module; the lab's own
    controller (if one runs) is announced again afterwards."""
    runtime = lab_runtime_file(lab)
    before = read_runtime_file(runtime)
    state = tmp_path_factory.mktemp("shared-cluster") / "state"
    seed_store(state, shared_cluster())
    controller = start_controller(state, runtime_file=runtime)
    try:
        server_follows(lab, controller.info.url)
        yield controller
    finally:
        stop_quietly(controller)
        if before is not None and read_runtime_file(runtime) is None:
            with contextlib.suppress(OSError):
                write_runtime_file(before, runtime)
                server_follows(lab, before.url)


def dom_rows(page: Page) -> Locator:
    return page.locator(f"#{SIDEBAR_ID} .fj-TreeItem")


def rendered_ids(page: Page) -> list[str]:
    return page.locator(f"#{SIDEBAR_ID} .fj-TreeItem .fj-JobRow").evaluate_all("rows => rows.map(r => r.dataset.jobId)")


def test_my_newest_roots_first_everyone_a_user_and_a_search_over_ten_thousand_jobs(
        lab: Lab, page: Page, seeded: ControllerProcess) -> None:
    workspace = f"scale-{uuid.uuid4().hex[:6]}"
    page.goto(f"{lab.url}/lab/workspaces/{workspace}?token={lab.token}")
    show_sidebar(page)
    sidebar = page.locator(f"#{SIDEBAR_ID}")
    summary = sidebar.locator(".fj-Pager .fj-Muted")
    expect(summary).to_have_text("1–50 of 200", timeout=20_000)  # my roots, Iris's way
    ids = rendered_ids(page)
    assert ids and all(job_id.startswith(f"/{ME}/coordinator-") and job_id.count("/") == 2 for job_id in ids)
    assert ids[0] == f"/{ME}/coordinator-01990"  # the newest first
    assert dom_rows(page).count() <= MAX_DOM_ROWS

    # Scrolled to the end of the page: the 50th root is there, and still only a window of rows.
    sidebar.locator(".fj-JobScroll").evaluate("node => { node.scrollTop = node.scrollHeight; }")
    expect(sidebar.locator(f".fj-JobRow[data-job-id='/{ME}/coordinator-01500']")).to_be_visible()
    assert dom_rows(page).count() <= MAX_DOM_ROWS
    sidebar.locator(".fj-JobScroll").evaluate("node => { node.scrollTop = 0; }")
    first = sidebar.locator(f".fj-JobRow[data-job-id='/{ME}/coordinator-01990']")
    first.locator("xpath=..").locator("[data-part='toggle']").click()
    expect(sidebar.locator(f".fj-JobRow[data-job-id='/{ME}/coordinator-01990/step-3']")).to_be_visible()

    sidebar.get_by_role("button", name="Everyone").click()
    expect(summary).to_have_text("1–50 of 2,000")
    assert {job_id.split("/")[1] for job_id in rendered_ids(page)} > {ME}
    picker = sidebar.get_by_role("combobox", name="Jobs of user")
    picker.focus()
    expect(picker.locator("option")).to_have_count(51, timeout=20_000)  # "User…" and 50 users
    picker.select_option("user07")
    expect(sidebar.locator(".fj-ListTitle")).to_have_text("user07's jobs")
    expect(summary).to_have_text("1–37 of 37")
    assert {job_id.split("/")[1] for job_id in rendered_ids(page)} == {"user07"}

    sidebar.get_by_role("button", name="Everyone").click()
    search = sidebar.get_by_role("searchbox", name="Search job names")
    search.fill("needle")
    search.press("Enter")
    expect(summary).to_have_text("1–1 of 1")
    (found,) = rendered_ids(page)
    assert found.endswith(f"/{NEEDLE}")
    expect(sidebar.locator(".fj-JobRow-name")).to_have_text(found.split("/", 2)[2])  # its path under its user
    assert dom_rows(page).count() == 1

    # The view (Everyone, the search) is kept for this cluster and comes back after a reload.
    deadline = time.monotonic() + 20
    while '"name": "needle"' not in saved_view(page, lab, workspace):
        assert time.monotonic() < deadline, "the view was never saved"
        page.wait_for_timeout(100)
    page.reload()
    show_sidebar(page)
    expect(summary).to_have_text("1–1 of 1", timeout=20_000)
    expect(search).to_have_value("needle")
    expect(sidebar.get_by_role("button", name="Everyone")).to_have_attribute("aria-pressed", "true")


def test_the_arrow_keys_move_focus_row_by_row_past_the_rendered_window(lab: Lab, page: Page, seeded: ControllerProcess) -> None:
    """ArrowDown / ArrowUp move keyboard focus one row at a time, beyond the rows first rendered: the
    list scrolls, renders the new window, and the focused row keeps its focus across those renders."""
    page.goto(f"{lab.url}/lab/workspaces/keys-{uuid.uuid4().hex[:6]}?token={lab.token}")
    show_sidebar(page)
    sidebar = page.locator(f"#{SIDEBAR_ID}")
    expect(sidebar.locator(".fj-Pager .fj-Muted")).to_have_text("1–50 of 200", timeout=20_000)
    # A new workspace's main area gets a Launcher after the layout is restored, and activating it
    # takes keyboard focus: wait for that, or it takes the focus from the row mid-way.
    page.wait_for_function("() => document.activeElement?.closest('.jp-Launcher') != null")
    scroller = sidebar.locator(".fj-JobScroll")
    sidebar.locator(f".fj-JobRow[data-job-id='/{ME}/coordinator-01990']").focus()
    for _ in range(30):
        page.keyboard.press("ArrowDown")
    focused = "() => document.activeElement instanceof HTMLElement ? document.activeElement.dataset.jobId : null"
    assert page.evaluate(focused) == f"/{ME}/coordinator-01690"  # 30 rows down, newest first, 10 apart
    assert scroller.evaluate("node => node.scrollTop") > 0
    page.keyboard.press("ArrowUp")
    assert page.evaluate(focused) == f"/{ME}/coordinator-01700"
    assert dom_rows(page).count() <= MAX_DOM_ROWS
