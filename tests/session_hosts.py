"""Session hosts as real processes, for tests: each runs a ``HostEngine`` on its main thread behind a
pair of pipes, standing in for the actor transport that serves it in a session task.

The driver is deliberately tiny and exists only here: a request is the cloudpickle of ``(call id,
method, args, kwargs)``, a reply that of ``(call id, ok, value or exception)``; every request runs
on its own thread in the host (as an actor server's threads would call the engine), so a test can
``read`` and ``interrupt`` while ``execute`` waits. A host's stdout and stderr (its task log) go
to a file. ``python -m tests.session_hosts REQUEST_FD REPLY_FD HOST`` is the host side.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from itertools import count
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Final

import cloudpickle

from fray_jupyter.session.merge import HostLost
from fray_jupyter.session.outputs import SessionError
from fray_jupyter.session.words import exit_reason
from tests.waiting import until

REPO: Final = Path(__file__).resolve().parents[1]
METHODS: Final = frozenset({"execute", "run", "read", "interrupt", "push", "pull", "status"})
"""The engine's methods a caller may reach (what the actor serves)."""
HANG_GUARD: Final = 120.0
"""Seconds after which a call that never answers fails the test instead of hanging it."""


class HostGone(RuntimeError):
    """The host process ended before answering; ``lost`` says how."""

    def __init__(self, lost: HostLost) -> None:
        super().__init__(f"host {lost.host} lost: {lost.reason}")
        self.lost = lost


class HostProcess:
    """One host process and the calls in flight to it."""

    def __init__(self, host: int, log: Path) -> None:
        self.host = host
        self.log = log
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        with log.open("wb") as sink:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.session_hosts", str(request_read), str(reply_write), str(host)],
                pass_fds=(request_read, reply_write), stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                cwd=REPO, env=env)
        os.close(request_read)
        os.close(reply_write)
        self._requests = Connection(request_write, readable=False)
        self._replies = Connection(reply_read, writable=False)
        self._lock = threading.Lock()
        self._ids = count()
        self._pending: dict[int, Future[Any]] = {}
        self._gone: HostLost | None = None
        self._reader = threading.Thread(target=self._read_replies, daemon=True)
        self._reader.start()

    def _read_replies(self) -> None:
        while True:
            try:
                call_id, ok, value = cloudpickle.loads(self._replies.recv_bytes())
            except (EOFError, OSError):
                break
            with self._lock:
                future = self._pending.pop(call_id)
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        self.process.wait()
        with self._lock:
            self._gone = HostLost(self.host, exit_reason(self.process.returncode))
            orphans, self._pending = list(self._pending.values()), {}
        for future in orphans:
            future.set_exception(HostGone(self._gone))

    def submit(self, method: str, *args: Any, **kwargs: Any) -> Future[Any]:
        """Call ``method`` on the host's engine; the future holds its value or its exception."""
        future: Future[Any] = Future()
        call_id = next(self._ids)
        request = cloudpickle.dumps((call_id, method, args, kwargs))
        with self._lock:
            if self._gone is not None:
                future.set_exception(HostGone(self._gone))
                return future
            self._pending[call_id] = future
            try:
                self._requests.send_bytes(request)
            except OSError:
                pass  # the host is gone: the reader fails the future with how it ended
        return future

    def call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``submit`` and wait for the answer."""
        return self.submit(method, *args, **kwargs).result(timeout=HANG_GUARD)

    def kill(self) -> None:
        """SIGKILL the host, as a preempted or crashed task ends."""
        self.process.kill()
        self._reader.join(HANG_GUARD)

    def stop(self) -> None:
        """Close the requests (the host stops serving and exits); kill a host that does not exit."""
        self._requests.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self._reader.join(HANG_GUARD)


@contextmanager
def hosts(count_: int, log_dir: Path) -> Iterator[list[HostProcess]]:
    """``count_`` host processes, each serving, stopped when the block ends."""
    started = [HostProcess(index, log_dir / f"host-{index}.log") for index in range(count_)]
    try:
        for host in started:
            host.call("status")  # answered only once the engine serves
        yield started
    finally:
        for host in started:
            host.stop()


def pulled(host: HostProcess, name: str) -> object:
    """The value of ``name`` on ``host`` (``pull`` works while a cell runs); None while unbound."""
    try:
        return cloudpickle.loads(host.call("pull", [name])[name])
    except SessionError:
        return None


def on_every(gang: list[HostProcess], method: str, *args: Any, **kwargs: Any) -> list[Future[Any]]:
    """The same call sent to every host at once."""
    return [host.submit(method, *args, **kwargs) for host in gang]


def wait_until(condition: Callable[[], bool], what: str) -> None:
    """Until ``condition`` (a call to a host: hosts have no change feed) holds (``tests/waiting.py``)."""
    until(condition, what, hang_guard=HANG_GUARD)


@contextmanager
def interrupt_button(ready: Callable[[], bool], what: str) -> Iterator[None]:
    """While the body runs a cell on the main thread: once ``ready`` holds (``what``), SIGINT to the main
    thread, as Jupyter's interrupt button reaches a kernel. Meanwhile SIGINT's handler is Python's own
    (``default_int_handler``), the one ipykernel installs while it runs a cell, whatever this test process
    had (a process started in the background, or code an earlier test ran, may have left it ignored)."""
    main = threading.main_thread().ident
    assert main is not None

    def press() -> None:
        wait_until(ready, what)
        signal.pthread_kill(main, signal.SIGINT)

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    presser = threading.Thread(target=press, daemon=True)
    presser.start()
    try:
        yield
    finally:
        presser.join()
        signal.signal(signal.SIGINT, previous)


def _serve(request_fd: int, reply_fd: int, host: int) -> None:
    """The host side: the engine on the main thread, each request answered on its own thread."""
    from fray_jupyter.session.host import HostEngine

    engine = HostEngine(host)
    requests = Connection(request_fd, writable=False)
    replies = Connection(reply_fd, readable=False)
    send = threading.Lock()

    def answer(call_id: int, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        try:
            if method not in METHODS:
                raise AttributeError(f"the engine serves {sorted(METHODS)}, not {method!r}")
            reply = (call_id, True, getattr(engine, method)(*args, **kwargs))
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the caller
            reply = (call_id, False, exc)
        with send:
            replies.send_bytes(cloudpickle.dumps(reply))

    def listen() -> None:
        engine.wait_serving()
        while True:
            try:
                call_id, method, args, kwargs = cloudpickle.loads(requests.recv_bytes())
            except (EOFError, OSError):
                break
            threading.Thread(target=answer, args=(call_id, method, args, kwargs), daemon=True).start()
        engine.shutdown()

    threading.Thread(target=listen, daemon=True).start()
    engine.serve()


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
