"""Keep tests that start kernels or controllers off the user's Jupyter dirs, and stop every
embedded controller they started: one auto-started by a kernel outlives it (its own session),
so teardown reads the runtime file and SIGTERMs the controller's process group."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing import globalipapp

from fray_jupyter.client.discovery import TOKEN_ENV, URL_ENV
from fray_jupyter.runtime_file import RUNTIME_FILE_NAME, read_runtime_file
from tests.controller_harness import ControllerProcess, pid_alive, start_controller, stop_quietly

ISOLATED_ENV = ("JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR")


def stop_runtime_controller(runtime_dir: Path, timeout: float = 10.0) -> int | None:
    """SIGTERM the process group of the controller ``runtime_dir``'s runtime file names (SIGKILL
    after ``timeout`` s); its pid, or None when no live controller is recorded there."""
    info = read_runtime_file(runtime_dir / RUNTIME_FILE_NAME)
    if info is None:
        return None
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(info.pid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(info.pid, os.WNOHANG)  # reap it if this process started it
            if not pid_alive(info.pid):  # gone, or a zombie its parent (a kernel) has not reaped
                return info.pid
            time.sleep(0.05)
    return info.pid


@contextlib.contextmanager
def isolated_jupyter(root: Path) -> Iterator[Path]:
    """``$JUPYTER_RUNTIME_DIR`` and ``$JUPYTER_DATA_DIR`` under ``root`` (kernels started meanwhile
    inherit them), no controller URL or token from the environment; yields the runtime dir and
    stops its controller on exit."""
    runtime = root / "runtime"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
        patch.setenv("JUPYTER_DATA_DIR", str(root / "data"))
        patch.delenv(URL_ENV, raising=False)
        patch.delenv(TOKEN_ENV, raising=False)
        try:
            yield runtime
        finally:
            stop_runtime_controller(runtime)


@contextlib.contextmanager
def magics_controller(root: Path, user: str, *args: str) -> Iterator[ControllerProcess]:
    """A real embedded controller (started with ``args``) that the magics find through the runtime
    file of Jupyter dirs isolated under ``root``, with ``$IRIS_USER`` set to ``user``; stopped on exit."""
    with isolated_jupyter(root) as runtime, pytest.MonkeyPatch.context() as patch:
        patch.setenv("IRIS_USER", user)
        process = start_controller(root / "state", *args, runtime_file=runtime / "fray-controller.json")
        try:
            yield process
        finally:
            stop_quietly(process)


def magics_shell() -> InteractiveShell:
    """The one global IPython test shell (started here, or by an earlier module), with the magics
    loaded."""
    # start_ipython() is None once the shell was started elsewhere; IPython's test helpers are untyped
    shell: InteractiveShell = globalipapp.start_ipython() or globalipapp.get_ipython()  # type: ignore[no-untyped-call]
    shell.run_line_magic("load_ext", "fray_jupyter.magics")
    return shell
