"""Where the embedded controller says it is listening: one JSON file in the Jupyter runtime dir.

The controller writes it (mode 0600: it holds the bearer token) once it accepts connections and
removes it when it stops; kernels and the Jupyter server read it to find the controller.

Rule: the file counts only while its process is alive AND its URL's ``GET /health`` answers with
the same ``instance`` (a random id the controller puts in both). A file left by a killed controller
whose pid now belongs to some other process, or whose port another server took, is stale: readers
treat it as absent and the next start replaces it. (A file without an instance, written by
``--iris-local``, needs its URL to accept connections.)
"""

from __future__ import annotations

import http.client
import json
import os
import socket
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from jupyter_core.paths import jupyter_data_dir, jupyter_runtime_dir

RUNTIME_FILE_NAME: Final[str] = "fray-controller.json"
IDLE_ENV: Final[str] = "FRAY_CONTROLLER_IDLE_TIMEOUT"
"""Seconds an embedded controller may stay idle before it stops (0: never; see ``controller.lifecycle``)."""
AUTO_IDLE_TIMEOUT_S: Final[float] = 3600.0
"""The idle timeout of a controller that discovery starts in the background, unless ``IDLE_ENV`` is set."""
HEALTH_TIMEOUT: Final[float] = 2.0
"""Seconds to wait for ``/health`` before a runtime file counts as stale."""


@dataclass(frozen=True)
class ControllerInfo:
    """How to reach a running controller: Connect URL (``http://127.0.0.1:<port>``), native gRPC
    URL (``grpc://127.0.0.1:<port>``), bearer token, the serving process id, and the controller's
    random ``instance`` id (also answered by its ``/health``; empty for ``--iris-local``)."""

    url: str
    grpc_url: str
    token: str
    pid: int
    instance: str = ""


def runtime_file_path() -> Path:
    """``<jupyter runtime dir>/fray-controller.json`` (honours ``$JUPYTER_RUNTIME_DIR``)."""
    return Path(jupyter_runtime_dir()) / RUNTIME_FILE_NAME


def state_dir() -> Path:
    """``<jupyter data dir>/fray``: the controller's SQLite store and task work dirs (honours
    ``$JUPYTER_DATA_DIR``)."""
    return Path(jupyter_data_dir()) / "fray"


def write_runtime_file(info: ControllerInfo, path: Path | None = None) -> Path:
    """Atomically write ``info`` with mode 0600 (created private, then renamed into place)."""
    path = path or runtime_file_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        json.dump(asdict(info), handle)
    os.replace(temporary, path)
    return path


def read_runtime_file(path: Path | None = None, *, verify: bool = True) -> ControllerInfo | None:
    """The controller described by the runtime file, or None when there is no file, it is
    unreadable, or it is stale (see the module rule; ``verify=False`` checks the pid only)."""
    path = path or runtime_file_path()
    try:
        info = ControllerInfo(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    if not process_alive(info.pid) or (verify and not answers_as(info)):
        return None
    return info


def answers_as(info: ControllerInfo, timeout: float = HEALTH_TIMEOUT) -> bool:
    """Whether the controller at ``info.url`` is the one ``info`` describes: its ``/health``
    names the same instance (without an instance: the URL accepts connections)."""
    parts = urlsplit(info.url)
    if parts.scheme != "http" or not parts.hostname or not parts.port:
        return False
    try:
        if not info.instance:
            socket.create_connection((parts.hostname, parts.port), timeout=timeout).close()
            return True
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
        try:
            connection.request("GET", "/health")
            reply = connection.getresponse()
            body = json.loads(reply.read()) if reply.status == 200 else {}
        finally:
            connection.close()
    except (OSError, ValueError, http.client.HTTPException):
        return False
    return isinstance(body, dict) and body.get("instance") == info.instance


def process_alive(pid: int) -> bool:
    """True while ``pid`` runs. A zombie (exited, not yet reaped by its parent, e.g. a controller
    killed under the kernel that started it) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by someone else
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (macOS): signal 0 is all we know
    return stat.rpartition(")")[2].split()[0] != "Z"


def remove_runtime_file(pid: int, path: Path | None = None) -> None:
    """Remove the runtime file if it still describes process ``pid`` (never another's)."""
    path = path or runtime_file_path()
    current = read_runtime_file(path, verify=False)
    if current is not None and current.pid == pid:
        path.unlink(missing_ok=True)
