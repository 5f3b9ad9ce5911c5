"""The capacity view of the Fray Jobs sidebar (real JupyterLab, Debian Chromium, the embedded
controller on its built-in profile, whose H100 pool of four 8-GPU workers is kept warm): closed, it
asks the server nothing; opened, it shows each scale group's accelerators, CPU and memory as used
and free, every worker, what a running task uses, and a gang no group can hold waiting with the
controller's reason (a link that opens the job); and it follows the jobs: a task that starts is
counted as soon as the sidebar hears of it."""

from __future__ import annotations

import re
import uuid

from jobs_fixtures import SIDEBAR_ID, jobs_controller, lab_client  # noqa: F401  (fixtures)
from labserver import Lab
from pages import show_sidebar, wait_running
from playwright.sync_api import Page, Request, expect

from fray_jupyter import plan
from fray_jupyter.client import FrayClient
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from tests.controller_harness import launch_request


def running_count(text: str) -> int:
    """The number of running tasks the view's summary says."""
    found = re.search(r"(\d+) running", text)
    assert found, text
    return int(found[1])


def test_capacity_shows_used_and_free_and_what_waits(lab: Lab, page: Page, lab_client: FrayClient) -> None:  # noqa: F811
    tag = uuid.uuid4().hex[:6]
    started = [lab_client.submit(launch_request(f"holds-{tag}", "exec sleep 300",
                                                resources=ResourceConfig(cpu=2, ram="1g", disk="1g")))]
    gang = lab_client.submit(plan(JobRequest(name=f"gang-{tag}", entrypoint=Entrypoint.from_binary("true"),
                                             resources=ResourceConfig.with_tpu("v4-32", slice_count=2)), user="alice"))
    started.append(gang)
    try:
        wait_running(lab_client, started[0])
        asked: list[str] = []

        def on_request(request: Request) -> None:
            if "/fray/capacity" in request.url:
                asked.append(request.url)
        page.on("request", on_request)
        page.goto(f"{lab.url}/lab/workspaces/capacity-{tag}?token={lab.token}")
        show_sidebar(page)
        capacity = page.locator(f"#{SIDEBAR_ID} .fj-Capacity")
        expect(page.locator(f"#{SIDEBAR_ID} .fj-JobRow[data-job-id='{started[0]}']")).to_be_visible(timeout=20_000)
        assert asked == []  # closed: nothing read

        capacity.locator("summary").click()
        gpus = capacity.locator(".fj-CapGroup[data-group='gpu_h100x8']")
        expect(gpus).to_contain_text("4 workers", timeout=20_000)
        expect(gpus.locator(".fj-CapResource[data-resource='H100']")).to_have_text(
            re.compile(r"^H100\s*\d+ used · \d+ free of 32$"))
        expect(gpus.locator(".fj-Badge")).to_have_text("at max slices")
        workers = capacity.locator(".fj-CapWorker")
        expect(workers.filter(has_text="gpu_h100x8-0-w0")).to_contain_text("H100: 0 used, 8 free")
        elsewhere = workers.filter(has=page.locator(".fj-Badge", has_text="not listed"))
        expect(elsewhere).to_contain_text(re.compile(r"CPU: \d+ cores? used"))
        waiting = capacity.locator(f".fj-CapPending[data-job-id='{gang}']")
        expect(waiting).to_contain_text("8 tasks")
        expect(waiting.locator(".fj-CapPending-reason")).to_contain_text("Scheduler:")
        expect(waiting.locator(".fj-CapPending-reason")).to_contain_text("Autoscaler:")

        summary = capacity.locator("summary")
        before = running_count(summary.inner_text())
        started.append(lab_client.submit(launch_request(f"more-{tag}", "exec sleep 300")))
        wait_running(lab_client, started[-1])
        expect(summary).to_contain_text(f"{before + 1} running", timeout=20_000)  # read again as the jobs change

        waiting.locator("button", has_text=gang).click()
        expect(page.locator(f"#{SIDEBAR_ID} .fj-JobView-title")).to_have_text(f"gang-{tag}")
    finally:
        for job_id in started:
            lab_client.terminate(job_id)
