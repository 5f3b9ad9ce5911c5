"""Which Marin release fray-jupyter's translation follows, and how older releases treat a job
differently (``DIFFERENCES``, as data).

Rules:

* fray-jupyter sends what Marin ``FOLLOWED`` (marin-fray / marin-iris) sends, and previews placement
  as that release's Iris places. The conformance suite checks this against ``FOLLOWED`` and against
  older releases, which must differ exactly by the rows below that apply to them (a row that stops
  showing, or a difference no row lists, fails it).
* A row applies to every release older than its ``until`` and to the jobs its ``applies`` names
  (``APPLIES``: every job, jobs with secrets, jobs with the NCCL defaults of the ``gpu`` extra, jobs
  with a preferred region constraint).
* ``version_warnings`` is what ``plan()`` adds to a job's warnings when the installed Marin
  (``installed_marin``: marin-iris, else marin-fray) is older than ``FOLLOWED``: the version line, then
  each row that applies to this job. Versions compare by their release (``0.2.200`` of
  ``0.2.200.dev39117391147``).
* ``SECRETS_SINCE``: an Iris older than it has no ``EnvironmentConfig.secrets`` (field 7); a job with
  secrets is refused before it reaches such a controller (``client.client``), never sent to lose them.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.proto.controller_pb2 import Controller

LaunchJobRequest = Controller.LaunchJobRequest

FOLLOWED: Final[str] = "0.2.227"
"""The Marin release whose client fray-jupyter's translation and placement follow."""
SECRETS_SINCE: Final[str] = "0.2.222"
"""The first Marin release whose Iris carries a job's secrets (``EnvironmentConfig.secrets``, field 7)."""
DISTRIBUTIONS: Final[tuple[str, ...]] = ("marin-iris", "marin-fray")
"""Where the installed Marin version is read, first found wins."""


@dataclass(frozen=True)
class VersionDifference:
    """Releases older than ``until`` treat the jobs ``applies`` names (a key of ``APPLIES``) as
    ``text`` says, where fray-jupyter does what ``FOLLOWED`` does."""

    name: str
    until: str
    applies: str
    text: str


DIFFERENCES: Final[tuple[VersionDifference, ...]] = (
    VersionDifference("secrets", SECRETS_SINCE, "secrets",
                      "has no EnvironmentConfig.secrets (field 7): Marin's client cannot send this job's "
                      "secrets and its Iris drops them"),
    VersionDifference("client_revision_date", FOLLOWED, "every job",
                      "stamps its own build date as client_revision_date; fray-jupyter sends Marin "
                      f"{FOLLOWED}'s"),
    VersionDifference("nccl_debug", "0.2.202", "nccl",
                      "sets NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS for the gpu extra; fray-jupyter sends "
                      "NCCL_DEBUG=WARN"),
    VersionDifference("soft_region_no_capacity", "0.2.168", "preferred region",
                      "finds no_capacity for a preferred region constraint that matches no scale group; "
                      "the preview routes the job, as later Iris does"),
)


def _has_preferred_region(request: LaunchJobRequest) -> bool:
    return any(c.key == "region" and c.mode == job_pb2.CONSTRAINT_MODE_PREFERRED for c in request.constraints)


APPLIES: Final[dict[str, Callable[[LaunchJobRequest], bool]]] = {
    "every job": lambda request: True,
    "secrets": lambda request: bool(request.environment.secrets),
    "nccl": lambda request: "NCCL_DEBUG" in request.environment.env_vars,
    "preferred region": _has_preferred_region,
}
"""Which jobs a ``VersionDifference.applies`` key names, read from the request as sent."""

_RELEASE = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def release(version: str) -> tuple[int, int, int]:
    """The ``(major, minor, patch)`` release of a Marin version (``0.2.200.dev39117391147`` →
    ``(0, 2, 200)``); ``ValueError`` naming the value for anything else."""
    match = _RELEASE.match(version.strip())
    if match is None:
        raise ValueError(f"Marin version {version!r} must start with a release such as '0.2.227'")
    return int(match[1]), int(match[2]), int(match[3])


def differences_for(request: LaunchJobRequest, marin: str) -> tuple[VersionDifference, ...]:
    """The rows of ``DIFFERENCES`` that hold for Marin ``marin`` and this job's request."""
    have = release(marin)
    return tuple(row for row in DIFFERENCES if have < release(row.until) and APPLIES[row.applies](request))


@functools.cache
def installed_marin() -> str | None:
    """The installed Marin version (marin-iris, else marin-fray), or None when neither is installed."""
    for name in DISTRIBUTIONS:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def follows_line(marin: str | None) -> str:
    """The one line that says which Marin the preview follows, and which one is installed."""
    if marin is None:
        return f"follows Marin {FOLLOWED} (no Marin installed)"
    same = "" if release(marin) >= release(FOLLOWED) else ": older, see the warnings"
    return f"follows Marin {FOLLOWED} (installed: {marin}{same})"


def version_warnings(request: LaunchJobRequest, marin: str | None) -> tuple[str, ...]:
    """What ``plan()`` warns for ``marin`` (module rules): nothing for None or a release not older than
    ``FOLLOWED``, else the version line and one sentence per difference that applies to this job."""
    if marin is None or release(marin) >= release(FOLLOWED):
        return ()
    head = f"Marin {marin} is installed; this plan follows Marin {FOLLOWED}, and for this job Marin {marin}:"
    return (head, *(f"(before {row.until}) {row.text}" for row in differences_for(request, marin)))
