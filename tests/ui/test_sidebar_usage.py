"""Watching a job run in the Fray Jobs sidebar (real JupyterLab, Debian Chromium, the embedded
controller sampling a real task): a task that grows to ~300 MiB against a 256 MiB request shows its
memory within 2 s of the controller's sample, with the over-request warning, sparklines (uPlot
canvases), Iris's MEM / PEAK MEM / CPU cells and the tree's totals; its status text says how old it
is; once it is silent longer than the ``silenceSeconds`` setting (3 s here) it says "no output for
…"; and after a cancel the event timeline shows Iris's ``JobFinalizedTaskKilled``, newest first."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from jobs_fixtures import SIDEBAR_ID, jobs_controller, lab_client  # noqa: F401  (fixtures)
from labserver import Lab
from pages import row, show_sidebar, wait_running
from playwright.sync_api import Page, expect

from fray_jupyter.client import FrayClient
from fray_jupyter.client.usage import job_usage
from fray_jupyter.resources import ResourceConfig
from fray_jupyter.runtime_file import ControllerInfo
from tests.controller_harness import Wire, launch_request, status_text_rows
from tests.waiting import until

SETTINGS = {"silenceSeconds": 3}
"""A short silence threshold (the default is 10 min). The refresh interval stays the default 2 s: the open
job's usage has its own, faster read, which is what shows a sample within 2 s."""


def grower(trigger: Path) -> str:
    """A task that waits (quietly, small) for ``trigger`` to exist, then holds ~300 MiB, says so once
    and sleeps silently."""
    return ("exec python -c \"import os, time\nwhile not os.path.exists('" + str(trigger) + "'): time.sleep(0.05)\n"
            "held = b'x' * (300 * 2**20)\nprint('holding', flush=True)\ntime.sleep(600)\"")


@pytest.fixture
def usage_settings(lab: Lab, page: Page) -> Iterator[None]:
    """The sidebar's settings for this test (written before the page loads them), put back after."""
    url = f"{lab.url}/lab/api/settings/fray-jupyter:plugin"
    headers = {"Authorization": f"token {lab.token}", "Content-Type": "application/json"}
    assert page.request.put(url, headers=headers, data=json.dumps({"raw": json.dumps(SETTINGS)})).ok
    yield
    page.request.put(url, headers=headers, data=json.dumps({"raw": "{}"}))


def held_mib(client: FrayClient, job_id: str) -> int:
    """The task's memory in the controller's newest sample (MiB; 0 before the first)."""
    now = job_usage(client, client.status(job_id))[f"{job_id}/0"].now
    return now.memory_mb if now else 0


def test_memory_warning_status_age_silence_and_timeline_of_a_running_task(
        lab: Lab, page: Page, usage_settings: None, jobs_controller: ControllerInfo,  # noqa: F811
        lab_client: FrayClient, tmp_path: Path) -> None:  # noqa: F811
    tag = uuid.uuid4().hex[:6]
    trigger = tmp_path / "grow"
    wire = Wire(jobs_controller)
    try:
        job_id = wire.launch(launch_request(f"grows-{tag}", grower(trigger),
                                            resources=ResourceConfig(cpu=1, ram="256m", disk="1g")))
        wait_running(lab_client, job_id)
        wire.call("WriteRows", status_text_rows([f"{job_id}/0"], [0], [f"step 1/10 {tag}"], [f"step 1/10 {tag}"]))
    finally:
        wire.close()

    page.goto(f"{lab.url}/lab/workspaces/usage-{tag}?token={lab.token}")
    show_sidebar(page)
    row(page, job_id).click()
    view = page.locator(f"#{SIDEBAR_ID} .fj-JobView")
    usage = view.locator(".fj-Usage[data-task-id$='/0']")
    expect(usage.locator(".fj-Usage-memory")).to_contain_text("of 256 MiB requested", timeout=20_000)
    expect(view.locator(".fj-StatusAge")).to_contain_text(re.compile(r"reported (just now|\d+ s ago)"))
    expect(usage.locator(".fj-Usage-warning")).to_be_hidden()

    trigger.touch()
    until(lambda: held_mib(lab_client, job_id) >= 290, "the controller sampled the task's 300 MiB")
    # The controller has the sample: the sidebar shows it within 2 s.
    expect(usage.locator(".fj-Usage-memory")).to_contain_text(re.compile(r"^(29\d|3\d\d) MiB now"), timeout=2000)
    expect(usage.locator(".fj-Usage-warning")).to_have_text(re.compile(
        r"^peak \d+(\.\d+)? MiB is over the 256 MiB requested: a cluster would OOM-kill this task"))
    expect(usage.locator(".fj-MemBar")).to_have_class(re.compile("fj-MemBar-over"))
    expect(usage.locator(".fj-Spark canvas")).not_to_have_count(0)
    cells = view.locator(".fj-Tasks tr[data-task='0'] .fj-UsageCell")
    expect(cells).to_have_count(3)
    expect(cells.nth(0)).to_have_text(re.compile(r"^(29\d|3\d\d)(\.\d+)? MiB$"))
    expect(cells.nth(2)).to_have_text(re.compile(r"cores?$"))
    expect(view.locator(".fj-Usage-totals")).to_contain_text(re.compile(r"Job tree: CPU .*, wall .*, peak .* over 1 task"))

    # Silent since "holding" (and the status report before it): past 3 s it says so.
    expect(view.locator(".fj-Tasks tr[data-task='0'] .fj-Silence")).to_have_text(
        re.compile(r"^no output for \d+ s$"), timeout=20_000)

    lab_client.terminate(job_id)
    timeline = view.locator(".fj-Timeline li")
    expect(timeline.and_(page.locator("[data-reason='JobFinalizedTaskKilled']"))).to_contain_text(
        "Terminated by user", timeout=20_000)
    expect(timeline.first).to_have_attribute("data-reason", re.compile("^(JobFinalizedTaskKilled|AttemptKilled)$"))
    expect(timeline.last).to_have_attribute("data-reason", "Submitted")
    expect(view.locator(".fj-Silence")).to_have_count(0)
