"""Why a job waits or failed, in the Fray Jobs sidebar (real JupyterLab, Debian Chromium, the embedded
controller): a failed task's likely root cause ends with its exception line, each retry is an attempt
counted against the job's limits, a task's status text shows with its links working; a PENDING job
says why in its row and its detail (Iris's Scheduler and Autoscaler halves); and every one of those
job-provided texts — and hostile job, child and user names in the tree and the user picker — stays
inert text. Each test opens a workspace of its own (the view it leaves stays there)."""

from __future__ import annotations

import uuid

from jobs_fixtures import SIDEBAR_ID, jobs_controller, lab_client, launch_raw  # noqa: F401  (fixtures)
from labserver import Lab
from pages import LONG, launch_child, row, show_sidebar, wait_running
from playwright.sync_api import Page, expect

from fray_jupyter.client import FrayClient
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.resources import ResourceConfig
from fray_jupyter.runtime_file import ControllerInfo
from tests.controller_harness import Wire, launch_request, status_text_rows

XSS = "<img src=x onerror=window.__frayXss=1>"
FAILING = ("echo 'Traceback (most recent call last):'; echo '  File \"train.py\", line 3, in <module>'; "
           f"printf '\\033[1;31mValueError\\033[0m: {XSS} lr must be positive\\n'; exit 2")
"""A traceback whose exception line is coloured (ANSI bold red) and carries markup."""


def open_workspace(page: Page, lab: Lab, name: str) -> list[str]:
    """Open JupyterLab in workspace ``name`` with the sidebar shown; returns the dialogs seen (none is
    expected: an ``alert`` would mean job text ran as script)."""
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(f"{lab.url}/lab/workspaces/{name}?token={lab.token}")
    show_sidebar(page)
    return dialogs


def assert_inert(page: Page, dialogs: list[str]) -> None:
    """No element came from job text, no script ran."""
    expect(page.locator(f"#{SIDEBAR_ID} :is(img, svg, b, script)")).to_have_count(0)
    assert page.evaluate("window.__frayXss") is None and dialogs == []


def test_a_failed_tasks_root_cause_attempts_and_status_text_show_as_text_with_links(
        lab: Lab, page: Page, jobs_controller: ControllerInfo, lab_client: FrayClient) -> None:  # noqa: F811
    tag = uuid.uuid4().hex[:6]
    wire = Wire(jobs_controller)
    try:
        job_id = wire.launch(launch_request(f"fails-{tag}", FAILING, max_retries_failure=1, max_task_failures=1))
        lab_client.wait(job_id, timeout=60)
        wire.call("WriteRows", status_text_rows(
            [f"{job_id}/0"], [1], [f"step 9/10, loss 2.5\n[W&B](https://wandb.ai/marin/{tag}) {XSS}"],
            [f"step 9/10 · https://wandb.ai/marin/{tag} {XSS}"]))
    finally:
        wire.close()
    dialogs = open_workspace(page, lab, f"diag-{tag}")
    expect(row(page, job_id).locator(".fj-JobRow-error")).to_be_visible(timeout=20_000)
    row(page, job_id).click()
    view = page.locator(".fj-JobView")
    cause = view.get_by_label("Likely root cause, task 0")
    expect(cause.locator("strong")).to_have_text(f"ValueError: {XSS} lr must be positive")  # the last attempt's
    expect(cause).to_contain_text("Traceback (most recent call last):")
    expect(cause.locator("strong .fj-ansi-bold")).to_have_text("ValueError")  # coloured, never a raw escape
    assert "\x1b" not in cause.inner_text() and "[1;31m" not in cause.inner_text()
    expect(view.locator(".fj-Facts")).to_contain_text("2 failed attempts (max_task_failures 1), 0 preemptions")
    attempts = view.locator("details.fj-TaskMore", has_text="2 attempts")
    expect(attempts.locator("summary")).to_have_text(
        "2 attempts: 2 failures (max_retries_failure 1), 0 preemptions (max_retries_preemption 100)")
    attempts.locator("summary").click()
    expect(attempts.locator(".fj-Attempt")).to_have_count(2)
    expect(attempts.locator(".fj-Attempt").nth(0)).to_contain_text("#0")
    status = view.locator(".fj-StatusText")
    expect(status).to_have_text(f"step 9/10 · https://wandb.ai/marin/{tag} {XSS}", timeout=20_000)
    link = status.get_by_role("link", name=f"https://wandb.ai/marin/{tag}")
    expect(link).to_have_attribute("href", f"https://wandb.ai/marin/{tag}")
    expect(link).to_have_attribute("target", "_blank")
    expect(link).to_have_attribute("rel", "noopener noreferrer")
    assert_inert(page, dialogs)


def test_a_pending_job_says_why_in_its_row_and_its_detail(
        lab: Lab, page: Page, jobs_controller: ControllerInfo, lab_client: FrayClient) -> None:  # noqa: F811
    """An eight-task v4-32 gang the embedded cluster can never place waits with Iris's own reason
    (the same words the genuine Iris gives: ``tests/differential/test_waits_and_failures.py``)."""
    tag = uuid.uuid4().hex[:6]
    held = launch_raw(jobs_controller, launch_request(
        f"gang-{tag}", "true", resources=ResourceConfig.with_tpu("v4-32", slice_count=2)))
    reason = lab_client.status(held).pending_reason
    scheduler, _, autoscaler = reason.partition("\n\n")
    assert scheduler.startswith("Scheduler: ") and autoscaler.startswith("Autoscaler: ")
    open_workspace(page, lab, f"pending-{tag}")
    why = row(page, held).locator(".fj-JobRow-why")
    expect(why).to_have_text(scheduler, timeout=20_000)
    expect(why).to_have_class("fj-JobRow-why fj-JobRow-waiting")
    row(page, held).click()
    waiting = page.locator(".fj-JobView .fj-Facts dd", has_text="Autoscaler:")
    expect(waiting).to_have_text(reason)
    assert waiting.evaluate("dd => dd.getClientRects().length && dd.innerText.split('\\n').length") >= 3
    lab_client.terminate(held)


def test_hostile_names_in_the_tree_the_detail_and_the_user_picker_stay_text(
        lab: Lab, page: Page, jobs_controller: ControllerInfo, lab_client: FrayClient) -> None:  # noqa: F811
    tag = uuid.uuid4().hex[:6]
    request = launch_request("placeholder", LONG)
    request.name = f"/alice/{XSS} {tag}"  # past Fray's name rules, as any Iris client may send it
    root = launch_raw(jobs_controller, request)
    wait_running(lab_client, root)
    child = launch_child(jobs_controller, root, "<svg onload=window.__frayXss=2>")
    user = f"<b>{tag}"
    theirs = launch_raw(jobs_controller, launch_request(f"by-{tag}", LONG, user=user))
    dialogs = open_workspace(page, lab, f"hostile-{tag}")
    expect(row(page, root).locator(".fj-JobRow-name")).to_have_text(f"{XSS} {tag}", timeout=20_000)
    row(page, root).locator("xpath=..").locator("[data-part='toggle']").click()
    expect(row(page, child).locator(".fj-JobRow-name")).to_have_text("<svg onload=window.__frayXss=2>")
    row(page, child).click()
    expect(page.locator(".fj-JobView-parent")).to_have_text(f"parent: {root}")
    page.get_by_role("button", name="Back to all jobs").click()

    sidebar = page.locator(f"#{SIDEBAR_ID}")
    picker = sidebar.get_by_role("combobox", name="Jobs of user")
    picker.focus()  # the picker reads ListUsers when it is about to open
    expect(picker.locator(f"option[value='{user}']")).to_have_count(1, timeout=20_000)
    picker.select_option(user)
    expect(row(page, theirs).locator(".fj-JobRow-user")).to_have_text(user, timeout=20_000)
    expect(sidebar.locator(".fj-ListTitle")).to_have_text(f"{user}'s jobs")
    assert_inert(page, dialogs)
    for job_id in (root, theirs):
        lab_client.terminate(job_id)
    assert lab_client.status(child).state == job_pb2.JOB_STATE_KILLED
