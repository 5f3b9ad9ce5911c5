"""The docs built once per test run, as ``scripts/docs`` builds them (warnings are errors), and the
example notebooks that build executed: ``tests/test_docs.py`` checks the site and
``tests/test_examples.py`` the notebooks' outputs, so each example runs once on the embedded controller.

The first pytest process to ask builds; the others (``pytest -n``'s workers) wait on a lock in the
run's shared temporary dir and read the same build. The build leaves the controller its examples
started running (``FRAY_DOCS_KEEP_CONTROLLER_IN``, ``docs/_ext/fray_docs.py``) until what the Zephyr
example left on it is checked (``tests/zephyr_checks.py``), then stops it.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import nbformat
import pytest

from fray_jupyter.client.client import FrayClient
from fray_jupyter.file_lock import exclusive
from fray_jupyter.runtime_file import RUNTIME_FILE_NAME, read_runtime_file
from tests.jupyter_isolation import stop_runtime_controller
from tests.wheels import run_dir
from tests.zephyr_checks import check_zephyr_run

REPO: Final = Path(__file__).resolve().parents[1]
DOCS: Final = REPO / "docs"
BUILD_TIMEOUT: Final = 900.0
CONTEXT_LINES: Final = 40
"""Lines of the build's output shown from each warning or error on (a traceback follows its first line)."""
OUTCOME: Final = "outcome.json"
SPHINX_MESSAGE: Final = re.compile(r"\b(WARNING|ERROR|CRITICAL): ")
"""A warning or error in Sphinx's own form (``_sphinx`` says why only that form counts)."""


@functools.cache
def _extension() -> Any:
    """The docs' own Sphinx extension (``docs/_ext/fray_docs.py``): its user and its environment variable."""
    spec = importlib.util.spec_from_file_location("fray_docs", DOCS / "_ext" / "fray_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class DocsBuild:
    """A finished build: its site, the notebooks it executed, and what failed (None: nothing)."""

    site: Path
    executed: Path
    build_failure: str | None
    zephyr_failure: str | None

    def notebook(self, name: str) -> nbformat.NotebookNode:
        """The example ``name`` as the build executed it (the build's failure when it has none)."""
        path = self.executed / name
        assert path.is_file(), self.build_failure or f"the docs build executed no {name}"
        return nbformat.read(path, as_version=4)


def _sphinx(out: Path, kept: Path) -> str | None:
    """Build the docs into ``out/html``; Sphinx's warnings and errors (each with the lines that follow it,
    such as the traceback of a notebook cell that failed), or None when there were none.

    Only Sphinx's own form counts (``WARNING: ``, as Sphinx and myst-nb report): the kernels that
    execute the examples write their own log to the same stderr, and ipykernel 7.4 can log an
    ``ERROR:tornado.general:`` traceback as it shuts down after the last cell (its IOPub thread's
    ``schedule`` sends on an event pipe that shutdown has just closed: ZMQError ENOTSOCK), which says
    nothing about the notebook; a cell that fails, or a kernel that dies, is Sphinx's error."""
    run = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-b", "html", "-q", "-d", str(out / "doctrees"),
         str(DOCS), str(out / "html")],
        cwd=REPO, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False,
        env={**os.environ, _extension().KEEP_CONTROLLER_ENV: str(kept)})
    lines = run.stderr.splitlines()
    flagged = [index for index, line in enumerate(lines) if SPHINX_MESSAGE.search(line)]
    if run.returncode == 0 and not flagged:
        return None
    return "\n".join("\n".join(lines[index:index + CONTEXT_LINES]) for index in flagged) or run.stderr[-3000:]


def _check_zephyr(executed: Path, runtime: Path) -> str | None:
    """``check_zephyr_run`` on the build's controller; its failure, or None when it held."""
    info = read_runtime_file(runtime / RUNTIME_FILE_NAME)
    if info is None:
        return "the docs build left no embedded controller to check the Zephyr example's run on"
    try:
        with FrayClient(info.url, info.token) as client:
            check_zephyr_run(nbformat.read(executed / "zephyr.ipynb", as_version=4), client, _extension().DOCS_USER)
    except Exception as failure:  # noqa: BLE001  # reported by the test that reads it
        return f"{type(failure).__name__}: {failure}"
    return None


def _build(out: Path) -> DocsBuild:
    """Build into ``out``, check the Zephyr run, stop the controller; the outcome is saved there too."""
    kept = out / "jupyter"
    executed = out / "jupyter_execute" / "examples"
    try:
        build_failure = _sphinx(out, kept)
        zephyr_failure = _check_zephyr(executed, kept / "jupyter_runtime_dir")
    finally:
        stop_runtime_controller(kept / "jupyter_runtime_dir")
    (out / OUTCOME).write_text(json.dumps({"build_failure": build_failure, "zephyr_failure": zephyr_failure}))
    return DocsBuild(out / "html", executed, build_failure, zephyr_failure)


def build_docs(tmp_path_factory: pytest.TempPathFactory) -> DocsBuild:
    """The run's one docs build (module doc): made by the first process to ask, read by the others."""
    try:
        import myst_nb  # noqa: F401
    except ImportError:
        pytest.fail("the [docs] extra is not installed: scripts/test (or scripts/docs) installs it")
    shared = run_dir(tmp_path_factory)
    out = shared / "docs-build"
    with exclusive(shared / "docs-build.lock"):
        if (out / OUTCOME).is_file():
            outcome = json.loads((out / OUTCOME).read_text())
            return DocsBuild(out / "html", out / "jupyter_execute" / "examples", outcome["build_failure"],
                             outcome["zephyr_failure"])
        out.mkdir(exist_ok=True)
        return _build(out)
