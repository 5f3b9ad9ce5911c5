"""Which controller a kernel talks to, and starting the embedded one when there is none.

Rule, first match wins, for the URL: the ``url`` argument; inside an Iris task (``IRIS_TASK_ID``
parses and ``IRIS_CONTROLLER_URL`` is set), that task's controller, as Iris's in-task client
uses it (a job the task submits is its child and must reach the controller running its parent),
with ``$IRIS_TASK_TOKEN`` as token when the worker gave one; ``$FRAY_CONTROLLER_URL``; the runtime
file of a live embedded controller; else (``start=True``) a newly started embedded controller. The
token: the ``token`` argument; else, with a URL from the argument or the environment,
``$FRAY_CONTROLLER_TOKEN`` or the runtime file's token when that file describes the same URL;
with a URL from the runtime file, that file's token. A named cluster (``cluster=``, or
``$FRAY_CLUSTER`` / ``$MARIN_CLUSTER`` when no URL is given) comes before all but the task's
controller.

A started controller is ``python -m fray_jupyter.controller`` in its own session: it outlives the
kernel, ignores the kernel's interrupts, logs to ``<state dir>/controller.log``, and stops by itself
after an hour idle (``$FRAY_CONTROLLER_IDLE_TIMEOUT`` seconds when set); the next use starts it again. An exclusive
lock on ``<state dir>/controller.lock`` held over "look for one, else start one and wait for it"
makes kernels that connect at the same moment share one controller. If the runtime file does not
appear within ``START_TIMEOUT`` seconds, the process is stopped and ``ControllerStartFailed``
quotes the end of its log. (POSIX only, like the controller's process groups.)
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Final

from fray_jupyter.client.errors import ControllerStartFailed, ControllerUnreachable
from fray_jupyter.file_lock import exclusive
from fray_jupyter.runtime_file import (
    AUTO_IDLE_TIMEOUT_S,
    IDLE_ENV,
    ControllerInfo,
    read_runtime_file,
    runtime_file_path,
    state_dir,
)

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient

URL_ENV: Final[str] = "FRAY_CONTROLLER_URL"
TOKEN_ENV: Final[str] = "FRAY_CONTROLLER_TOKEN"
TASK_CONTROLLER_ENV: Final[str] = "IRIS_CONTROLLER_URL"
TASK_TOKEN_ENV: Final[str] = "IRIS_TASK_TOKEN"
START_TIMEOUT: Final[float] = 10.0
LOCK_FILE: Final[str] = "controller.lock"
LOG_FILE: Final[str] = "controller.log"
NO_CONTROLLER_URL: Final[str] = "(none)"
"""The ``url`` of the ``ControllerUnreachable`` raised when no controller is configured or running."""

_started: list[subprocess.Popen[bytes]] = []
"""Controllers this process started; held so that Python never warns about them as leaked."""


def connect(url: str | None = None, token: str | None = None, *, cluster: str | None = None,
            start: bool = True, timeout: float = 30.0, retry_for: float | None = None) -> FrayClient:
    """A ``FrayClient`` for the controller chosen by the module's rule (see its docstring), or for
    a named Marin cluster: ``cluster``, else (no URL given) ``$FRAY_CLUSTER`` / ``$MARIN_CLUSTER``
    (``client.clusters.chosen_cluster``; the client owns that resolution). ``retry_for`` None: the
    retry budget ``client.retry`` gives that controller."""
    from fray_jupyter.client.client import FrayClient  # here: resolving needs no transport (see magics)
    from fray_jupyter.client.clusters import chosen_cluster, connect_cluster

    if url is None and cluster is None and (task := task_controller()) is not None:
        return FrayClient(task[0], token or task[1], timeout=timeout, retry_for=retry_for)
    if (name := chosen_cluster(cluster, url or os.environ.get(URL_ENV))) is not None:
        return connect_cluster(name, timeout=timeout, retry_for=retry_for)
    url, token = resolve(url, token, start=start)
    return FrayClient(url, token, timeout=timeout, retry_for=retry_for)


def task_controller() -> tuple[str, str | None] | None:
    """``(url, token)`` of the controller running this process's Iris task, or None outside a task
    (see the module rule)."""
    from fray_jupyter.iris.states import parse_task_attempt  # here: %load_ext resolves without protobuf

    url = os.environ.get(TASK_CONTROLLER_ENV, "")
    if not url or parse_task_attempt(os.environ.get("IRIS_TASK_ID", "")) is None:
        return None
    return url, os.environ.get(TASK_TOKEN_ENV) or None


def resolve(url: str | None = None, token: str | None = None, *, start: bool = True) -> tuple[str, str | None]:
    """``(url, token)`` by the module's rule; starts an embedded controller only if ``start``."""
    url = url or os.environ.get(URL_ENV) or None
    if url is not None:
        info = read_runtime_file()
        same = info is not None and url.rstrip("/") in (info.url.rstrip("/"), info.grpc_url.rstrip("/"))
        return url, token or os.environ.get(TOKEN_ENV) or (info.token if same and info else None)
    info = read_runtime_file()
    if info is None and start:
        info = start_controller()
    if info is None:
        raise ControllerUnreachable(f"no controller is configured or running; pass url=, set ${URL_ENV}, "
                                    "or run `fray-jupyter controller`", url=NO_CONTROLLER_URL)
    return info.url, token or info.token


def controller_command(state: Path, runtime_file: Path) -> list[str]:
    """The command line of an embedded controller on free loopback ports, stopping after
    ``AUTO_IDLE_TIMEOUT_S`` idle (or ``$FRAY_CONTROLLER_IDLE_TIMEOUT``)."""
    command = [sys.executable, "-m", "fray_jupyter.controller",
               "--state-dir", str(state), "--runtime-file", str(runtime_file)]
    if not os.environ.get(IDLE_ENV, "").strip():  # when set, the controller reads the variable itself
        command += ["--idle-timeout", f"{AUTO_IDLE_TIMEOUT_S:g}"]
    return command


def start_controller(runtime_file: Path | None = None, state: Path | None = None, *,
                     timeout: float = START_TIMEOUT) -> ControllerInfo:
    """The live controller of ``runtime_file``, starting one in the background if there is none."""
    runtime_file = runtime_file or runtime_file_path()
    state = state or state_dir()
    state.mkdir(mode=0o700, parents=True, exist_ok=True)
    with exclusive(state / LOCK_FILE):
        info = read_runtime_file(runtime_file)
        if info is not None:
            return info
        runtime_file.unlink(missing_ok=True)  # stale: its process is gone
        log_path = state / LOG_FILE
        with open(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as log:
            process = subprocess.Popen(controller_command(state, runtime_file), stdin=subprocess.DEVNULL,
                                       stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        _started.append(process)
        return _await_runtime_file(process, runtime_file, log_path, timeout)


def _await_runtime_file(process: subprocess.Popen[bytes], runtime_file: Path, log_path: Path,
                        timeout: float) -> ControllerInfo:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = read_runtime_file(runtime_file)
        if info is not None:
            return info
        if process.poll() is not None:
            raise ControllerStartFailed(f"it exited with code {process.returncode}: {_last_line(log_path)}",
                                        url=str(log_path))
        time.sleep(0.05)
    _stop(process)
    raise ControllerStartFailed(f"no runtime file {runtime_file} after {timeout:g} s; "
                                f"last log line: {_last_line(log_path)}", url=str(log_path))


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group we started (its own session: group id == its pid), then SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


def _last_line(log_path: Path) -> str:
    lines = log_path.read_text(errors="replace").strip().splitlines()
    return lines[-1] if lines else "(empty log)"
