"""The inline work-dir files of the jobs this machine submitted, kept so they can be resubmitted:
neither Iris nor the embedded controller returns a stored request's ``workdir_files`` (a ``%%fray``
cell's ``_fray_cell.py``, a callable's pickle), and ``client.resubmit`` needs them back.

Rules:

* ``FrayClient.submit`` keeps the ``workdir_files`` of a request it sent, when it has any and they
  total at most ``MAX_BYTES``, in ``<jupyter data dir>/fray/sent/`` (``runtime_file.state_dir``),
  one file per controller URL and job id (private: the directory 0700, the file 0600), with the
  command they belong to. A later submission under the same id replaces it. At most ``MAX_KEPT``
  are kept: the oldest beyond that are removed.
* ``held(url, job_id, argv)`` gives them back only when they were kept for that controller and job
  and for the same command; else ``{}``.
* Keeping is a convenience: a failure to write (a read-only home, a full disk) is ignored, never a
  failed submission.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from google.protobuf.message import DecodeError

from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.runtime_file import state_dir

MAX_BYTES: Final[int] = 16 * 1024 * 1024
MAX_KEPT: Final[int] = 500


def sent_dir() -> Path:
    """Where the files are kept (see the module rules)."""
    return state_dir() / "sent"


def _path(url: str, job_id: str) -> Path:
    return sent_dir() / (hashlib.sha256(f"{url.rstrip('/')}\n{job_id}".encode()).hexdigest()[:32] + ".pb")


def keep(url: str, job_id: str, entrypoint: job_pb2.RuntimeEntrypoint) -> None:
    """Keep ``entrypoint``'s work-dir files for ``job_id`` on ``url`` (see the module rules)."""
    files = entrypoint.workdir_files
    if not files or sum(len(data) for data in files.values()) > MAX_BYTES:
        return
    kept = job_pb2.RuntimeEntrypoint(run_command=entrypoint.run_command, workdir_files=dict(files))
    try:
        folder = sent_dir()
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = _path(url, job_id)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(kept.SerializeToString())
        os.replace(temporary, path)
        held = sorted(folder.glob("*.pb"), key=lambda one: one.stat().st_mtime)
        for old in held[:max(0, len(held) - MAX_KEPT)]:
            old.unlink(missing_ok=True)
    except OSError:
        return


def held(url: str, job_id: str, argv: Sequence[str]) -> Mapping[str, bytes]:
    """The files kept for ``job_id`` on ``url`` if they belong to the command ``argv``, else ``{}``."""
    try:
        kept = job_pb2.RuntimeEntrypoint.FromString(_path(url, job_id).read_bytes())
    except (OSError, DecodeError):
        return {}
    return dict(kept.workdir_files) if list(kept.run_command.argv) == list(argv) else {}
