"""``ActorServer``: serves objects' public methods over Iris's actor protocol (``wire``), as Iris's
``ActorServer`` does, from a background thread of the process that owns them.

Rules:

* Methods run in a pool of ``max_concurrency`` threads (Fray's ``ActorConfig.max_concurrency``,
  default 1): the next call waits for a free thread, so with 1 the actor's calls run one at a
  time, in the order they arrived. Health checks and listings never wait for the pool. Each runs
  in a copy of the context variables of the thread that called ``start`` (so what the task set
  there, such as Fray's current client, holds inside the actor's methods).
* ``register(name, instance)`` serves the instance's public callables (not ``_``-prefixed, not
  ``web_application``) under ``name``; a call naming no actor goes to the first one registered. An
  unknown actor name is ``unavailable`` (a caller may hold the address of a previous attempt), an
  unknown method ``not_found``.
* ``StartOperation`` runs the method in the same pool and answers at once; ``GetOperation`` reports
  it, and forgets it once it reported it ended; ``CancelOperation`` only marks it cancelled.
* An instance with a ``web_application`` (an ASGI app, as Zephyr's coordinator has for its
  dashboard) is served on every other path of the same port.
* It binds ``host`` (default loopback) and a free port unless told one. It has no authentication,
  and unpickles what it receives: only trusted peers may reach it (see ``host.bind_address``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final

import cloudpickle
import uvicorn
from google.protobuf.message import DecodeError, Message

from fray_jupyter.actors import wire
from fray_jupyter.iris.proto import actor_pb2
from fray_jupyter.iris.wire import CONNECT_HTTP_STATUS, JSON_CONTENT_TYPE, PROTO_CONTENT_TYPE

A = actor_pb2
START_TIMEOUT: Final[float] = 10.0
"""Seconds ``start`` waits for the listener to be up."""
MAX_REQUEST_BYTES: Final[int] = 256 * 1024 * 1024
"""The largest request body (compressed or not) a server reads."""

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class Refused(Exception):
    """A call refused with a Connect error status (``code``, ``message``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class _Actor:
    name: str
    actor_id: str
    instance: Any
    methods: dict[str, Callable[..., Any]]
    registered_ms: int = field(default_factory=lambda: int(time.time() * 1000))


@dataclass
class _Operation:
    operation_id: str
    cancelled: bool = False
    done: bool = False
    result: bytes | None = None
    error: actor_pb2.ActorError | None = None

    def proto(self) -> actor_pb2.Operation:
        state = (A.Operation.RUNNING if not self.done else A.Operation.CANCELLED if self.cancelled
                 else A.Operation.FAILED if self.error is not None else A.Operation.SUCCEEDED)
        op = A.Operation(operation_id=self.operation_id, state=state)
        if self.done and self.result is not None:
            op.serialized_result = self.result
        if self.error is not None:
            op.error.CopyFrom(self.error)
        return op


def public_methods(instance: Any) -> dict[str, Callable[..., Any]]:
    """What an actor serves: its public callables, ``web_application`` left out."""
    return {name: getattr(instance, name) for name in dir(instance)
            if not name.startswith("_") and name != "web_application" and callable(getattr(instance, name))}


class ActorServer:
    """Serves registered actors on ``host:port`` (see the module rules)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, max_concurrency: int = 1) -> None:
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        self.host = host
        self.port = port
        self.max_concurrency = max_concurrency
        self._actors: dict[str, _Actor] = {}
        self._web: ASGIApp | None = None
        self._operations: dict[str, _Operation] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=max_concurrency, thread_name_prefix="actor-method")
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._context = contextvars.copy_context()

    @property
    def address(self) -> str:
        """``http://host:port`` (after ``start``)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def register(self, name: str, instance: Any) -> str:
        """Serve ``instance`` as ``name``; its actor id. ``ValueError`` for a name served already."""
        if name in self._actors:
            raise ValueError(f"actor {name!r} is already served here")
        web = getattr(type(instance), "web_application", None)
        if web is not None:
            if self._server is not None:
                raise RuntimeError("register an actor with a web_application before the server starts")
            self._web = instance.web_application
        actor_id = f"{name}-{uuid.uuid4().hex[:8]}"
        self._actors[name] = _Actor(name, actor_id, instance, public_methods(instance))
        return actor_id

    def start(self) -> int:
        """Listen in a background thread; the port bound."""
        self._context = contextvars.copy_context()
        listener = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((self.host, self.port))
        except OSError:
            listener.close()
            raise
        self.port = listener.getsockname()[1]
        config = uvicorn.Config(self._app, host=self.host, port=self.port, log_level="error", log_config=None,
                                lifespan="off", interface="asgi3", timeout_keep_alive=120,
                                access_log=False)
        server = self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]},
                                        name=f"actor-server-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                listener.close()
                raise RuntimeError(f"the actor server did not start listening on {self.address}")
            time.sleep(0.005)
        return self.port

    def stop(self) -> None:
        """Stop listening (calls in flight are not waited for) and release the method threads."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- the protocol --------------------------------------------------------------------------
    def _find(self, call: actor_pb2.ActorCall) -> tuple[_Actor, Callable[..., Any] | None]:
        name = call.actor_name or next(iter(self._actors), "")
        actor = self._actors.get(name)
        if actor is None:
            raise Refused("unavailable", f"actor {name!r} is not served here")
        return actor, actor.methods.get(call.method_name)

    def _invoke(self, actor: _Actor, method: Callable[..., Any], call: actor_pb2.ActorCall) -> bytes:
        args, kwargs = wire.decode_call(call)
        return bytes(cloudpickle.dumps(self._context.copy().run(method, *args, **kwargs)))

    async def _call(self, call: actor_pb2.ActorCall) -> actor_pb2.ActorResponse:
        try:
            actor, method = self._find(call)
        except Refused as refused:  # a Call answers its refusals in the body, as Iris's does
            return A.ActorResponse(error=wire.refusal(refused.code, str(refused)))
        if method is None:
            return A.ActorResponse(error=wire.refusal("not_found", f"actor {actor.name!r} has no method {call.method_name!r}"))
        loop = asyncio.get_running_loop()
        try:
            value = await loop.run_in_executor(self._pool, functools.partial(self._invoke, actor, method, call))
        except Exception as exc:  # noqa: BLE001 - the method's exception is the caller's answer
            return A.ActorResponse(error=wire.error_of(exc, actor.name))
        return A.ActorResponse(serialized_value=value)

    def _run(self, op: _Operation, actor: _Actor, method: Callable[..., Any], call: actor_pb2.ActorCall) -> None:
        try:
            op.result = self._invoke(actor, method, call)
        except Exception as exc:  # noqa: BLE001 - the method's exception is the operation's answer
            op.error = wire.error_of(exc, actor.name)
        finally:
            op.done = True

    async def _start_operation(self, call: actor_pb2.ActorCall) -> actor_pb2.Operation:
        actor, method = self._find(call)
        if method is None:
            raise Refused("not_found", f"actor {actor.name!r} has no method {call.method_name!r}")
        op = _Operation(uuid.uuid4().hex)
        with self._lock:
            self._operations[op.operation_id] = op
        self._pool.submit(self._run, op, actor, method, call)
        return op.proto()

    def _operation(self, request: actor_pb2.OperationId) -> _Operation:
        with self._lock:
            op = self._operations.get(request.operation_id)
        if op is None:
            raise Refused("not_found", f"operation {request.operation_id!r} is not known here")
        return op

    async def _get_operation(self, request: actor_pb2.OperationId) -> actor_pb2.Operation:
        op = self._operation(request)
        answer = op.proto()
        if op.done:
            with self._lock:
                self._operations.pop(op.operation_id, None)
        return answer

    async def _cancel_operation(self, request: actor_pb2.OperationId) -> actor_pb2.Operation:
        op = self._operation(request)
        op.cancelled = True
        return op.proto()

    async def _health(self, _: actor_pb2.Empty) -> actor_pb2.HealthResponse:
        return A.HealthResponse(healthy=True)

    async def _list_methods(self, request: actor_pb2.ListMethodsRequest) -> actor_pb2.ListMethodsResponse:
        actor = self._actors.get(request.actor_name or next(iter(self._actors), ""))
        answer = A.ListMethodsResponse()
        for name, method in (actor.methods.items() if actor else ()):
            try:
                signature = str(inspect.signature(method))
            except (TypeError, ValueError):
                signature = "()"
            answer.methods.add(name=name, signature=signature, docstring=inspect.getdoc(method) or "")
        return answer

    async def _list_actors(self, _: actor_pb2.ListActorsRequest) -> actor_pb2.ListActorsResponse:
        return A.ListActorsResponse(actors=[A.ActorInfo(name=a.name, actor_id=a.actor_id, registered_at_ms=a.registered_ms)
                                            for a in self._actors.values()])

    def _routes(self) -> dict[str, tuple[type[Message], Callable[[Any], Awaitable[Message]]]]:
        return {"Call": (A.ActorCall, self._call), "HealthCheck": (A.Empty, self._health),
                "ListMethods": (A.ListMethodsRequest, self._list_methods),
                "ListActors": (A.ListActorsRequest, self._list_actors),
                "StartOperation": (A.ActorCall, self._start_operation),
                "GetOperation": (A.OperationId, self._get_operation),
                "CancelOperation": (A.OperationId, self._cancel_operation)}

    async def _app(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        prefix = wire.path("")
        if not scope["path"].startswith(prefix):
            if self._web is not None:
                return await self._web(scope, receive, send)
            return await _answer(send, 404, JSON_CONTENT_TYPE, wire.error_body("not_found", f"no route {scope['path']}"))
        route = self._routes().get(scope["path"][len(prefix):])
        if route is None or scope["method"] != "POST":
            return await _answer(send, 404, JSON_CONTENT_TYPE,
                                 wire.error_body("unimplemented", f"{scope['method']} {scope['path']} is not an actor RPC"))
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            body = wire.decompress(await _body(receive), headers.get("content-encoding", ""))
            request = route[0].FromString(body)
            answer = await route[1](request)
        except Refused as refused:
            return await _answer(send, CONNECT_HTTP_STATUS.get(refused.code, 500), JSON_CONTENT_TYPE,
                                 wire.error_body(refused.code, str(refused)))
        except (ValueError, DecodeError) as exc:
            return await _answer(send, 400, JSON_CONTENT_TYPE, wire.error_body("invalid_argument", str(exc)))
        await _answer(send, 200, PROTO_CONTENT_TYPE, answer.SerializeToString())


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise ValueError(f"a request body over {MAX_REQUEST_BYTES} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _answer(send: Send, status: int, content_type: str, body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
