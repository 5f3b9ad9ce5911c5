"""Resubmit: send a job's request again under a fresh name, as a re-run of its cell would — what
``%fray resubmit JOB`` and the sidebar's Resubmit button (through the Jupyter server) call.

Rules:

* The request is the one the controller stored (``GetJobStatus``), sent unchanged but for its name:
  the same command, environment, setup, resources, constraints, band, retries and workspace bundle
  (by ``bundle_id``, which the controller keeps).
* The new job sits beside the old one (same parent, same user). Without ``name`` it is the old
  name without a ``-r<N>`` suffix, then ``-r2``, ``-r3`` … — the first no job of the controller has
  (at most ``MAX_TRIES`` looked at); a given ``name`` is one path component and must be free.
* Inline ``workdir_files`` (a ``%%fray`` cell's ``_fray_cell.py``, a callable's pickle) are
  returned by neither Iris nor the embedded controller: they are taken from what this machine kept
  when it sent the job (``client.sent``).
* A request that cannot be sent again as it was is refused with one line saying why, and nothing
  is sent: a controller that returned values redacted (a genuine Iris redacts secrets and
  credential-looking env vars: ``iris.redaction``), or a command that runs a work-dir file
  (``$IRIS_WORKDIR/<name>``) neither returned nor kept here (a job sent from another machine) —
  re-run the cell for those.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, ClassVar, Final

from fray_jupyter.client import sent
from fray_jupyter.client.errors import InvalidRequest, JobNotFound
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.redaction import redacted_names

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient

MAX_TRIES: Final[int] = 50
_SUFFIX: Final[re.Pattern[str]] = re.compile(r"-r\d+$")
_WORKDIR_FILE: Final[re.Pattern[str]] = re.compile(r"\$\{?IRIS_WORKDIR\}?/([\w.\-]+)")


class ResubmitRefused(InvalidRequest):
    """Resubmit refused before anything was sent (see the module rules): its message says why."""

    template: ClassVar[str] = "{detail}"


def _refused(client: FrayClient, job_id: str, why: str, code: str = "failed_precondition") -> ResubmitRefused:
    return ResubmitRefused(f"cannot resubmit {job_id}: {why}", url=client.url, method="LaunchJob", code=code,
                          job_id=job_id)


def missing_files(request: Controller.LaunchJobRequest) -> list[str]:
    """The work-dir files the command runs (``$IRIS_WORKDIR/<name>``) that the request does not carry."""
    entry = request.entrypoint
    named = {match for arg in entry.run_command.argv for match in _WORKDIR_FILE.findall(arg)}
    return sorted(named - set(entry.workdir_files) - set(entry.workdir_file_refs))


def _free(client: FrayClient, job_id: str) -> bool:
    try:
        client.status(job_id)
    except JobNotFound:
        return True
    return False


def fresh_name(client: FrayClient, old_id: str, name: str | None = None) -> str:
    """The new job's id (see the module rules)."""
    parent, _, leaf = old_id.rpartition("/")
    if name is not None:
        if not name.strip() or "/" in name or name != name.strip():
            raise _refused(client, old_id, f"the new name must be one path component without spaces around it, "
                                           f"got {name!r}", "invalid_argument")
        wanted = f"{parent}/{name}"
        if not _free(client, wanted):
            raise _refused(client, old_id, f"{wanted} already exists; give another name", "already_exists")
        return wanted
    base = _SUFFIX.sub("", leaf)
    for number in range(2, MAX_TRIES + 2):
        if _free(client, candidate := f"{parent}/{base}-r{number}"):
            return candidate
    raise _refused(client, old_id, f"{parent}/{base}-r2 … -r{MAX_TRIES + 1} are all taken; give a name",
                   "already_exists")


def resubmit(client: FrayClient, job_id: str, name: str | None = None) -> str:
    """Send ``job_id``'s stored request again under a fresh name (see the module rules); the new job id."""
    stored = client.job(job_id).request
    hidden = redacted_names(stored.environment.env_vars, stored.environment.secrets)
    if hidden:
        raise _refused(client, job_id, f"the controller returned the values of {', '.join(hidden)} redacted, and sending "
                               "them as they read would replace them; re-run the cell (or submit it again) instead")
    if missing_files(stored):  # the files this machine sent with it, when it kept them (client.sent)
        stored.entrypoint.workdir_files.update(sent.held(client.url, job_id, stored.entrypoint.run_command.argv))
    if missing := missing_files(stored):
        raise _refused(client, job_id, f"its command runs {', '.join(missing)} from the work dir, a file the controller "
                               "does not return; re-run the cell (or submit it again) instead")
    request = Controller.LaunchJobRequest()
    request.CopyFrom(stored)
    request.name = fresh_name(client, job_id, name)
    return client.submit(request)
