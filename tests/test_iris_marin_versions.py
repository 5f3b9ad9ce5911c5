"""Which Marin release the preview follows, and what an older installed Marin changes for a job
(``fray_jupyter.iris.marin_versions``): the warnings ``plan()`` adds, the line every preview shows, and
the refusal of a job whose secrets an old Iris would drop. The tests that need another release run it
for real (``tests/marin_envs.py``: a cached environment with Marin 0.2.200 installed)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter import EnvironmentConfig, ResourceConfig, connect, plan
from fray_jupyter.client.errors import InvalidRequest
from fray_jupyter.controller import iris_local
from fray_jupyter.iris.marin_versions import (
    DIFFERENCES,
    FOLLOWED,
    SECRETS_SINCE,
    differences_for,
    installed_marin,
    release,
    version_warnings,
)
from fray_jupyter.resources import Entrypoint, JobRequest
from tests.controller_harness import ControllerProcess
from tests.marin_envs import RELEASES, marin_python, run_in

OLD = "0.2.200.dev39117391147"


def _job(resources: ResourceConfig | None = None, **environment: object) -> JobRequest:
    env = EnvironmentConfig(workspace="/tmp", setup_scripts=[], **environment) if environment else None  # type: ignore[arg-type]
    return JobRequest(name="v", entrypoint=Entrypoint.from_binary("sh", ["-c", "echo secret=${HF_TOKEN:-none}"]),
                      resources=resources or ResourceConfig(cpu=1, ram="64m", disk="64m"), environment=env)


def test_release_reads_the_release_of_a_dev_version() -> None:
    assert release("0.2.200.dev39117391147") == (0, 2, 200)
    with pytest.raises(ValueError, match="'marin' must start with a release"):
        release("marin")


def test_every_row_names_a_known_job_kind_and_an_older_release() -> None:
    from fray_jupyter.iris.marin_versions import APPLIES

    for row in DIFFERENCES:
        assert row.applies in APPLIES and release(row.until) <= release(FOLLOWED), row


def test_the_followed_release_and_newer_warn_nothing() -> None:
    request = plan(_job(ResourceConfig.with_gpu("H100", count=8), extras=["gpu"]), user="u", marin=None).request
    assert version_warnings(request, None) == ()
    assert version_warnings(request, RELEASES[FOLLOWED]) == ()
    assert version_warnings(request, "0.2.300") == ()


def test_only_the_rows_that_apply_to_the_job_and_release_are_named() -> None:
    gpu = plan(_job(ResourceConfig.with_gpu("H100", count=8), extras=["gpu"]), user="u", marin=None).request
    cpu = plan(_job(), user="u", marin=None).request
    secret = plan(_job(secrets={"HF_TOKEN": "hf-token"}), user="u", marin=None).request

    def names(request: object, marin: str) -> set[str]:
        return {row.name for row in differences_for(request, marin)}  # type: ignore[arg-type]

    assert names(gpu, OLD) == {"nccl_debug", "client_revision_date"}
    assert names(gpu, "0.2.210") == {"client_revision_date"}  # NCCL's default changed in 0.2.202
    assert names(cpu, OLD) == {"client_revision_date"}
    assert names(secret, OLD) == {"secrets", "client_revision_date"}
    assert names(secret, "0.2.222") == {"client_revision_date"}


def test_plan_warns_against_the_marin_it_is_given() -> None:
    warnings = plan(_job(ResourceConfig.with_gpu("H100", count=8), extras=["gpu"]), user="u", marin=OLD).warnings
    assert f"Marin {OLD} is installed; this plan follows Marin {FOLLOWED}, and for this job Marin {OLD}:" in warnings
    assert any(w.startswith("(before 0.2.202) sets NCCL_DEBUG=INFO") for w in warnings), warnings


def test_the_test_environment_follows_the_installed_marin() -> None:
    """The test command installs the followed release: no version warning, and the line says so."""
    result = plan(_job(), user="u")
    assert installed_marin() == RELEASES[FOLLOWED]
    assert result.follows == f"follows Marin {FOLLOWED} (installed: {RELEASES[FOLLOWED]})"
    assert not any("is installed" in w for w in result.warnings)


@pytest.fixture(scope="module")
def old_python() -> Path:
    return marin_python("0.2.200")


def test_plan_check_with_an_older_marin_installed_warns_about_nccl_and_the_version(old_python: Path,
                                                                                    tmp_path: Path) -> None:
    """``fray-jupyter plan --gpu H100x8 --extra gpu --check`` with Marin 0.2.200 installed."""
    done = run_in(old_python, "-m", "fray_jupyter.cli", "plan", "--gpu", "H100x8", "--extra", "gpu", "--check",
                  "--user", "alice", home=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"Marin         follows Marin {FOLLOWED} (installed: {OLD}: older, see the warnings)" in done.stdout
    assert f"! Marin {OLD} is installed; this plan follows Marin {FOLLOWED}" in done.stdout
    assert "! (before 0.2.202) sets NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS for the gpu extra" in done.stdout
    as_json = run_in(old_python, "-m", "fray_jupyter.cli", "plan", "--gpu", "H100x8", "--extra", "gpu", "--json",
                     "--user", "alice", home=tmp_path)
    assert json.loads(as_json.stdout)["follows"].endswith(f"(installed: {OLD}: older, see the warnings)")


@pytest.fixture(scope="module")
def old_twin(old_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A genuine Iris 0.2.200 local cluster (its own environment's Python)."""
    scratch = tmp_path_factory.mktemp("iris-0.2.200")
    cluster = iris_local.start(scratch / "iris.log", home=scratch / "home", tmp=scratch / "tmp", python=old_python)
    yield cluster.url
    cluster.stop()


def test_a_job_with_secrets_is_refused_by_an_iris_too_old_to_carry_them(old_twin: str) -> None:
    with connect(url=old_twin) as client:
        with pytest.raises(InvalidRequest, match=f"EnvironmentConfig.secrets exists from Marin {SECRETS_SINCE} on, "
                                                 "so the job was not launched"):
            client.submit(plan(_job(secrets={"HF_TOKEN": "hf-token"}), user="alice"))
        assert client.list(user="alice").jobs == ()  # nothing was launched
        job = client.submit(plan(_job(), user="alice"))  # a job without secrets still goes
        assert client.wait(job, timeout=120).state == 4  # JOB_STATE_SUCCEEDED


def test_a_job_with_secrets_reaches_a_controller_that_carries_them(controller: ControllerProcess) -> None:
    """Over Connect the request goes in the JSON codec, which the embedded controller (like Iris from
    0.2.222 on) reads with its secrets."""
    with connect(url=controller.info.url, token=controller.info.token) as client:
        job = client.submit(plan(_job(secrets={"HF_TOKEN": "hf-token"}), user="alice"))
        # carried: the stored request holds it, shown redacted as Iris shows a stored request's secrets
        assert dict(client.job(job).request.environment.secrets) == {"HF_TOKEN": "[REDACTED]"}
