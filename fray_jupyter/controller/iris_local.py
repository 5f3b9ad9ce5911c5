"""A genuine Iris local cluster (marin-iris[controller]) in a child process: what
``fray-jupyter controller --iris-local``, the tests and the benches start.

Rules:

* The child (``python -m fray_jupyter.controller.iris_local <workers> <port>``) runs
  ``LocalCluster(make_local_cluster_config(workers)).start()`` on 127.0.0.1, prints the
  controller's URL as its first stdout line, and closes the cluster when its stdin reaches end
  of file (the parent closed it, or the parent died) or when it gets SIGTERM or SIGINT.
* The cluster runs in Iris's null-auth mode (loopback clients need no token) and speaks Connect
  over HTTP/1.1 only: it has no native gRPC URL.
* Side effects: ``LocalCluster.start()`` writes ``~/.config/marin/credentials/<cluster>.json``
  (the cluster's endpoint, as Iris's own ``iris cluster start --local`` does) and keeps its
  state under ``tempfile``'s directory. ``start(home=..., tmp=...)`` gives the child its own
  HOME and TMPDIR. Task processes inherit the child's HOME (Iris sets their TMPDIR itself), so
  a private HOME suits tests and benches, not users' jobs.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import selectors
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

IRIS_VERSION: Final[str] = "0.2.227.dev40316220070"
REQUIREMENT: Final[str] = f"marin-iris[controller]=={IRIS_VERSION}"
DISTRIBUTIONS: Final[tuple[str, ...]] = ("marin-iris", "marin-finelog-server")
"""What ``--iris-local`` imports: Iris itself and the log server of its ``[controller]`` extra."""
DEFAULT_WORKERS: Final[int] = 2
START_TIMEOUT: Final[float] = 60.0
STOP_TIMEOUT: Final[float] = 30.0


class IrisLocalUnavailable(RuntimeError):
    """marin-iris[controller] is not installed, or its cluster did not start."""


def unavailable_reason(feature: str = "--iris-local") -> str | None:
    """None when marin-iris[controller] is installed for this Python, else one line saying that
    ``feature`` needs it, what is missing and the command that installs it."""
    missing = []
    for name in DISTRIBUTIONS:
        try:
            importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(name)
    if not missing and sys.version_info >= (3, 12):
        return None
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    detail = f"missing: {', '.join(missing)}" if missing else f"this is Python {python}"
    return f"{feature} needs marin-iris[controller] (Python 3.12): pip install '{REQUIREMENT}' ({detail})"


@dataclass
class IrisLocalCluster:
    """A running child: the controller's ``url`` and where the child's stderr goes (``log``)."""

    url: str
    process: subprocess.Popen[str]
    log: Path

    def stop(self, timeout: float = STOP_TIMEOUT) -> int:
        """Close the child's stdin (it closes the cluster) and wait; SIGKILL after ``timeout``.
        Returns the child's exit status."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()

    def log_tail(self, chars: int = 2000) -> str:
        """The end of the child's log."""
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no log)"


def child_environment(*, home: Path | None = None, tmp: Path | None = None) -> dict[str, str]:
    """This process's environment with HOME and/or TMPDIR replaced (those dirs are created)."""
    env = dict(os.environ)
    for name, path in (("HOME", home), ("TMPDIR", tmp)):
        if path is not None:
            path.mkdir(parents=True, exist_ok=True)
            env[name] = str(path)
    return env


def start(log: Path, *, workers: int = DEFAULT_WORKERS, port: int = 0, home: Path | None = None,
          tmp: Path | None = None, timeout: float = START_TIMEOUT) -> IrisLocalCluster:
    """Start the child (HOME and TMPDIR replaced where given, stderr to ``log``) and wait for
    its URL line. Raises ``IrisLocalUnavailable`` (quoting the log) when marin-iris[controller]
    is missing, or the child exits or prints nothing within ``timeout`` seconds."""
    reason = unavailable_reason("an Iris local cluster")
    if reason is not None:
        raise IrisLocalUnavailable(reason)
    log.parent.mkdir(parents=True, exist_ok=True)
    env = child_environment(home=home, tmp=tmp)
    with log.open("w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(workers), str(port)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=stderr, env=env, text=True,
        )
    assert process.stdout is not None
    cluster = IrisLocalCluster("", process, log)
    line = _first_line(process.stdout, timeout)
    if not line.startswith("http://"):
        cluster.stop(timeout=5)
        raise IrisLocalUnavailable(f"the Iris local cluster did not start (see {log}): {cluster.log_tail()}")
    cluster.url = line.strip()
    return cluster


@contextlib.contextmanager
def iris_local_cluster(scratch: Path, *, workers: int = DEFAULT_WORKERS) -> Iterator[str]:
    """Yield the URL of a cluster that writes only under ``scratch`` (``home``, ``tmp``,
    ``iris.log``); stop it at the end of the block."""
    cluster = start(scratch / "iris.log", workers=workers, home=scratch / "home", tmp=scratch / "tmp")
    try:
        yield cluster.url
    finally:
        cluster.stop()


def _first_line(stream: IO[str], timeout: float) -> str:
    with selectors.DefaultSelector() as selector:
        selector.register(stream, selectors.EVENT_READ)
        ready = selector.select(timeout)
    return stream.readline() if ready else ""


# -- the child -----------------------------------------------------------------------------------
def serve(workers: int, port: int) -> None:
    """The child's body (see the module rules)."""
    from iris.cluster.local_cluster import LocalCluster, make_local_cluster_config  # type: ignore[import-untyped]

    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    config = make_local_cluster_config(workers)
    if port:
        config.controller.local.port = port
    cluster = LocalCluster(config)
    try:
        print(cluster.start(), flush=True)
        os.dup2(2, 1)  # nobody reads stdout any more: later prints must not fill the pipe
        threading.Thread(target=_set_at_end_of_input, args=(done,), daemon=True).start()
        done.wait()
    finally:
        cluster.close()


def _set_at_end_of_input(done: threading.Event) -> None:
    sys.stdin.read()
    done.set()


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))
