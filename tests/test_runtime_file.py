"""The runtime file: private, atomic, and never pointing at a dead process."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from fray_jupyter.runtime_file import (
    ControllerInfo,
    process_alive,
    read_runtime_file,
    remove_runtime_file,
    write_runtime_file,
)
from tests.waiting import until


def _info(pid: int) -> ControllerInfo:
    return ControllerInfo(url="http://127.0.0.1:1", grpc_url="grpc://127.0.0.1:2", token="t", pid=pid)


def test_written_private_and_read_back(tmp_path: Path) -> None:
    path = write_runtime_file(_info(os.getpid()), tmp_path / "rt.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert read_runtime_file(path, verify=False) == _info(os.getpid())
    assert read_runtime_file(path) is None  # nothing answers at its URL: stale


def test_a_dead_or_zombie_process_is_stale(tmp_path: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    until(lambda: Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z",
          "the child a zombie (exited, not reaped)")
    path = write_runtime_file(_info(child.pid), tmp_path / "rt.json")
    assert not process_alive(child.pid) and read_runtime_file(path) is None  # exited, not yet reaped
    child.wait()
    assert read_runtime_file(path) is None


def test_garbage_is_no_controller(tmp_path: Path) -> None:
    (tmp_path / "rt.json").write_text("{not json")
    assert read_runtime_file(tmp_path / "rt.json") is None


def test_remove_only_our_own(tmp_path: Path) -> None:
    path = write_runtime_file(_info(os.getpid()), tmp_path / "rt.json")
    remove_runtime_file(os.getpid() + 1, path)
    assert path.exists()
    remove_runtime_file(os.getpid(), path)
    assert not path.exists()
