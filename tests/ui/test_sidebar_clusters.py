"""The Fray Jobs sidebar's cluster switcher in a real browser against a real JupyterLab whose HOME
holds a local-kind cluster manifest named "twin": picking "Cluster: twin" makes the server resolve
it through Iris's own code (a genuine Iris local cluster starts in the server), the footer names the
cluster, a job sent to that cluster is listed, a parent's children come from Iris's own ListJobs
scopes under its ▸, each job links to its page on the twin's own Iris dashboard (Iris's URL form,
a new tab), and picking the embedded controller switches back (where no job has such a link)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from jobs_fixtures import SIDEBAR_ID
from labserver import Lab, running_lab
from pages import show_sidebar
from playwright.sync_api import Page, expect

from fray_jupyter.client import FrayClient
from fray_jupyter.client.clusters import CLUSTER_ENV, MARIN_CLUSTER_ENV
from fray_jupyter.client.transport import open_transport
from fray_jupyter.controller.iris_local import unavailable_reason
from fray_jupyter.iris.proto import controller_pb2
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.environment import EnvironmentConfig
from tests.marin_home import TWIN_MANIFEST, marin_home

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))


@pytest.fixture
def twin_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base_url: str) -> Iterator[Lab]:
    """A JupyterLab of its own under ``base_url`` whose HOME has the twin manifest (and starts no
    embedded controller)."""
    monkeypatch.setenv("HOME", str(marin_home(tmp_path, {"twin": TWIN_MANIFEST})))
    for name in (CLUSTER_ENV, MARIN_CLUSTER_ENV, "FRAY_CONTROLLER_URL", "FRAY_CONTROLLER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    with running_lab(tmp_path / "lab", "--FrayServer.start_controller=False", base_url=base_url) as lab:
        yield lab


def test_the_switcher_moves_the_sidebar_to_a_named_cluster_and_back(twin_lab: Lab, page: Page) -> None:
    page.goto(f"{twin_lab.url}/lab?token={twin_lab.token}")
    show_sidebar(page)
    sidebar = page.locator(f"#{SIDEBAR_ID}")
    switcher = sidebar.get_by_role("combobox", name="Cluster")
    expect(switcher.locator("option[value='twin']")).to_have_text("Cluster: twin", timeout=90_000)
    expect(switcher).to_have_value("")

    switcher.select_option("twin")
    footer = sidebar.locator(".fj-Controller")
    expect(footer).to_contain_text("Cluster twin · Controller: http://127.0.0.1:", timeout=90_000)

    shared = json.loads((twin_lab.root.parent / "runtime" / "fray-cluster-twin.json").read_text())
    assert shared["pid"] == twin_lab.pid  # the server started the cluster; it says where it is
    workspace = twin_lab.root.parent / "workspace"
    workspace.mkdir()
    def job(name: str, *argv: str) -> JobRequest:
        return JobRequest(name=name, entrypoint=Entrypoint.from_binary(argv[0], list(argv[1:])),
                          resources=ResourceConfig(cpu=1, ram="512m", disk="1g"),
                          environment=EnvironmentConfig(workspace=str(workspace), setup_scripts=[]))
    with FrayClient(shared["url"]) as client:
        job_id = client.submit(plan(job("on-twin", "echo", "hi"), user="alice"))
        coordinator = client.submit(plan(job("coord", "sleep", "300"), user="alice"))
        step = controller_pb2.Controller.LaunchJobRequest()
        step.CopyFrom(plan(job("step", "sleep", "300"), user="alice").request)
        step.name = f"{coordinator}/step"  # what the coordinator's task would send (Iris's child naming)
        transport = open_transport(shared["url"])
        try:
            transport.call("LaunchJob", step, controller_pb2.Controller.LaunchJobResponse, 30.0)
        finally:
            transport.close()
    row = sidebar.locator(f"[data-job-id='{job_id}']")
    expect(row.locator(".fj-Badge")).to_have_text("succeeded", timeout=60_000)

    # The twin's own ListJobs scopes make the tree: its ROOTS page marks the parent, CHILDREN lists the step.
    parent = sidebar.locator(f".fj-TreeItem[data-key='{coordinator}']")
    expect(sidebar.locator(f".fj-JobRow[data-job-id='{coordinator}/step']")).to_have_count(0)
    parent.get_by_role("button", name="Show the child jobs of coord").click(timeout=60_000)
    expect(sidebar.locator(f".fj-JobRow[data-job-id='{coordinator}/step'] .fj-JobRow-name")).to_have_text("step")

    # Each job links to its page on the twin's own dashboard, Iris's URL form, in a new tab.
    link = sidebar.locator(f".fj-TreeItem[data-key='{job_id}'] a.fj-Dashboard")
    expected = f"{shared['url']}/#/job/%2Falice%2Fon-twin"
    expect(link).to_have_attribute("href", expected)
    expect(link).to_have_attribute("target", "_blank")
    dashboard = httpx.get(shared["url"] + "/", timeout=10)
    assert dashboard.status_code == 200 and "text/html" in dashboard.headers["content-type"]  # the Iris dashboard
    row.click()
    expect(page.locator(".fj-JobView").get_by_role("link", name="Open on the Iris dashboard ↗")).to_have_attribute(
        "href", expected)
    page.get_by_role("button", name="Back to all jobs").click()

    switcher.select_option("")
    expect(footer).not_to_contain_text("Cluster twin", timeout=30_000)
    expect(row).to_have_count(0)
    expect(sidebar.locator("a.fj-Dashboard")).to_have_count(0)  # the embedded controller serves no dashboard
