"""``actors.server`` and ``actors.handle`` on loopback, in this process, and against Iris's own: a
handle from Iris's ``ActorClient`` calls our server and ours calls Iris's ``ActorServer`` (the same
bytes both ways), ``max_concurrency`` holds, a method's exception comes back with its remote
traceback, a long-running operation is polled to its end, and a dead server fails its caller at
once with Fray's ``ActorUnavailableError``."""

from __future__ import annotations

import pickle
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from fray_jupyter.actors.errors import unavailable_type
from fray_jupyter.actors.handle import ActorHandle
from fray_jupyter.actors.resolver import FixedResolver
from fray_jupyter.actors.server import ActorServer
from fray_jupyter.actors.wire import ActorRefused
from fray_jupyter.client.clusters import marin_unavailable

needs_marin = pytest.mark.skipif(marin_unavailable() is not None, reason=str(marin_unavailable()))
NAME = "/alice/job/ctr-0"


class Counter:
    """An actor that counts, raises, and records how many of its calls overlap."""

    def __init__(self) -> None:
        self.total = 0
        self.active = 0
        self.most = 0
        self._lock = threading.Lock()

    def add(self, k: int = 1) -> int:
        self.total += k
        return self.total

    def boom(self, shard: int) -> None:
        raise KeyError(f"no shard {shard}")

    def hold(self, seconds: float) -> int:
        with self._lock:
            self.active += 1
            self.most = max(self.most, self.active)
        time.sleep(seconds)  # holds the method so that calls allowed to overlap do
        with self._lock:
            self.active -= 1
        return self.most

    def meet(self, barrier: threading.Barrier) -> int:
        return barrier.wait(timeout=60)


def serve(instance: Any, max_concurrency: int) -> tuple[ActorServer, ActorHandle]:
    server = ActorServer(max_concurrency=max_concurrency)
    server.register(NAME, instance)
    server.start()
    return server, ActorHandle(NAME, FixedResolver(server.address))


@pytest.fixture
def counter() -> Iterator[tuple[Counter, ActorHandle]]:
    instance = Counter()
    server, handle = serve(instance, 1)
    yield instance, handle
    server.stop()


def test_remote_submit_and_call_return_the_value(counter: tuple[Counter, ActorHandle]) -> None:
    _, handle = counter
    assert handle.add(2) == 2
    assert handle.add.remote(3).result(timeout=30) == 5
    assert handle.add.submit(k=4).result(timeout=30) == 9


def test_a_method_s_exception_is_raised_with_its_remote_traceback(counter: tuple[Counter, ActorHandle]) -> None:
    _, handle = counter
    with pytest.raises(KeyError, match="no shard 7") as caught:
        handle.boom(7)
    (note,) = caught.value.__notes__
    assert note.startswith(f"Remote traceback (actor {NAME}):") and "in boom" in note
    with pytest.raises(KeyError, match="no shard 8"):
        handle.boom.submit(8).result(timeout=30)
    with pytest.raises(ActorRefused, match="not_found: actor '/alice/job/ctr-0' has no method 'nope'"):
        handle.nope()


def test_max_concurrency_one_runs_calls_one_at_a_time(counter: tuple[Counter, ActorHandle]) -> None:
    instance, handle = counter
    futures = [handle.hold.remote(0.05) for _ in range(4)]
    assert [f.result(timeout=60) for f in futures] == [1, 1, 1, 1]
    assert instance.most == 1


def test_max_concurrency_four_runs_four_calls_at_once() -> None:
    server, handle = serve(Counter(), 4)
    barrier = threading.Barrier(4)  # the same object: the server is in this process
    try:
        server._actors[NAME].methods["meet"] = lambda: barrier.wait(timeout=60)
        futures = [handle.meet.remote() for _ in range(4)]
        assert sorted(f.result(timeout=60) for f in futures) == [0, 1, 2, 3]
    finally:
        server.stop()


def test_a_dead_actor_fails_its_caller_at_once_with_fray_s_error() -> None:
    server, handle = serve(Counter(), 1)
    assert handle.add() == 1
    server.stop()
    with pytest.raises(unavailable_type(), match=f"actor {NAME}: connection refused at {server.address}"):
        handle.add()
    if marin_unavailable() is None:
        from fray.actor import ActorUnavailableError

        assert issubclass(unavailable_type(), ActorUnavailableError)


def test_a_connection_the_server_closed_while_idle_is_not_reused() -> None:
    server, handle = serve(Counter(), 1)
    assert handle.add() == 1
    server.stop()  # closes the handle's kept-alive connection; a new server takes the same port
    again = ActorServer(port=server.port)
    again.register(NAME, Counter())
    again.start()
    try:
        assert handle.add(5) == 5  # sent on a new connection, not lost on the closed one
    finally:
        again.stop()


def test_a_handle_pickles_to_its_name_and_repr_says_where_it_is(counter: tuple[Counter, ActorHandle]) -> None:
    _, handle = counter
    assert "not resolved yet" in repr(handle)
    handle.add()
    assert repr(handle).startswith(f"ActorHandle({NAME!r}, at http://127.0.0.1:")
    copy = pickle.loads(pickle.dumps(handle))  # a kernel-served actor carries its address
    assert copy.add() == 2
    assert handle.__getstate__()["endpoint_name"] == NAME


@needs_marin
def test_iris_s_actor_client_calls_our_server(counter: tuple[Counter, ActorHandle]) -> None:
    from iris.actor.client import ActorClient
    from iris.actor.resolver import FixedResolver as IrisFixed

    _, handle = counter
    theirs = ActorClient(IrisFixed({NAME: handle.connection().where.base}), NAME)
    assert theirs.add(5) == 5  # zstd-compressed request, Iris's client
    with pytest.raises(KeyError, match="no shard 3"):
        theirs.boom(3)
    from iris.rpc import actor_pb2

    assert theirs.get_operation(theirs.start_operation("add", 1)).state == actor_pb2.Operation.SUCCEEDED


@needs_marin
def test_our_handle_calls_iris_s_actor_server() -> None:
    from iris.actor.server import ActorServer as IrisServer

    theirs = IrisServer(host="127.0.0.1", port=0, max_concurrency=2)
    theirs.register(NAME, Counter())
    port = theirs.serve_background()
    try:
        handle = ActorHandle(NAME, FixedResolver(f"http://127.0.0.1:{port}"))
        assert handle.add(2) == 2 and handle.add.submit(1).result(timeout=30) == 3
        with pytest.raises(KeyError, match="no shard 1"):
            handle.boom(1)
        with pytest.raises(ActorRefused, match="not_found"):
            handle.nope()
        elsewhere = ActorHandle("/alice/job/other-0", FixedResolver(f"http://127.0.0.1:{port}"))
        with pytest.raises(unavailable_type(), match="still registered there"):  # Iris answers unavailable
            elsewhere.add()
    finally:
        theirs.stop()
