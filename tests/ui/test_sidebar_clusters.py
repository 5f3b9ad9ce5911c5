"""The Fray Jobs sidebar's cluster switcher in a real browser against a real JupyterLab whose HOME
holds a local-kind cluster manifest named "twin": picking "Cluster: twin" makes the server resolve
it through Iris's own code (a genuine Iris local cluster starts in the server), the footer names the
cluster, a job sent to that cluster is listed, and picking the embedded controller switches back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from jobs_fixtures import SIDEBAR_ID
from labserver import Lab, running_lab
from playwright.sync_api import Page, expect
from test_sidebar import show_sidebar

from fray_jupyter.client import FrayClient
from fray_jupyter.client.clusters import CLUSTER_ENV, MARIN_CLUSTER_ENV
from fray_jupyter.controller.iris_local import unavailable_reason
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
    job = JobRequest(name="on-twin", entrypoint=Entrypoint.from_binary("echo", ["hi"]),
                     resources=ResourceConfig(cpu=1, ram="512m", disk="1g"),
                     environment=EnvironmentConfig(workspace=str(workspace), setup_scripts=[]))
    with FrayClient(shared["url"]) as client:
        job_id = client.submit(plan(job, user="alice"))
    row = sidebar.locator(f"[data-job-id='{job_id}']")
    expect(row.locator(".fj-Badge")).to_have_text("succeeded", timeout=60_000)

    switcher.select_option("")
    expect(footer).not_to_contain_text("Cluster twin", timeout=30_000)
    expect(row).to_have_count(0)
