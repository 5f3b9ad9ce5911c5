"""The caller side: ``ActorHandle`` (Fray's handle: ``handle.method.remote(...)`` → a future,
``handle.method.submit(...)`` → a long-running operation's future, ``handle.method(...)`` → the value).

Rules:

* A handle pickles to ``{"endpoint_name": name}`` (Marin's ``IrisActorHandle`` state: either side
  unpickles the other's), plus the address for an actor the kernel serves itself, which no registry
  knows; unpickled in an Iris task it resolves through that task's controller (``resolver``).
* A handle resolves its name once and keeps its connections (kept-alive HTTP/1.1, one per call in
  flight, reused by the next call): a call costs one round trip, no lookup and no new connection.
  A method's exception is raised in the caller as the remote exception, with the remote traceback
  as a note (``wire``).
* A dead actor fails its callers at once with ``ActorUnavailable``: a refused connection or an
  ``unavailable`` answer makes the handle look the name up once more and send the call again only
  to a new address (the actor's task restarted elsewhere); the same address or no registration is
  the error, naming the actor, where it was and its task. A connection lost mid-call is the error at
  once (the method may have run: nothing is sent twice). A call through a controller's proxy that
  it refuses as ``unauthenticated`` (before anything ran) renews the credentials and is sent once
  more (``resolver.Resolved.renew``).
* ``submit`` starts the call with ``StartOperation`` and polls ``GetOperation`` (5 ms, doubling to
  0.25 s: a caller learns an operation ended within a quarter second, at four small calls a
  second while it runs); ``result(timeout)`` past its timeout cancels the operation and raises
  ``TimeoutError``.
"""

from __future__ import annotations

import functools
import http.client
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Final, TypeVar
from urllib.parse import urlsplit

import httpx
from google.protobuf.message import Message

from fray_jupyter.actors import wire
from fray_jupyter.actors.errors import actor_unavailable
from fray_jupyter.actors.resolver import FixedResolver, Resolved, Resolver, task_resolver
from fray_jupyter.iris.proto import actor_pb2
from fray_jupyter.iris.wire import CONNECT_PROTOCOL_HEADER, PROTO_CONTENT_TYPE

A = actor_pb2
M = TypeVar("M", bound=Message)
POLL_FIRST: Final[float] = 0.005
POLL_MAX: Final[float] = 0.25
CONNECT_TIMEOUT: Final[float] = 5.0
KEEPALIVE_S: Final[float] = 4.0
"""How long an idle connection is kept for reuse (under the 5 s after which uvicorn closes it)."""
MAX_IDLE: Final[int] = 16
"""Idle connections kept per actor address."""
SMALL_BODY: Final[int] = 64 * 1024
"""A request body up to this size is joined and sent with its headers; a larger one piece by piece."""


class _Lost(Exception):
    """The connection failed: ``sent`` tells whether the request may have reached the actor."""

    def __init__(self, detail: str, *, sent: bool) -> None:
        super().__init__(detail)
        self.sent = sent


class Connection:
    """Connect unary calls to one actor base URL: thread-safe, over kept-alive HTTP/1.1 connections
    (the standard library's ``http.client``, ``TCP_NODELAY``), one per call in flight, reused after.

    A connection idle for ``KEEPALIVE_S`` or closed by the server while idle is not reused (as
    httpcore's pool does): Iris's actor server closes idle ones after uvicorn's 5 s."""

    def __init__(self, where: Resolved) -> None:
        self.where = where
        url = urlsplit(where.base)
        self._https = url.scheme == "https"
        self._host = url.hostname or "127.0.0.1"
        self._port = url.port or (443 if self._https else 80)
        self._prefix = url.path.rstrip("/")
        self._headers = {"content-type": PROTO_CONTENT_TYPE, **CONNECT_PROTOCOL_HEADER, **where.headers}
        self._idle: list[tuple[http.client.HTTPConnection, float]] = []
        self._lock = threading.Lock()
        self._closed = False

    def _open(self) -> http.client.HTTPConnection:
        if self._https:
            conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                self._host, self._port, timeout=CONNECT_TIMEOUT, context=_tls())
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=CONNECT_TIMEOUT)
        try:
            conn.connect()
        except OSError as exc:
            conn.close()
            what = "connection refused at" if isinstance(exc, ConnectionRefusedError) else "cannot connect to"
            raise _Lost(f"{what} {self.where.base} ({exc})", sent=False) from None
        return conn

    def _checkout(self) -> http.client.HTTPConnection:
        with self._lock:
            while self._idle:
                conn, since = self._idle.pop()
                if time.monotonic() - since < KEEPALIVE_S and conn.sock is not None and not _peer_closed(conn.sock):
                    return conn
                conn.close()
        return self._open()

    def _checkin(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if self._closed or conn.sock is None or len(self._idle) >= MAX_IDLE:
                conn.close()
            else:
                self._idle.append((conn, time.monotonic()))

    def call(self, method: str, request: Message | tuple[bytes, ...], response_type: type[M],
             timeout: float | None) -> M:
        """One RPC (``request``: a message, or its bytes in pieces sent one after another);
        ``_Lost`` when the connection fails, ``wire.ActorRefused`` for a Connect error."""
        pieces = (request.SerializeToString(),) if isinstance(request, Message) else request
        size = sum(len(piece) for piece in pieces)
        # a small body goes in one send with the headers (http.client joins bytes to them)
        body: bytes | tuple[bytes, ...] = b"".join(pieces) if size <= SMALL_BODY else pieces
        credentials = self.where.auth() if self.where.auth is not None else {}
        headers = {**self._headers, **credentials, "content-length": str(size)}
        conn = self._checkout()
        try:
            assert conn.sock is not None
            conn.sock.settimeout(timeout)
            conn.request("POST", self._prefix + wire.path(method), body=body, headers=headers)
            response = conn.getresponse()
            status, content = response.status, response.read()
        except TimeoutError:
            conn.close()
            raise TimeoutError(f"no answer from {self.where.base} within {timeout:g} s") from None
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise _Lost(f"connection to {self.where.base} lost mid-call ({exc or type(exc).__name__})", sent=True) from None
        self._checkin(conn)
        if status == 200:
            return response_type.FromString(content)
        try:
            payload = json.loads(content)
            code, message = str(payload["code"]), str(payload.get("message", ""))
        except (ValueError, KeyError, TypeError):
            code, message = "unavailable" if status in (502, 503, 504) else "unknown", \
                f"HTTP {status} {content[:200].decode(errors='replace')}"
        raise wire.ActorRefused(code, message)

    def close(self) -> None:
        """Close the idle connections (one in use closes when its call ends)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()


def _peer_closed(sock: socket.socket) -> bool:
    """Whether an idle connection's server has closed it (or sent something unasked: unusable too)."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


@functools.cache
def _tls() -> ssl.SSLContext:
    """The TLS settings of fray-jupyter's other clients (httpx's: its CA bundle, verified)."""
    return httpx.create_ssl_context(verify=True, trust_env=False)


class ActorHandle:
    """Fray's actor handle for the endpoint ``name`` (see the module rules)."""

    def __init__(self, name: str, resolver: Resolver | None = None, *, where: Resolved | None = None) -> None:
        self._name = name
        self._resolver = resolver
        self._where = where
        self._connection: Connection | None = None
        self._lock = threading.Lock()

    @property
    def endpoint_name(self) -> str:
        """The actor's endpoint name (``/<user>/<job>/<name>-<index>`` for a group member)."""
        return self._name

    def __getstate__(self) -> dict[str, str]:
        state = {"endpoint_name": self._name}
        if isinstance(self._resolver, FixedResolver):
            state["address"] = self._resolver.address
        return state

    def __setstate__(self, state: dict[str, str]) -> None:
        address = state.get("address")
        self.__init__(state["endpoint_name"], FixedResolver(address) if address else None)  # type: ignore[misc]

    def __repr__(self) -> str:
        where = self._where.base if self._where is not None else None
        state = f"at {where}" + (f", task {self._where.task_id}" if self._where and self._where.task_id else "") \
            if where else "not resolved yet"
        return f"ActorHandle({self._name!r}, {state})"

    def __getattr__(self, method: str) -> ActorMethod:
        if method.startswith("_"):
            raise AttributeError(method)
        return ActorMethod(self, method)

    # -- plumbing ------------------------------------------------------------------------------
    def resolver(self) -> Resolver:
        """The handle's resolver (inside a task, for an unpickled handle: the task's controller)."""
        if self._resolver is None:
            self._resolver = task_resolver()
        return self._resolver

    def connection(self) -> Connection:
        """The connection to the actor, resolving its name first if needed."""
        with self._lock:
            if self._connection is None:
                if self._where is None:
                    self._where = self._lookup()
                self._connection = Connection(self._where)
            return self._connection

    def _lookup(self) -> Resolved:
        where = self.resolver().resolve(self._name)
        if where is None:
            raise actor_unavailable(self._name, f"no endpoint by this name in {self.resolver().describe()} "
                                                "(its task has not registered yet, or has ended)")
        return where

    def _replace(self, failed: Connection, why: str, *, renewed: bool = False) -> Connection:
        """After ``failed`` could not reach the actor: a connection to its new address, or
        ``ActorUnavailable`` when it has none. With ``renewed`` (the credentials were renewed) the
        same address is taken again: a named cluster resolved again may be at another URL, or not."""
        with self._lock:
            if self._connection is not failed and self._connection is not None:
                return self._connection
            old = failed.where
            task = f" (task {old.task_id})" if old.task_id else ""
            where = self.resolver().resolve(self._name)
            if where is None or (where.base == old.base and not renewed):
                state = "no longer registered" if where is None else "still registered there"
                raise actor_unavailable(self._name, f"{why}; its endpoint {old.base}{task} is {state}: the actor "
                                                    "is gone (see its job's status and logs)")
            failed.close()
            self._where, self._connection = where, Connection(where)
            return self._connection

    def rpc(self, method: str, request: Message | tuple[bytes, ...], response_type: type[M], timeout: float | None = None,
            unwrap: Callable[[M], Any] = lambda answer: answer) -> Any:
        """One RPC to the actor under the module's failure rules; ``unwrap(answer)`` (which may
        raise a refusal carried in the answer) is its result."""
        connection = self.connection()
        for attempt in range(2):
            try:
                return unwrap(connection.call(method, request, response_type, timeout))
            except _Lost as lost:
                if lost.sent:
                    raise actor_unavailable(self._name, str(lost)) from None
                if attempt:
                    raise actor_unavailable(self._name, str(lost)) from None
                connection = self._replace(connection, str(lost))
            except wire.ActorRefused as refused:
                renew = connection.where.renew
                if refused.code == "unauthenticated" and renew is not None and not attempt:
                    renew()  # the proxy refused the credentials before the call ran: renew them, send it again
                    connection = self._replace(connection, f"{connection.where.base} answered {refused}", renewed=True)
                    continue
                if refused.code != "unavailable":
                    raise
                if attempt:
                    raise actor_unavailable(self._name, str(refused)) from None
                connection = self._replace(connection, f"{connection.where.base} answered {refused}")
        raise AssertionError("unreachable")

    def call(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], timeout: float | None = None) -> Any:
        """``method(*args, **kwargs)`` on the actor, blocking: its value, or its exception raised."""
        return self.call_pickled(method, wire.pickle_arguments(args, kwargs), timeout)

    def call_pickled(self, method: str, arguments: wire.Arguments, timeout: float | None = None) -> Any:
        """``call`` with arguments pickled already (``wire.pickle_arguments``), so the same bytes go
        to many actors without pickling or copying them again."""
        request = wire.call_body(self._name, method, arguments)
        return self.rpc("Call", request, A.ActorResponse, timeout, unwrap=wire.value_of)


class ActorFuture:
    """A call running in the background (``.remote()``): ``result(timeout)`` waits for it."""

    def __init__(self, run: Callable[[], Any]) -> None:
        self._future: Future[Any] = Future()

        def work() -> None:
            try:
                self._future.set_result(run())
            except BaseException as exc:  # noqa: BLE001 - the caller gets it from result()
                self._future.set_exception(exc)

        threading.Thread(target=work, name="actor-call", daemon=True).start()

    def result(self, timeout: float | None = None) -> Any:
        """The value, or the call's exception raised; ``TimeoutError`` after ``timeout`` seconds."""
        return self._future.result(timeout)

    def done(self) -> bool:
        """Whether the call has ended."""
        return self._future.done()


class OperationFuture:
    """A long-running call (``.submit()``), polled until it ends (see the module rules)."""

    def __init__(self, handle: ActorHandle, operation_id: str) -> None:
        self.handle = handle
        self.operation_id = operation_id

    def result(self, timeout: float | None = None) -> Any:
        """The value, or the call's exception raised; past ``timeout`` the operation is cancelled
        and ``TimeoutError`` raised."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = POLL_FIRST
        ask = A.OperationId(operation_id=self.operation_id)
        while True:
            try:
                op: actor_pb2.Operation = self.handle.rpc("GetOperation", ask, A.Operation)
            except wire.ActorRefused as refused:
                if refused.code == "not_found":
                    raise actor_unavailable(self.handle.endpoint_name,
                                            f"operation {self.operation_id} is lost (the actor restarted)") from None
                raise
            if op.state == A.Operation.SUCCEEDED:
                return wire.loads(op.serialized_result)
            if op.state == A.Operation.FAILED:
                return wire.raise_error(op.error)
            if op.state == A.Operation.CANCELLED:
                raise actor_unavailable(self.handle.endpoint_name, f"operation {self.operation_id} was cancelled")
            if deadline is not None and time.monotonic() + delay > deadline:
                self.handle.rpc("CancelOperation", ask, A.Operation)
                raise TimeoutError(f"operation {self.operation_id} on {self.handle.endpoint_name} not done "
                                   f"after {timeout:g} s; cancelled")
            time.sleep(delay)
            delay = min(delay * 2, POLL_MAX)


class ActorMethod:
    """One method of an actor: ``remote``, ``submit`` or call it."""

    def __init__(self, handle: ActorHandle, method: str) -> None:
        self._handle = handle
        self._method = method

    def remote(self, *args: Any, **kwargs: Any) -> ActorFuture:
        """Call in the background (one ``Call`` RPC); the future of its value."""
        return ActorFuture(lambda: self._handle.call(self._method, args, kwargs))

    def submit(self, *args: Any, **kwargs: Any) -> OperationFuture:
        """Start as a long-running operation (``StartOperation``); the future polls it."""
        request = wire.call_body(self._handle.endpoint_name, self._method, wire.pickle_arguments(args, kwargs))
        op: actor_pb2.Operation = self._handle.rpc("StartOperation", request, A.Operation)
        return OperationFuture(self._handle, op.operation_id)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call and wait: the value, or the remote exception raised."""
        return self._handle.call(self._method, args, kwargs)
