"""Where the embedded controller says it is listening: one JSON file in the Jupyter runtime dir.

The controller writes it (mode 0600: it holds the bearer token) once it accepts connections and
removes it when it stops; kernels and the Jupyter server read it to find the controller.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

from jupyter_core.paths import jupyter_data_dir, jupyter_runtime_dir

RUNTIME_FILE_NAME: Final[str] = "fray-controller.json"


@dataclass(frozen=True)
class ControllerInfo:
    """How to reach a running controller: Connect URL (``http://127.0.0.1:<port>``), native gRPC
    URL (``grpc://127.0.0.1:<port>``), bearer token, and the serving process id."""

    url: str
    grpc_url: str
    token: str
    pid: int


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


def read_runtime_file(path: Path | None = None) -> ControllerInfo | None:
    """The controller described by the runtime file, or None when there is no file, it is
    unreadable, or its process is gone (a stale file left by a killed controller)."""
    path = path or runtime_file_path()
    try:
        info = ControllerInfo(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return info if process_alive(info.pid) else None


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
    current = read_runtime_file(path)
    if current is not None and current.pid == pid:
        path.unlink(missing_ok=True)
