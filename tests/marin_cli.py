"""Marin's real ``iris`` CLI (marin-iris), run in this process or as the installed console script.

In this process (``run_iris``) the CLI's click group is invoked with the arguments, the environment
and the working directory given, as its console script would run it: the same commands, options,
RPCs and exit codes, without paying the CLI's 3 s import once per command. Its output is what a
terminal would show, stdout and stderr interleaved: the CLI's log lines (rigging's logger writes to
stderr) and, for an exception the CLI lets escape, the traceback Python prints before exiting 1.
``run_iris_process`` runs the installed ``iris`` script instead: one test proves the entry point.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Final

IRIS: Final[Path] = Path(sys.executable).with_name("iris")
"""The console script marin-iris installs beside this Python."""
CLEARED_ENV: Final[tuple[str, ...]] = ("MARIN_CLUSTER_TOKEN",)
"""Variables of this environment the CLI never sees unless a test passes them."""


@dataclass(frozen=True)
class CliRun:
    """One ``iris`` command's exit code and its output (stdout and stderr together)."""

    returncode: int
    stdout: str


class _CurrentStderr:
    """A stream that writes to whatever ``sys.stderr`` is when a record is logged (click's runner
    swaps it per command), so the CLI's log lines land in that command's output."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


@functools.cache
def _log_handler() -> logging.Handler:
    """A handler that writes the CLI's log lines as its own stderr handler does (rigging's format),
    attached only while a command runs. rigging's ``configure_logging`` replaces the root logger's
    handlers the first time it runs in a process: it runs once here, and the test process's handlers
    and level are put back (later calls, the CLI's, only set levels)."""
    from rigging.log_setup import LOG_DATEFMT, LOG_FORMAT, LevelPrefixFormatter, configure_logging

    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    configure_logging()
    root.handlers[:] = handlers
    root.setLevel(level)
    handler = logging.StreamHandler(_CurrentStderr())
    handler.setFormatter(LevelPrefixFormatter(fmt=LOG_FORMAT, datefmt=LOG_DATEFMT))
    return handler


def _environment(user: str, env: dict[str, str] | None) -> dict[str, str | None]:
    """The changes to this environment for one command: ``IRIS_USER``, ``CLEARED_ENV`` unset, ``env``."""
    return {**dict.fromkeys(CLEARED_ENV), "IRIS_USER": user, **(env or {})}


def run_iris(url: str, *args: str, cwd: Path, user: str, env: dict[str, str] | None = None) -> CliRun:
    """Run ``iris --controller-url URL ARGS`` in this process from ``cwd`` as ``user`` (module doc)."""
    from click.testing import CliRunner
    from iris.cli import iris

    handler = _log_handler()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    try:
        with contextlib.chdir(cwd):
            result = CliRunner().invoke(iris, ["--controller-url", url, *args], env=_environment(user, env))
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    output = result.output
    if result.exc_info is not None and not isinstance(result.exc_info[1], SystemExit):
        output += "".join(traceback.format_exception(*result.exc_info))  # what Python prints, exiting 1
    return CliRun(result.exit_code, output)


def run_iris_process(url: str, *args: str, cwd: Path, user: str, env: dict[str, str] | None = None,
                     timeout: float = 180) -> CliRun:
    """Run the installed ``iris`` console script as a subprocess (same arguments as ``run_iris``)."""
    environment = {key: value for key, value in os.environ.items() if key not in CLEARED_ENV}
    environment.update({"IRIS_USER": user, **(env or {})})
    done = subprocess.run([str(IRIS), "--controller-url", url, *args], cwd=cwd, env=environment, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, check=False)
    return CliRun(done.returncode, done.stdout)
