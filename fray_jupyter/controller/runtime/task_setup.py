"""Task setup as on a real Iris worker: the job's ``setup_commands`` (Marin's client sends a
``uv sync`` of the bundled workspace by default) run before the command, into the task's venv.

Rules:

* Environment (``worker_environment``): ``IRIS_VENV`` and ``UV_PROJECT_ENVIRONMENT`` are
  ``$IRIS_WORKDIR/.venv`` (where Iris puts the venv: its work dir ``/app``, venv ``/app/.venv``);
  ``UV_CACHE_DIR`` is ``<state dir>/uv-cache``, shared by every task, so a second sync of the
  same workspace reuses what the first downloaded and built (``UV_PYTHON_INSTALL_DIR`` sits
  under it, as on Iris). A job with setup commands also finds ``uv`` (the ``uv`` package this
  project depends on) and this machine's Python on PATH: the directories of ``uv`` and of the
  controller's base interpreter are appended when missing, so the default ``uv sync --python
  3.<minor>`` of a client on the same Python uses it instead of downloading one, and nothing
  already on PATH is shadowed.
* Steps (``task_steps``): each setup command runs as ``bash -c`` in the work dir; when one
  fails, its last command and output make the task's error (``setup_failure``). The last step,
  the job's command, runs inside the venv when setup left one (``$IRIS_VENV/bin/activate`` is
  sourced and ``IRIS_PYTHON`` becomes the venv's python), as Iris's run script does; with no
  setup it runs as sent.
* A job sent without a workspace (no ``pyproject.toml`` in the work dir) has nothing to sync:
  Iris's default sync script is skipped there with one log line, and the task runs in this
  machine's Python, as Iris's own local cluster runs every task. Any other setup command runs
  as written.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

VENV_DIR: Final[str] = ".venv"
UV_CACHE_DIR: Final[str] = "uv-cache"
FAILURE_MARK: Final[str] = "[fray setup] failed"
TAIL_LINES: Final[int] = 20
_DEFAULT_SYNC_MARK: Final[str] = "echo 'syncing deps'"
_TRACE_FAILURES: Final[str] = f"trap 'echo \"{FAILURE_MARK}: $BASH_COMMAND\" >&2' ERR\n"
_SKIP_WITHOUT_PROJECT: Final[str] = (
    'if [ ! -f "$IRIS_WORKDIR/pyproject.toml" ]; then\n'
    "  echo '[fray setup] no pyproject.toml in the work dir (the job was sent without a workspace): "
    "nothing to uv sync; the task runs in the Python of this machine'\n"
    "  exit 0\n"
    "fi\n"
)
_RUN_IN_VENV: Final[str] = (
    'if [ -f "$IRIS_VENV/bin/activate" ]; then . "$IRIS_VENV/bin/activate"; '
    'export IRIS_PYTHON="$IRIS_VENV/bin/python"; fi; exec "$@"'
)


def uv_binary() -> Path | None:
    """The ``uv`` executable: the one the ``uv`` package ships, else one on PATH, else None."""
    try:
        from uv import find_uv_bin

        return Path(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        return Path(found) if found else None


def tool_dirs() -> list[Path]:
    """Where setup finds its tools: the directory of ``uv`` and that of this Python's base
    interpreter (outside any venv: uv does not take a venv's interpreter from PATH)."""
    dirs = []
    binary = uv_binary()
    if binary is not None:
        dirs.append(binary.parent)
    dirs.append(Path(getattr(sys, "_base_executable", "") or sys.executable).parent)
    return dirs


def worker_environment(workdir: Path, state_root: Path, path: str, *, setup: bool) -> dict[str, str]:
    """The variables a task gets on top of its base environment (see the module rules);
    ``path`` is the base environment's PATH, ``setup`` whether the job has setup commands."""
    venv = str(workdir / VENV_DIR)
    cache = state_root / UV_CACHE_DIR
    env = {
        "IRIS_VENV": venv,
        "UV_PROJECT_ENVIRONMENT": venv,
        "UV_CACHE_DIR": str(cache),
        "UV_PYTHON_INSTALL_DIR": str(cache / "python"),
    }
    if setup:
        parts = [part for part in path.split(os.pathsep) if part]
        parts += [str(directory) for directory in tool_dirs() if str(directory) not in parts]
        env["PATH"] = os.pathsep.join(parts)
    return env


def is_default_sync(script: str) -> bool:
    """Whether ``script`` is the ``uv sync`` setup Iris's client generates by default."""
    return _DEFAULT_SYNC_MARK in script and "uv sync" in script


def task_steps(setup_commands: Sequence[str], argv: Sequence[str]) -> list[list[str]]:
    """The processes of one attempt, in order: each setup command, then the command (see the
    module rules)."""
    steps = []
    for script in setup_commands:
        guard = _SKIP_WITHOUT_PROJECT if is_default_sync(script) else ""
        steps.append(["bash", "-c", _TRACE_FAILURES + guard + script])
    run = list(argv)
    if setup_commands:
        run = ["bash", "-c", _RUN_IN_VENV, "iris-task", *run]
    steps.append(run)
    return steps


def setup_failure(number: int, total: int, code: int, step: Sequence[str], output: Sequence[str]) -> str:
    """The task error for setup step ``number`` of ``total`` (argv ``step``, from
    ``task_steps``) exiting with ``code``: the command that failed (as bash reported it, else
    the script's first line) and the last ``TAIL_LINES`` lines of its output."""
    failed = next((line.removeprefix(FAILURE_MARK).removeprefix(":").strip() for line in reversed(output)
                   if line.startswith(FAILURE_MARK)), "")
    if not failed:
        script = step[-1].removeprefix(_TRACE_FAILURES).removeprefix(_SKIP_WITHOUT_PROJECT)
        first = next((line for line in script.splitlines() if line.strip()), script)
        failed = f"in {shlex.quote(first)}"
    shown = [line for line in output if not line.startswith(FAILURE_MARK)][-TAIL_LINES:]
    tail = "\n".join(shown) if shown else "(no output)"
    return f"setup command {number}/{total} failed with exit code {code}: {failed}\nlast output:\n{tail}"
