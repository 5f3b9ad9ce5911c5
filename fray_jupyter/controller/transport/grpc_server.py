"""The native gRPC transport: grpcio's asyncio server on its own thread, port and event loop.

Methods are served at their gRPC paths (``/iris.cluster.ControllerService/<Method>``,
``/finelog.logging.LogService/FetchLogs``) as raw bytes, so this module lets the caller in
(``rpc.Authenticator``: ``authorization: Bearer <token>`` metadata, or a tokenless loopback
caller of the controller's own OS user, found from ``context.peer()``) before parsing and
answers unparseable bytes with INVALID_ARGUMENT (grpcio's own deserializer would say
INTERNAL). Iris RPCs the controller cannot serve answer UNIMPLEMENTED with one line saying why. Messages up to ``MAX_MESSAGE_BYTES`` are accepted, so an oversized bundle gets the
controller's clear INVALID_ARGUMENT rather than a transport error.

Threading rule: the transport (accepting calls, the token check, parsing, serializing) runs on
its own thread and event loop; only the service core call (``invoke``) runs on the
controller's loop, handed over with ``call_soon_threadsafe``, so the core and the engine stay
single-threaded. Why: grpcio's aio server keeps one "request call" outstanding and re-arms it
only after its loop has run the accepted call's callbacks (about three loop iterations per
call). On the controller's loop that paced gRPC accepts by the engine's work (each iteration
that spawns or reaps task processes takes milliseconds): 1,000 concurrent LaunchJob calls of
jobs that run at once measured about 200-400/s. On its own loop accepts keep up, and the
calls waiting for the core run together in one iteration of the controller's loop, as
Connect's requests on 64 connections do.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Final

import grpc
from google.protobuf.message import Message
from grpc import aio

from fray_jupyter.controller.api.methods import METHODS_BY_PATH, UNSUPPORTED, Method, unimplemented
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.runtime.peer import parse_grpc_peer
from fray_jupyter.controller.transport.rpc import Authenticator, Invoke, decode

MAX_MESSAGE_BYTES: Final[int] = 32 * 1024 * 1024
THREAD_NAME: Final[str] = "fray-grpc"
_LOG = logging.getLogger(__name__)


class _Handlers(grpc.GenericRpcHandler):
    """Serves ``METHODS`` on the transport's loop; ``call_core`` runs ``invoke`` on the core loop.
    ``port`` is the port the server listens on (the local end of every call)."""

    def __init__(self, call_core: Callable[[Method, Message], Awaitable[Message]], auth: Authenticator,
                 port: Callable[[], int]) -> None:
        self._call_core = call_core
        self._auth = auth
        self._port = port

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[bytes, bytes] | None:
        path = handler_call_details.method
        method = METHODS_BY_PATH.get(path)
        if method is None:
            if path not in UNSUPPORTED:
                return None
            return grpc.unary_unary_rpc_method_handler(self._refuse(path))
        return grpc.unary_unary_rpc_method_handler(self._unary(method))

    @staticmethod
    def _refuse(path: str) -> Callable[[bytes, aio.ServicerContext[bytes, bytes]], Awaitable[bytes]]:
        async def handle(body: bytes, context: aio.ServicerContext[bytes, bytes]) -> bytes:
            error = unimplemented(path)
            await context.abort(error.code.grpc_code, error.message)
            raise AssertionError("unreachable")

        return handle

    def _unary(self, method: Method) -> Callable[[bytes, aio.ServicerContext[bytes, bytes]], Awaitable[bytes]]:
        async def handle(body: bytes, context: aio.ServicerContext[bytes, bytes]) -> bytes:
            metadata = {key.lower(): value for key, value in context.invocation_metadata() or ()}
            try:
                authorization = metadata.get("authorization")
                self._auth.check(authorization if isinstance(authorization, str) else None,
                                 parse_grpc_peer(context.peer() or ""), self._port())
                response = await self._call_core(method, decode(method, "proto", body))
                return response.SerializeToString()
            except RpcError as error:
                await context.abort(error.code.grpc_code, error.message)
                raise AssertionError("unreachable") from None

        return handle


class GrpcServer:
    """The gRPC transport for ``invoke`` (called on the loop that ran ``start``), letting in
    the callers ``auth`` accepts (a bare token means ``Authenticator(token)``).

    ``start`` binds and serves on a new thread; ``stop`` ends the calls in flight (after a
    grace period) and joins the thread. Both are awaited on the controller's loop."""

    def __init__(self, invoke: Invoke, auth: Authenticator | str) -> None:
        self._invoke = invoke
        self._auth = auth if isinstance(auth, Authenticator) else Authenticator(auth)
        self._port = 0
        self._core: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_requested: asyncio.Event | None = None
        self._grace: float | None = None
        self._thread: threading.Thread | None = None
        self._ended: concurrent.futures.Future[None] = concurrent.futures.Future()

    async def start(self, host: str, port: int) -> int:
        """Bind ``host:port`` (0 picks a free port) and serve; returns the bound port. Raises
        ``OSError`` when the address cannot be bound."""
        self._core = asyncio.get_running_loop()
        started: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, args=(host, port, started), name=THREAD_NAME, daemon=True)
        self._thread.start()
        return await asyncio.wrap_future(started)

    async def stop(self, grace: float | None) -> None:
        """Stop accepting calls, cancel those still running after ``grace`` seconds (None: at
        once), and wait for the thread to end."""
        if self._loop is not None and self._stop_requested is not None and not self._ended.done():
            self._grace = grace
            with contextlib.suppress(RuntimeError):  # its loop closed meanwhile: the thread is ending
                self._loop.call_soon_threadsafe(self._stop_requested.set)
            await asyncio.wrap_future(self._ended)
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)

    @property
    def running(self) -> bool:
        """Whether the transport's thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    # -- the transport's thread -------------------------------------------------------------------
    def _run(self, host: str, port: int, started: concurrent.futures.Future[int]) -> None:
        failure: BaseException | None = None
        try:
            asyncio.run(self._serve(host, port, started))
        except BaseException as error:  # noqa: BLE001 - reported to whoever waits on start
            failure = error
        self._ended.set_result(None)  # before ``start`` returns or raises, so ``stop`` sees it
        if not started.done():
            started.set_exception(failure or RuntimeError("the gRPC server ended before it started"))
        elif failure is not None:
            _LOG.error("the gRPC server failed", exc_info=failure)

    async def _serve(self, host: str, port: int, started: concurrent.futures.Future[int]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop_requested = asyncio.Event()
        server = aio.server(options=[
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.so_reuseport", 0),
        ])
        server.add_generic_rpc_handlers((_Handlers(self._call_core, self._auth, lambda: self._port),))
        try:  # grpcio raises RuntimeError for a taken port (older versions returned 0)
            bound = server.add_insecure_port(f"{host}:{port}")
        except RuntimeError:
            bound = 0
        if bound == 0:
            raise OSError(f"cannot bind the gRPC server to {host}:{port}: address in use or unavailable")
        self._port = bound
        await server.start()
        started.set_result(bound)
        await self._stop_requested.wait()
        await server.stop(self._grace)

    def _call_core(self, method: Method, request: Message) -> Awaitable[Message]:
        """Run ``invoke(method, request)`` on the controller's loop; awaitable on this one."""
        answer: concurrent.futures.Future[Message] = concurrent.futures.Future()

        def run() -> None:
            if not answer.set_running_or_notify_cancel():
                return
            try:
                result = self._invoke(method, request)
            except BaseException as error:  # noqa: BLE001 - handed to the waiting call
                answer.set_exception(error)
                return
            if not inspect.isawaitable(result):
                answer.set_result(result)
                return
            asyncio.ensure_future(result).add_done_callback(partial(_settle, answer))  # a slow verb

        assert self._core is not None
        try:
            self._core.call_soon_threadsafe(run)
        except RuntimeError:  # the controller's loop is closed: it is shutting down
            answer.set_exception(RpcError(Code.UNAVAILABLE, "the controller is stopping"))
        return asyncio.wrap_future(answer)


def _settle(answer: concurrent.futures.Future[Message], done: asyncio.Future[Message]) -> None:
    """Hand a slow verb's outcome (run on the core loop) to the call waiting for it."""
    if done.cancelled():
        answer.set_exception(RpcError(Code.UNAVAILABLE, "the controller is stopping"))
    elif (error := done.exception()) is not None:
        answer.set_exception(error)
    else:
        answer.set_result(done.result())
