"""The native gRPC transport (grpcio's asyncio server) on its own port.

Methods are served at their gRPC paths (``/iris.cluster.ControllerService/<Method>``) as raw
bytes, so this module checks ``authorization: Bearer <token>`` metadata before parsing and
answers unparseable bytes with INVALID_ARGUMENT (grpcio's own deserializer would say
INTERNAL). Messages up to ``MAX_MESSAGE_BYTES`` are accepted, so an oversized bundle gets the
controller's clear INVALID_ARGUMENT rather than a transport error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

import grpc
from grpc import aio

from fray_jupyter.controller.rpc import METHODS_BY_PATH, Invoke, Method, RpcError, check_bearer, decode

MAX_MESSAGE_BYTES: Final[int] = 32 * 1024 * 1024


class _Handlers(grpc.GenericRpcHandler):
    def __init__(self, invoke: Invoke, token: str) -> None:
        self._invoke = invoke
        self._token = token

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[bytes, bytes] | None:
        method = METHODS_BY_PATH.get(handler_call_details.method)
        if method is None:
            return None
        return grpc.unary_unary_rpc_method_handler(self._unary(method))

    def _unary(self, method: Method) -> Callable[[bytes, aio.ServicerContext[bytes, bytes]], Awaitable[bytes]]:
        async def handle(body: bytes, context: aio.ServicerContext[bytes, bytes]) -> bytes:
            metadata = {key.lower(): value for key, value in context.invocation_metadata() or ()}
            try:
                authorization = metadata.get("authorization")
                check_bearer(authorization if isinstance(authorization, str) else None, self._token)
                return self._invoke(method, decode(method, "proto", body)).SerializeToString()
            except RpcError as error:
                await context.abort(error.code.grpc_code, error.message)
                raise AssertionError("unreachable") from None

        return handle


def create_server(invoke: Invoke, token: str, host: str, port: int) -> tuple[aio.Server, int]:
    """A not-yet-started gRPC server bound to ``host:port`` (0 picks a free port); returns it
    with the bound port. Call from inside the running event loop."""
    server = aio.server(options=[
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.so_reuseport", 0),
    ])
    server.add_generic_rpc_handlers((_Handlers(invoke, token),))
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind the gRPC server to {host}:{port}")
    return server, bound
