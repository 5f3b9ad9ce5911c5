"""This checkout's wheel as a fresh clone builds it, built once per test run and shared.

``clean_wheel(tmp_path_factory)`` copies the files git would commit (no ``node_modules``, no build
output) into a private tree and runs ``pip wheel .`` there (npm install from npm's cache, the
labextension's production build, hatchling in an isolated build environment: the slow part of
every test that installs the package). The first caller builds it; the others, on any xdist worker
of the same run, wait on a lock beside the workers' temp dirs and get the same file: the packaging
checks, the Marin-environment installs and the other-Python installs all test one wheel.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from fray_jupyter.file_lock import exclusive

ROOT: Final[Path] = Path(__file__).resolve().parents[1]
BUILD_TIMEOUT: Final[float] = 600.0
ANSI: Final = re.compile(r"\x1b\[[0-9;]*m")


def run(*command: str, cwd: Path = ROOT, timeout: float = 300) -> str:
    """Run a command; its stdout and stderr together, without colours; fail on a non-zero exit."""
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)
    output = ANSI.sub("", done.stdout + done.stderr)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{output[-4000:]}"
    return output


def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory every worker of this test run shares (each xdist worker's base temp dir is
    ``<run>/popen-gwN``), or this process's own without xdist."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def clean_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from the files git would commit, once per test run (module rules)."""
    shared = run_dir(tmp_path_factory) / "clean-wheel"
    with exclusive(shared.with_suffix(".lock"), BUILD_TIMEOUT):
        built = sorted(shared.glob("fray_jupyter-*.whl"))
        if built:
            return built[0]
        tree = shared / "tree"
        files = run("git", "ls-files", "--cached", "--others", "--exclude-standard", "-z").split("\0")
        for name in filter(None, files):
            source = ROOT / name
            if source.is_file():
                (tree / name).parent.mkdir(parents=True, exist_ok=True)
                (tree / name).write_bytes(source.read_bytes())
        assert not (tree / "labextension" / "node_modules").exists()
        assert not (tree / "fray_jupyter" / "labextension").exists()
        run(sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--quiet", "-w", str(shared), cwd=tree,
            timeout=BUILD_TIMEOUT)
        (wheel,) = shared.glob("fray_jupyter-*.whl")
        return wheel
