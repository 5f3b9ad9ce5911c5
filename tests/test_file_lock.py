"""``file_lock.exclusive``: another process's lock makes a waiter give up after its timeout with
the file named, and a holder that dies leaves the lock free."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fray_jupyter.file_lock import LockTimeout, exclusive
from tests.marin_home import REPO

HOLDER = """
import sys
from pathlib import Path
from fray_jupyter.file_lock import exclusive
with exclusive(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.readline()
"""


def holder(lock: Path) -> subprocess.Popen[str]:
    """A process that holds ``lock`` from its "held" line until its stdin closes."""
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    return process


def test_a_lock_another_process_holds_times_out_naming_the_file(tmp_path: Path) -> None:
    lock = tmp_path / "dir" / "x.lock"
    process = holder(lock)
    try:
        with pytest.raises(LockTimeout) as caught, exclusive(lock, timeout=0.1):
            pass
        assert str(caught.value) == f"{lock} was held by another process for all of 0.1 s"
        assert oct(lock.stat().st_mode & 0o777) == "0o600"
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)
    with exclusive(lock, timeout=0.1):  # released with the block
        pass


def test_a_holder_that_dies_leaves_the_lock_free(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    process = holder(lock)
    process.kill()
    process.wait(timeout=30)
    with exclusive(lock, timeout=0.1):
        assert lock.is_file()
