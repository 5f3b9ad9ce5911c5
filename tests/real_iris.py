"""A real Iris local controller (marin-iris[controller]) in a child process, for tests and benches.

The child runs ``LocalCluster(make_local_cluster_config(workers)).start()`` with HOME and TMPDIR
inside a scratch dir (LocalCluster writes ``~/.config/marin/credentials`` and temp state), prints
its URL on one line, and closes the cluster when its stdin closes: at the end of the ``with``
block, or by itself when the parent dies. It runs in Iris's null-auth mode (loopback clients need
no token). Run as a script, this file is the child.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

START_TIMEOUT = 60.0


@contextlib.contextmanager
def real_iris_controller(scratch: Path, workers: int = 2) -> Iterator[str]:
    """Start the child and yield the controller's ``http://127.0.0.1:<port>`` URL."""
    for name in ("home", "tmp"):
        (scratch / name).mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, HOME=str(scratch / "home"), TMPDIR=str(scratch / "tmp"))
    log_path = scratch / "iris.log"
    with log_path.open("w") as log:
        child = subprocess.Popen([sys.executable, __file__, str(workers)], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    assert child.stdin is not None and child.stdout is not None
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(child.stdout, selectors.EVENT_READ)
            ready = selector.select(START_TIMEOUT)
        line = child.stdout.readline() if ready else ""
        if not line.startswith("http://"):
            raise RuntimeError(f"the real Iris controller did not start; see {log_path}: "
                               f"{log_path.read_text()[-2000:]}")
        yield line.strip()
    finally:
        child.stdin.close()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


def _serve(workers: int) -> None:
    from iris.cluster.local_cluster import LocalCluster, make_local_cluster_config  # type: ignore[import-untyped]

    cluster = LocalCluster(make_local_cluster_config(workers))
    print(cluster.start(), flush=True)
    os.dup2(2, 1)  # nobody reads our stdout any more: keep later prints from filling the pipe
    sys.stdin.read()
    cluster.close()


if __name__ == "__main__":
    _serve(int(sys.argv[1]))
