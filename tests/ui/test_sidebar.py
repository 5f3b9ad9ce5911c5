"""The Fray Jobs sidebar in a real JupyterLab (Debian Chromium): a job submitted from a notebook
kernel is listed, survives a kernel restart with its logs, is cancelled from the sidebar after a
confirmation, a finished job raises a notification, a connection problem shows a banner, and
job-provided text never becomes HTML."""

from __future__ import annotations

import time
import uuid

import pytest
from jobs_fixtures import SIDEBAR_ID, jobs_controller, lab_client, launch_raw  # noqa: F401  (fixtures)
from labserver import KERNEL_IDLE, Lab, run_first_cell
from pages import row, show_sidebar
from playwright.sync_api import Page, Route, expect

from fray_jupyter.client import FrayClient
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.runtime_file import ControllerInfo

HOSTILE_NAME = "<img src=x onerror=alert(1)>"
"""Fray refuses spaces in names, but Iris (and so the embedded controller) accepts them from any
client, so the sidebar must show this name as text; the same payload also goes into the log."""
HOSTILE_LINE = "<img src=x onerror=window.__frayXss=1>"


def submit_cell(long_name: str, short_name: str) -> str:
    """Notebook code submitting a long job (2 replicas ticking for a minute) and a short one."""
    return (
        "from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, plan\n"
        "from fray_jupyter.client import connect\n"
        "client = connect()\n"
        "def job(name, script, replicas):\n"
        "    return JobRequest(name=name, entrypoint=Entrypoint.from_binary('sh', ['-c', script]),\n"
        "                      resources=ResourceConfig(cpu=1, ram='256m', disk='1g'), replicas=replicas)\n"
        f"long_id = client.submit(plan(job('{long_name}', 'for i in $(seq 600); do echo tick $i; sleep 0.1; done', 2)))\n"
        f"short_id = client.submit(plan(job('{short_name}', 'sleep 4; echo done', 1)))\n"
        "print(long_id, short_id)\n"
    )


def test_a_notebook_job_is_listed_survives_a_kernel_restart_and_is_cancelled(
        lab: Lab, page: Page, lab_client: FrayClient) -> None:  # noqa: F811
    tag = uuid.uuid4().hex[:6]
    long_name, short_name = f"nb-long-{tag}", f"nb-short-{tag}"
    long_id, short_id = f"/alice/{long_name}", f"/alice/{short_name}"
    url = lab.open_url(lab.notebook(f"submit-{tag}.ipynb", submit_cell(long_name, short_name)))
    run_first_cell(page, url)
    expect(page.locator(".jp-OutputArea-output", has_text=long_id)).to_be_visible(timeout=30_000)

    show_sidebar(page)
    expect(row(page, long_id).locator(".fj-Badge")).to_have_text("running", timeout=20_000)
    expect(row(page, long_id)).to_contain_text("2 replicas")
    expect(row(page, short_id)).to_be_visible()
    # The short job finishes while the page watches: a notification says so.
    expect(page.get_by_text(f"Fray job {short_name} succeeded")).to_be_visible(timeout=30_000)
    expect(row(page, short_id).locator(".fj-Badge")).to_have_text("succeeded")

    # Restart the kernel that submitted, and reload the page: the job is still there, with its logs.
    page.evaluate("window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.restart()")
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    page.reload()
    show_sidebar(page)
    row(page, long_id).click()
    view = page.locator(".fj-JobView")
    expect(view.locator(".fj-JobView-title")).to_have_text(long_name)
    expect(view.locator(".fj-Tasks tbody tr")).to_have_count(2)
    logs = view.locator(".fj-Logs")
    expect(logs).to_contain_text("tick 1", timeout=20_000)
    newest = logs.locator(".fj-LogLine").last  # rows are virtualised: the newest one changes as the tail follows
    expect(newest).not_to_have_text(newest.inner_text(), timeout=20_000)

    # Cancel, confirming in the dialog: the controller stops it and a notification says so.
    view.get_by_role("button", name="Cancel job").click()
    dialog = page.locator(".jp-Dialog")
    expect(dialog).to_contain_text(long_id)
    dialog.locator(".jp-Dialog-button.jp-mod-warn").click()
    expect(view.locator(".fj-JobView-head .fj-Badge")).to_have_text("killed", timeout=20_000)
    assert lab_client.status(long_id).state == job_pb2.JOB_STATE_KILLED
    expect(view.get_by_role("button", name="Cancel job")).to_be_disabled()
    expect(page.get_by_text(f"Fray job {long_name} killed")).to_be_visible(timeout=30_000)


def test_job_provided_text_renders_as_text(lab: Lab, page: Page, jobs_controller: ControllerInfo,  # noqa: F811
                                          lab_client: FrayClient) -> None:  # noqa: F811
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    job = JobRequest(name="placeholder", entrypoint=Entrypoint.from_binary("sh", ["-c", f"echo '{HOSTILE_LINE}'"]),
                     resources=ResourceConfig(cpu=1, ram="256m", disk="1g"))
    request = plan(job, user="alice").request
    request.name = f"/alice/{HOSTILE_NAME}"  # past Fray's name rules, straight to the controller
    job_id = launch_raw(jobs_controller, request)
    lab_client.wait(job_id, timeout=30)

    page.goto(f"{lab.url}/lab?token={lab.token}")
    show_sidebar(page)
    name = row(page, job_id).locator(".fj-JobRow-name")
    expect(name).to_have_text(HOSTILE_NAME, timeout=20_000)
    row(page, job_id).click()
    logs = page.locator(".fj-JobView .fj-Logs")
    expect(logs).to_contain_text(HOSTILE_LINE, timeout=20_000)
    expect(page.locator(f"#{SIDEBAR_ID} img")).to_have_count(0)
    assert page.evaluate("window.__frayXss") is None and dialogs == []


def test_a_connection_problem_shows_a_banner_not_an_empty_list(lab: Lab, page: Page) -> None:
    message = "cannot reach the Fray controller at http://127.0.0.1:9: connection refused"
    down, asked = [True], [0]

    def answer(route: Route) -> None:
        asked[0] += 1
        if down[0]:
            route.fulfill(status=503, content_type="application/json",
                          body=f'{{"message": "{message}", "code": "controller_unreachable"}}')
        else:
            route.continue_()

    page.route("**/fray/jobs?*", answer)
    page.goto(f"{lab.url}/lab?token={lab.token}")
    show_sidebar(page)
    banner = page.locator(f"#{SIDEBAR_ID} .fj-Banner")
    expect(banner).to_be_visible(timeout=20_000)
    expect(banner).to_contain_text("Cannot reach the Fray controller")
    expect(banner).to_contain_text(message)
    expect(page.locator(f"#{SIDEBAR_ID} .fj-Empty")).to_be_hidden()
    before = asked[0]
    banner.get_by_role("button", name="Retry").click()  # while still down: Retry asks again at once
    deadline = time.monotonic() + 2
    while asked[0] == before and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert asked[0] > before
    expect(banner).to_be_visible()
    down[0] = False  # the controller comes back: the next poll (backed off, within 30 s) clears it
    expect(banner).to_be_hidden(timeout=40_000)


IDLE_S = 60
"""How long the sidebar sits open with nothing happening before the job is submitted: long enough
for a timer poll to have backed off to its 30 s maximum (what pushed updates replace)."""


def test_a_kernel_job_appears_and_ends_in_the_open_sidebar_at_once(
        lab: Lab, page: Page, lab_client: FrayClient) -> None:  # noqa: F811
    name = f"live-{uuid.uuid4().hex[:6]}"
    job_id = f"/alice/{name}"
    url = lab.open_url(lab.notebook(f"{name}.ipynb", (
        "from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, plan\n"
        "from fray_jupyter.client import connect\n"
        f"job = JobRequest(name='{name}', entrypoint=Entrypoint.from_binary('sh', ['-c', 'sleep 2']),\n"
        "                 resources=ResourceConfig(cpu=1, ram='256m', disk='1g'))\n"
        "print(connect().submit(plan(job)))\n")))
    page.goto(url)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    show_sidebar(page)
    page.evaluate("""id => {
        window.__frayLive = {};
        const seen = window.__frayLive;
        new MutationObserver(() => {
            const found = document.querySelector(`.fj-JobRow[data-job-id='${id}']`);
            if (found && !seen.listed) { seen.listed = Date.now(); }
            const state = found?.querySelector('.fj-Badge')?.textContent;
            if (state === 'succeeded' && !seen.ended) { seen.ended = Date.now(); }
        }).observe(document.body, { subtree: true, childList: true, characterData: true });
    }""", job_id)
    page.wait_for_timeout(IDLE_S * 1000)  # the condition under test is the idle time itself

    page.locator(".jp-Cell .jp-InputArea-editor >> visible=true").first.click()
    page.keyboard.press("Shift+Enter")
    expect(row(page, job_id).locator(".fj-Badge")).to_have_text("succeeded", timeout=30_000)
    seen = page.evaluate("window.__frayLive")
    status = lab_client.status(job_id)
    appeared_ms = seen["listed"] - status.submitted_at.epoch_ms
    ended_ms = seen["ended"] - status.finished_at.epoch_ms
    assert appeared_ms <= 1500, f"listed {appeared_ms} ms after it was submitted"
    assert ended_ms <= 1500, f"shown succeeded {ended_ms} ms after it ended"


@pytest.mark.hub
def test_the_open_job_lists_its_output_files_with_images_and_text_inline(
        lab: Lab, page: Page, lab_client: FrayClient) -> None:  # noqa: F811
    name = f"outputs-{uuid.uuid4().hex[:6]}"
    script = ('mkdir -p "$IRIS_OUTPUT_DIR/plots"; echo "loss 0.25" > "$IRIS_OUTPUT_DIR/metrics.txt"; '
              "echo \"<svg xmlns='http://www.w3.org/2000/svg' width='20' height='10'><rect width='20' height='10'/>"
              "</svg>\" > \"$IRIS_OUTPUT_DIR/plots/loss.svg\"")
    job = JobRequest(name=name, entrypoint=Entrypoint.from_binary("sh", ["-c", script]),
                     resources=ResourceConfig(cpu=1, ram="256m", disk="1g"))
    job_id = lab_client.submit(plan(job, user="alice"))
    lab_client.wait(job_id, timeout=60)
    page.goto(f"{lab.url}/lab?token={lab.token}")
    show_sidebar(page)
    row(page, job_id).click()
    outputs = page.locator(".fj-JobView .fj-Output")
    expect(outputs).to_have_count(2, timeout=20_000)
    expect(outputs.nth(0)).to_contain_text("metrics.txt")
    expect(outputs.nth(1)).to_contain_text("plots/loss.svg")
    image = outputs.nth(1).locator("img")
    expect(image).to_be_visible()
    page.wait_for_function("img => img.complete && img.naturalWidth === 20", arg=image.element_handle())
    outputs.nth(0).get_by_role("button", name="Show metrics.txt").click()
    expect(outputs.nth(0).locator("pre")).to_have_text("loss 0.25\n")


def test_with_no_controller_the_background_poll_asks_the_status_and_logs_no_error(lab: Lab, page: Page) -> None:
    """No controller runs (the server says so on ``/fray/status``, 200): the page's poll for
    notifications (sidebar closed) asks the status again each time, never lists jobs, so the browser
    logs no failed request on every poll."""
    statuses: list[str] = []
    listed: list[str] = []
    console: list[str] = []
    down = '{"url": "", "reachable": false, "error": "no Fray controller is running", "user": "alice", ' \
           '"cluster": null, "dashboard_url": null}'

    def status(route: Route) -> None:
        statuses.append(route.request.url)
        route.fulfill(status=200, content_type="application/json", body=down)

    page.route("**/fray/status*", status)
    page.on("request", lambda request: listed.append(request.url) if "/fray/jobs" in request.url else None)
    page.on("console", lambda message: console.append(message.text) if message.type == "error" else None)
    page.goto(f"{lab.url}/lab/workspaces/no-controller-{uuid.uuid4().hex[:6]}?token={lab.token}")
    page.wait_for_function("() => window.jupyterapp?.restored")
    deadline = time.monotonic() + 30
    while len(statuses) < 3:
        assert time.monotonic() < deadline, f"the background poll asked the status {len(statuses)} time(s) in 30 s"
        page.wait_for_timeout(100)
    assert listed == [] and not [text for text in console if "503" in text or "fray" in text.lower()]
