"""``iris.setup``: a job's setup as Iris's client assembles it — the default setup only for a uv
project without setup scripts, and the runtime-deps script after the job's scripts, only when it
has any."""

from __future__ import annotations

from pathlib import Path

import pytest

from fray_jupyter.iris.setup import setup_commands, with_default_setup
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, EnvironmentConfig, JobRequest, ResourceConfig


def job(environment: EnvironmentConfig | None = None) -> JobRequest:
    return JobRequest(name="s", entrypoint=Entrypoint.from_binary("echo", ["hi"]), resources=ResourceConfig(),
                      environment=environment)


def default(environment: EnvironmentConfig) -> list[str]:
    return [f"sync {','.join(environment.extras) or 'all'}"]


@pytest.mark.parametrize(("scripts", "runtime", "sent"), [
    (["a", "  ", "b"], "deps", ["a", "b", "deps"]),
    (["a"], None, ["a"]),
    ([], "deps", []),
    (["\n\t"], "deps", []),  # only blank scripts: no setup at all, the runtime-deps script included
])
def test_the_runtime_deps_script_follows_the_jobs_scripts_only_when_it_has_some(
        scripts: list[str], runtime: str | None, sent: list[str]) -> None:
    assert setup_commands(scripts, runtime) == sent


def test_a_uv_project_workspace_without_setup_scripts_gets_the_default_setup(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    given = with_default_setup(job(EnvironmentConfig(workspace=str(tmp_path), extras=["tpu"])), tmp_path, default)
    assert given.environment is not None and given.environment.setup_scripts == ["sync tpu"]
    bare = with_default_setup(job(), tmp_path, default)  # no environment: one made for the workspace
    assert bare.environment == EnvironmentConfig(workspace=str(tmp_path), setup_scripts=["sync all"])


@pytest.mark.parametrize("scripts", [[], ["mine"]])
def test_a_job_with_its_own_setup_scripts_keeps_them(tmp_path: Path, scripts: list[str]) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    own = job(EnvironmentConfig(workspace=str(tmp_path), setup_scripts=scripts))
    assert with_default_setup(own, tmp_path, default) is own


def test_a_workspace_that_is_not_a_uv_project_gets_no_default_setup(tmp_path: Path) -> None:
    plain = job()
    assert with_default_setup(plain, tmp_path, default) is plain


def test_plan_sends_the_runtime_deps_script_after_the_setup_scripts() -> None:
    with_setup = job(EnvironmentConfig(workspace="/w", setup_scripts=["mine"]))
    assert list(plan(with_setup, user="u", runtime_setup="deps").request.entrypoint.setup_commands) == ["mine", "deps"]
    assert list(plan(with_setup, user="u").request.entrypoint.setup_commands) == ["mine"]  # the embedded default
    assert list(plan(job(), user="u", runtime_setup="deps").request.entrypoint.setup_commands) == []
