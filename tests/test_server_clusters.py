"""A named cluster end to end: ``%%fray --cluster twin --wait`` in a real kernel runs a cell to
SUCCEEDED on a genuine Iris local cluster that Iris's own code started from the user's manifest,
and the server extension — switched to "twin" through its REST API, as the sidebar's switcher does
— lists the job and its logs from the same cluster.

pytest-jupyter's fixtures are imported into this module only (see ``test_server_handlers``); its
``jp_environ`` gives the server and the kernel one private HOME and runtime dir.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from pytest_jupyter.jupyter_server import *

from fray_jupyter.controller.iris_local import unavailable_reason
from tests.fray_rest import Reply, fetch, job_path
from tests.marin_home import TWIN_MANIFEST

pytestmark = pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {"fray_jupyter": True, "jupyter_server_terminals": False}},
            "FrayServer": {"start_controller": False}}


@pytest.fixture
def twin_home(jp_environ: Any, jp_home_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The twin manifest in the private HOME's ``~/.config/marin/clusters``; rigging's credential
    store (fixed from HOME when rigging is first imported) pointed at that HOME too."""
    for name in ("FRAY_CLUSTER", "MARIN_CLUSTER", "FRAY_CONTROLLER_URL", "FRAY_CONTROLLER_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    clusters = jp_home_dir / ".config" / "marin" / "clusters"
    clusters.mkdir(parents=True)
    (clusters / "twin.yaml").write_text(TWIN_MANIFEST)
    from rigging import credential_store

    monkeypatch.setattr(credential_store, "_CREDENTIALS_DIR", jp_home_dir / ".config" / "marin" / "credentials")
    return jp_home_dir


@pytest.fixture
def api(http_server_client: Any, jp_base_url: str, jp_auth_header: dict[str, str],
        jp_asyncio_loop: Any) -> Callable[..., Reply]:
    def call(path: str, *, method: str = "GET") -> Reply:
        return fetch(http_server_client, jp_asyncio_loop, jp_base_url, path, method=method,
                     headers=dict(jp_auth_header))

    return call


@pytest.fixture
def kernel(twin_home: Path) -> Iterator[Callable[[str], list[Any]]]:
    """A live kernel: ``run(source)`` executes one cell and returns its outputs."""
    notebook = nbformat.v4.new_notebook()
    client = NotebookClient(notebook, timeout=180, kernel_name="python3")
    with client.setup_kernel():
        def run(source: str) -> list[Any]:
            cell = nbformat.v4.new_code_cell(source)
            notebook.cells.append(cell)
            client.execute_cell(cell, len(notebook.cells) - 1)
            return list(cell.outputs)

        yield run


def text(outputs: list[Any]) -> str:
    return "".join(output.get("text", "") for output in outputs if output.get("output_type") == "stream")


def test_a_cell_runs_on_the_named_cluster_and_the_sidebar_lists_it_under_that_cluster(
        kernel: Callable[[str], list[Any]], api: Callable[..., Reply]) -> None:
    kernel("%load_ext fray_jupyter")
    ran = text(kernel("%%fray --cluster twin --wait --name hello-twin\nprint('hello from twin')\n"))
    assert "hello from twin" in ran and "SUCCEEDED" in ran
    user = text(kernel("from fray_jupyter.iris.user import resolve_user\nprint(resolve_user())")).strip()
    job_id = f"/{user}/hello-twin"

    assert api("status").body["cluster"] is None  # the server follows the settings until switched
    listing = api("clusters?cluster=twin", method="POST").body
    assert listing["current"] == "twin" and listing["available"] is None
    assert {"name": "twin", "logged_in": True} in listing["clusters"]  # Iris wrote the local record

    status = api("status").body
    assert status["cluster"] == "twin" and status["reachable"] is True
    kernel_url = text(kernel("print(get_ipython().find_magic('fray', 'line').__self__.client(cluster='twin').url)"))
    assert status["url"] == kernel_url.strip()  # the kernel's local cluster, not a second one
    jobs = api("jobs").body["jobs"]
    assert [(job["job_id"], job["state"]) for job in jobs] == [(job_id, "succeeded")]
    logs = api(job_path(job_id, "logs")).body["entries"]
    assert "hello from twin" in [entry["data"] for entry in logs]

    assert api("clusters?cluster=", method="POST").body["current"] is None  # back to the embedded one
    assert api("status").body["cluster"] is None
    assert api("clusters?cluster=no%20spaces", method="POST").code == 400
