"""``client.parity``: what a job sent to a named cluster gets is what Iris's own client adds to the
same job — compared field by field with the ``LaunchJobRequest`` the installed marin-iris's
``IrisClient`` builds (its ``launch_job`` call captured before the wire; forwarded secrets stubbed
so no local credentials are read)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest

from fray_jupyter.client import parity
from fray_jupyter.client.clusters import marin_unavailable
from fray_jupyter.client.parity import EMBEDDED, parity_for
from fray_jupyter.iris.bundle import create_workspace_zip
from fray_jupyter.iris.setup import with_default_setup
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, EnvironmentConfig, JobRequest, ResourceConfig

needs_marin = pytest.mark.skipif(marin_unavailable() is not None, reason=str(marin_unavailable()))


def names(blob: bytes) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        return sorted(archive.namelist())


def iris_own_request(workspace: Path, extras: list[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """The request ``IrisClient.remote(url, workspace=workspace).submit`` sends for ``echo hi``."""
    from iris.client import client as iris_client_module
    from iris.cluster.types import Entrypoint as IrisEntrypoint
    from iris.cluster.types import EnvironmentSpec, ResourceSpec
    from iris.rpc import controller_pb2

    monkeypatch.setattr(iris_client_module, "forwarded_secrets", lambda exclude=(): {})
    sent: list[Any] = []

    def launch_job(request: Any, **_: Any) -> Any:
        sent.append(request)
        return controller_pb2.Controller.LaunchJobResponse(job_id=request.name)

    client = iris_client_module.IrisClient.remote("http://127.0.0.1:9", workspace=workspace)
    client._cluster_client._client.launch_job = launch_job
    client.submit(entrypoint=IrisEntrypoint.from_command("echo", "hi"), name="same",
                  resources=ResourceSpec(cpu=1, memory="1g"), environment=EnvironmentSpec(extras=extras), user="u")
    return sent[0]


@needs_marin
@pytest.mark.parametrize("extras", [[], ["gpu"]])
def test_a_named_clusters_job_gets_what_iris_s_own_client_adds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               extras: list[str]) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\nversion = '0'\n")
    (tmp_path / "helper.py").write_text("VALUE = 42\n")
    (tmp_path / "notes.ipynb").write_text("{}")  # Iris leaves notebooks out
    iris = iris_own_request(tmp_path, extras, monkeypatch)

    parity = parity_for("any")
    assert parity.default_setup is not None
    ours_job = JobRequest(name="same", entrypoint=Entrypoint.from_binary("echo", ["hi"]),
                          resources=ResourceConfig(cpu=1, ram="1g"),
                          environment=EnvironmentConfig(workspace=str(tmp_path), extras=extras))
    ours = plan(with_default_setup(ours_job, tmp_path, parity.default_setup), user="u",
                bundle=create_workspace_zip(tmp_path).blob, revision_date=parity.revision_date,
                runtime_setup=parity.runtime_setup).request

    assert list(ours.environment.setup_scripts) == list(iris.environment.setup_scripts)
    assert len(iris.environment.setup_scripts) == 1 + len(extras)  # the uv sync, and CUDA's for a gpu extra
    assert list(ours.entrypoint.setup_commands) == list(iris.entrypoint.setup_commands)
    assert ours.entrypoint.setup_commands[-1] == parity.runtime_setup  # Iris's runtime-deps script, last
    assert names(ours.bundle_blob) == names(iris.bundle_blob) == ["helper.py", "pyproject.toml"]
    assert ours.client_revision_date == iris.client_revision_date
    assert ours.name == iris.name == "/u/same"


@needs_marin
def test_a_job_with_no_setup_gets_no_runtime_deps_script_from_either_client(tmp_path: Path) -> None:
    from iris.cluster.runtime.entrypoint import build_runtime_entrypoint
    from iris.cluster.types import Entrypoint as IrisEntrypoint
    from iris.cluster.types import EnvironmentSpec

    iris = build_runtime_entrypoint(IrisEntrypoint.from_command("echo", "hi"),
                                    EnvironmentSpec(setup_scripts=[]).to_proto())
    parity = parity_for("any")
    ours = plan(JobRequest(name="n", entrypoint=Entrypoint.from_binary("echo", ["hi"]), resources=ResourceConfig(),
                           environment=EnvironmentConfig(workspace=str(tmp_path), setup_scripts=[])),
                user="u", runtime_setup=parity.runtime_setup).request
    assert list(ours.entrypoint.setup_commands) == list(iris.setup_commands) == []


def test_the_embedded_default_and_a_missing_iris_add_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    assert parity_for(None) is EMBEDDED
    assert (EMBEDDED.revision_date, EMBEDDED.default_setup, EMBEDDED.runtime_setup) == (None, None, None)
    monkeypatch.setattr(parity, "marin_unavailable", lambda: "no marin-iris")  # naming the cluster fails later
    assert parity_for("marin") is EMBEDDED
