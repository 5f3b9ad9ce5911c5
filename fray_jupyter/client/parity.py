"""What Marin's own Iris client adds to a job it sends, taken from the installed marin-iris at run
time, so a job fray-jupyter sends to a named cluster is the one ``iris job run`` or Fray's
``FrayIrisClient`` would send.

Rules (``ClientParity``; where Iris's rules live: ``iris.version``, ``iris.cluster.setup_scripts``,
``iris.cluster.types.EnvironmentSpec.to_proto``, ``iris.cluster.runtime.entrypoint``):

* ``revision_date``: the installed marin-iris's ``client_revision_date`` (its build date, or
  ``$IRIS_REVISION_DATE``).
* ``default_setup``: for a job with no setup scripts, Iris's uv-sync script (this Python's version,
  the job's extras, pip packages and sync packages), then its CUDA-toolchain script when an extra is
  ``gpu``. Where it applies: ``ClientParity.with_setup`` (``iris.setup.with_default_setup``).
* ``runtime_setup``: Iris's runtime-deps script (cloudpickle, py-spy, memray into ``$IRIS_VENV``),
  sent after a job's setup scripts whenever it has any (``iris.setup.setup_commands``).
* ``EMBEDDED``, the embedded controller's (and a controller URL's), adds none of these: fray-jupyter's
  built-in revision date, no default setup, no runtime-deps script.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from fray_jupyter.client.clusters import marin_unavailable
from fray_jupyter.iris.setup import with_default_setup
from fray_jupyter.lazy import one_import_at_a_time

if TYPE_CHECKING:
    from fray_jupyter.resources.job import JobRequest


@dataclass(frozen=True)
class ClientParity:
    """What the client adds to each job (see the module rules); None adds nothing."""

    revision_date: str | None = None
    default_setup: Callable[[Any], list[str]] | None = None
    runtime_setup: str | None = None

    def with_setup(self, job: JobRequest, workspace: str | Path | None) -> JobRequest:
        """``job`` with this client's default setup where it applies (``iris.setup.with_default_setup``:
        no setup scripts of its own, and ``workspace`` a uv project); unchanged when the client adds
        none or nothing is sent as the workspace."""
        if self.default_setup is None or workspace is None:
            return job
        return with_default_setup(job, workspace, self.default_setup)


EMBEDDED: Final[ClientParity] = ClientParity()


def iris_revision_date() -> str | None:
    """The ``client_revision_date`` the installed marin-iris's own client sends (its build date, or
    ``$IRIS_REVISION_DATE``); None when it has none (then ``plan()``'s default is sent)."""
    with one_import_at_a_time():
        from iris.version import client_revision_date

    return str(client_revision_date()) or None


def iris_default_setup(environment: Any) -> list[str]:
    """Iris's default setup scripts for ``environment`` (a Fray ``EnvironmentConfig``: its extras, pip
    packages and workspace members to sync): its uv-sync script for this Python's version, then its
    CUDA-toolchain script when an extra is ``gpu`` — what Iris's own client sends for a job that has
    no setup scripts."""
    with one_import_at_a_time():
        from iris.cluster.setup_scripts import (
            cuda_toolchain_setup_script,
            default_setup_script,
            wants_gpu_extra,
        )

    extras = list(environment.extras)
    scripts = [str(default_setup_script(
        extras=extras, pip_packages=list(environment.pip_packages),
        python_version=f"{sys.version_info.major}.{sys.version_info.minor}",
        packages=list(environment.sync_packages) or None))]
    return scripts + ([str(cuda_toolchain_setup_script())] if wants_gpu_extra(extras) else [])


def iris_runtime_setup() -> str:
    """Iris's runtime-deps script, which its own client sends after a job's setup scripts."""
    with one_import_at_a_time():
        from iris.cluster.setup_scripts import iris_runtime_setup_script

    return str(iris_runtime_setup_script())


def parity_for(cluster: str | None) -> ClientParity:
    """What a job sent to named cluster ``cluster`` gets: what the installed marin-iris's own client
    adds (see the module rules); ``EMBEDDED`` for no cluster (the embedded controller, a URL) or
    without Marin's Iris (naming a cluster then fails with one line saying what to install)."""
    if cluster is None or marin_unavailable() is not None:
        return EMBEDDED
    return ClientParity(iris_revision_date(), iris_default_setup, iris_runtime_setup())
