"""An exclusive lock between processes on one machine: ``flock`` on a lock file.

Rules: the lock file is created private (mode 0600, its directory 0700 when made here) and never
removed; the lock is held for a ``with`` block and dies with its holder, so a process that crashed
never leaves it taken. A waiter gives up after ``timeout`` seconds with ``LockTimeout`` naming the
file (``timeout=None`` waits as long as it takes). POSIX only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

POLL_S: Final[float] = 0.05
"""How often a waiter with a timeout tries the lock again (``flock`` itself cannot time out)."""


class LockTimeout(TimeoutError):
    """Another process held ``path`` for all of ``timeout`` seconds."""

    def __init__(self, path: Path, timeout: float) -> None:
        self.path = path
        self.timeout = timeout
        super().__init__(f"{path} was held by another process for all of {timeout:g} s")


@contextlib.contextmanager
def exclusive(path: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold the exclusive lock on ``path`` for the ``with`` block (module rules)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "a") as handle:
        if timeout is None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        else:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockTimeout(path, timeout) from None
                    time.sleep(POLL_S)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
