"""``%fray session pip NAME …`` on a host: pip in the host's own Python, its state kept.

Rules:

* ``pip(host, argv)`` runs ``<the host's Python> -m pip <argv>`` in the host's work dir, as a
  child process (argv a list of strings, never a shell line), so the packages go where that
  Python installs them (the task's venv when setup made one) and the host's namespace, modules and
  variables are untouched. Its exit code and its output (stdout and stderr, in order) come back.
* Once pip ends, the import system's caches are invalidated, so a package it installed imports in
  the next cell without a restart. A package already imported keeps its loaded code (as in any
  Python process: reload it, or restart the session, to use an upgraded one).
* An argv that is empty or not strings is a ``SessionError``; a pip that fails is its exit code and
  output, not an error of the host.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fray_jupyter.session.outputs import SessionError


@dataclass(frozen=True)
class PipReply:
    """One host's pip: its exit code and its output."""

    host: int
    code: int
    output: str


def pip(host: int, argv: Sequence[str], workdir: Path) -> PipReply:
    """Run pip with ``argv`` for ``host`` in ``workdir`` (the module rules)."""
    if isinstance(argv, str) or not argv or not all(isinstance(arg, str) for arg in argv):
        raise SessionError(f"pip arguments are a non-empty list of strings, e.g. ['install', 'pkg'], not {argv!r}")
    done = subprocess.run([sys.executable, "-m", "pip", *argv], cwd=workdir, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace", check=False)
    importlib.invalidate_caches()
    return PipReply(host, done.returncode, done.stdout)
