"""A job's setup as Iris's own client assembles it: the setup scripts in ``environment`` and the
``entrypoint.setup_commands`` that run before the command.

Rules (restating ``iris.cluster.types.EnvironmentSpec.to_proto`` and
``iris.cluster.runtime.entrypoint.build_runtime_entrypoint``):

* A job with no setup scripts (``setup_scripts=None``) gets a default setup from its client. Iris's
  client builds a uv sync of the bundled workspace for every such job; fray-jupyter asks for it
  (``with_default_setup``) only where the workspace sent along is a uv project (has
  ``pyproject.toml``), since a sync with no project fails every task.
* ``setup_commands`` are the job's non-blank setup scripts followed by the client's runtime-deps
  script (``setup_commands``); a job with no setup scripts (``[]``) gets no setup commands at all, the
  runtime-deps script included.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fray_jupyter.resources.environment import EnvironmentConfig
    from fray_jupyter.resources.job import JobRequest


def with_default_setup(job: JobRequest, workspace: str | Path,
                       setup: Callable[[EnvironmentConfig], list[str]]) -> JobRequest:
    """``job`` with ``setup(environment)`` as its setup scripts when it has none and ``workspace`` is a
    uv project (has ``pyproject.toml``); else ``job`` unchanged."""
    from fray_jupyter.resources.environment import EnvironmentConfig

    environment = job.environment or EnvironmentConfig(workspace=str(workspace))
    if environment.setup_scripts is not None or not (Path(workspace) / "pyproject.toml").is_file():
        return job
    return job.model_copy(update={"environment": environment.model_copy(update={"setup_scripts": setup(environment)})})


def setup_commands(scripts: Sequence[str], runtime_setup: str | None) -> list[str]:
    """The ``setup_commands`` sent for the environment's ``scripts``: the non-blank ones, then
    ``runtime_setup`` (Iris's runtime-deps script; None adds nothing) when there is any."""
    kept = [script for script in scripts if script.strip()]
    return [*kept, runtime_setup] if kept and runtime_setup else kept
