"""The Connect transport: unary Connect over HTTP/1.1 as a small ASGI application.

``POST /iris.cluster.ControllerService/<Method>`` with ``Content-Type: application/proto``
(binary protobuf) or ``application/json`` (protobuf JSON mapping: camelCase names, enums by
name, 64-bit integers as strings — what a real Iris controller sends); finelog's
``FetchLogs`` is also served at the path a real controller proxies it under (see ``methods``). A
request body may be ``Content-Encoding: gzip`` or ``zstd`` (finelog's client always sends
zstd). Every RPC passes ``rpc.Authenticator`` (the bearer token, or a tokenless loopback
caller of the controller's own OS user) before the body is read. A body over
``MAX_REQUEST_BYTES`` (declared, received, or once decompressed) is ``resource_exhausted``. Errors follow the Connect protocol: an HTTP status and a JSON body
``{"code": "<code>", "message": "..."}`` (401 ``unauthenticated``, 400 ``invalid_argument``,
404 ``not_found``, 409 ``already_exists``, 501 ``unimplemented`` with one line saying why for
Iris RPCs this controller cannot serve, ...). ``GET /health`` answers ``{"status": "ok", "instance":
"<id>"}`` without a token, so a client can tell this live controller from a stale address (the
instance id is also in the runtime file). ``POST /fray/admin/<verb>`` (``status``, ``gc``; checked
like an RPC) answers the controller's own JSON for ``fray-jupyter controller status|gc``. A
telemetry batch posted to the log server's path (rigging's exporter, in Zephyr's coordinator) is
refused at once with a 404 saying it is not kept (``TELEMETRY_REFUSAL``).

Why not connect-python's ``ConnectASGIApplication``: it decodes the body before any
interceptor runs, so garbage bytes come back as ``unknown``/500 rather than
``invalid_argument``/400 and an unauthenticated caller learns about parse errors before being
refused; this module is the few lines of the unary protocol we need, with those two fixed,
and it measured faster (see ``bench/controller.py``).
"""

from __future__ import annotations

import gzip
import inspect
import io
import json
import zlib
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any, Final

import zstandard
from google.protobuf import json_format
from google.protobuf.message import Message

from fray_jupyter.controller.api.methods import METHODS_BY_PATH, unimplemented
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.transport.changes import ChangeFeed, parse_wait_request
from fray_jupyter.controller.transport.rpc import Authenticator, Invoke, decode
from fray_jupyter.iris.wire import CHANGE_FEED_PATH, CLUSTER_PROFILE_PATH, TELEMETRY_PATH, proxied

MAX_REQUEST_BYTES: Final[int] = 32 * 1024 * 1024
TELEMETRY_REFUSAL: Final[bytes] = json.dumps({"error": {
    "code": "not_found", "message": "telemetry is not kept by the embedded fray-jupyter controller (a genuine "
                                    "Iris's log server keeps it): this batch was not stored"}}).encode()
"""The answer to a telemetry batch (``TELEMETRY_PATH``): a 404 in the log server's error shape, which
rigging's exporter takes as a rejection at once (an error it would retry holds a Zephyr coordinator's
shutdown for the exporter's 5 s flush)."""
_TELEMETRY_PROXY_PATH: Final[str] = proxied(TELEMETRY_PATH)
_CODECS: Final[dict[str, str]] = {"application/proto": "proto", "application/json": "json"}

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


def encode(codec: str, message: Message) -> bytes:
    """Serialize a response in the request's codec."""
    if codec == "proto":
        return message.SerializeToString()
    return json_format.MessageToJson(message, indent=None).encode()


AdminVerb = Callable[[], Awaitable[dict[str, Any]]]


class ConnectApp:
    """ASGI app serving ``METHODS`` through ``invoke`` for the callers ``auth`` lets in (a bare
    token means ``Authenticator(token)``); ``instance`` is what ``/health`` names, ``admin`` the
    ``/fray/admin/<verb>`` handlers."""

    def __init__(self, invoke: Invoke, auth: Authenticator | str, instance: str = "",
                 admin: Mapping[str, AdminVerb] | None = None, feed: ChangeFeed | None = None,
                 profile: Mapping[str, Any] | None = None) -> None:
        self.invoke = invoke
        self.auth = auth if isinstance(auth, Authenticator) else Authenticator(auth)
        self.health = json.dumps({"status": "ok", "instance": instance}).encode()
        self.admin = dict(admin or {})
        self.feed = feed
        self.profile = None if profile is None else json.dumps(profile).encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            status, content_type, body = await self._handle(scope, receive)
        except RpcError as error:
            status, content_type = error.code.http_status, "application/json"
            body = json.dumps({"code": error.code.connect_name, "message": error.message}).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    def _authenticate(self, scope: Scope) -> dict[str, str]:
        """The request's headers, once ``auth`` let the caller in (``RpcError`` otherwise)."""
        headers = _headers(scope)
        client, server = scope.get("client"), scope.get("server")
        self.auth.check(headers.get("authorization"), tuple(client) if client else None,
                        server[1] if server else None)
        return headers

    async def _handle(self, scope: Scope, receive: Receive) -> tuple[int, str, bytes]:
        path, verb = scope["path"], scope["method"]
        if path == "/health" and verb == "GET":
            return 200, "application/json", self.health
        if path.startswith("/fray/admin/") and (handler := self.admin.get(path.removeprefix("/fray/admin/"))):
            self._authenticate(scope)
            if verb != "POST":
                raise RpcError(Code.UNIMPLEMENTED, f"{verb} is not supported; use POST")
            return 200, "application/json", json.dumps(await handler()).encode()
        if path == CHANGE_FEED_PATH and self.feed is not None:
            return await self._wait_for_changes(self.feed, scope, receive)
        if path == _TELEMETRY_PROXY_PATH:
            self._authenticate(scope)
            return 404, "application/json", TELEMETRY_REFUSAL
        if path == CLUSTER_PROFILE_PATH and self.profile is not None:
            self._authenticate(scope)
            if verb != "POST":
                raise RpcError(Code.UNIMPLEMENTED, f"{verb} is not supported; use POST")
            return 200, "application/json", self.profile
        method = METHODS_BY_PATH.get(path)
        if method is None:
            raise unimplemented(path)
        if verb != "POST":
            message = {"code": Code.UNIMPLEMENTED.connect_name, "message": f"{verb} is not supported; use POST"}
            return 405, "application/json", json.dumps(message).encode()
        headers = self._authenticate(scope)
        media_type = headers.get("content-type", "").split(";")[0].strip().lower()
        codec = _CODECS.get(media_type)
        if codec is None:
            raise RpcError(Code.INVALID_ARGUMENT,
                           f"unsupported content-type {media_type!r}: use application/proto or application/json")
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_REQUEST_BYTES:  # refused before waiting for the bytes
            raise RpcError(Code.RESOURCE_EXHAUSTED, f"request larger than {MAX_REQUEST_BYTES} bytes")
        body = _decompress(await _read_body(receive), headers.get("content-encoding", "identity"))
        answer = self.invoke(method, decode(method, codec, body))
        response = await answer if inspect.isawaitable(answer) else answer
        return 200, media_type, encode(codec, response)

    async def _wait_for_changes(self, feed: ChangeFeed, scope: Scope, receive: Receive) -> tuple[int, str, bytes]:
        """The change feed's long poll (``controller.transport.changes``): JSON only, same token."""
        self._authenticate(scope)
        if scope["method"] != "POST":
            raise RpcError(Code.UNIMPLEMENTED, f"{scope['method']} is not supported; use POST")
        try:
            body = json.loads(await _read_body(receive) or b"{}")
            after, epoch, timeout_s = parse_wait_request(body if isinstance(body, dict) else {})
        except ValueError as error:
            raise RpcError(Code.INVALID_ARGUMENT, f"bad WaitForChanges request: {error}") from None
        return 200, "application/json", json.dumps(await feed.wait(after, epoch, timeout_s)).encode()


def _headers(scope: Scope) -> dict[str, str]:
    return {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}


async def _read_body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise RpcError(Code.INVALID_ARGUMENT, "client disconnected before sending the whole request")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST_BYTES:
            raise RpcError(Code.RESOURCE_EXHAUSTED, f"request larger than {MAX_REQUEST_BYTES} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _decompress(body: bytes, encoding: str) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding == "zstd":
        return _unzstd(body)
    if encoding != "gzip":
        raise RpcError(Code.UNIMPLEMENTED, f"unsupported content-encoding {encoding!r}: use gzip, zstd or identity")
    try:
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        data = decompressor.decompress(body, MAX_REQUEST_BYTES + 1)
    except (zlib.error, gzip.BadGzipFile) as error:
        raise RpcError(Code.INVALID_ARGUMENT, f"bad gzip body: {error}") from None
    if len(data) > MAX_REQUEST_BYTES:
        raise RpcError(Code.RESOURCE_EXHAUSTED, f"request larger than {MAX_REQUEST_BYTES} bytes")
    return data


def _unzstd(body: bytes) -> bytes:
    """Decompress a zstd body (frames with or without a content size), refusing more than
    ``MAX_REQUEST_BYTES`` of output."""
    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(body)) as reader:
            data = reader.read(MAX_REQUEST_BYTES + 1)
    except zstandard.ZstdError as error:
        raise RpcError(Code.INVALID_ARGUMENT, f"bad zstd body: {error}") from None
    if len(data) > MAX_REQUEST_BYTES:
        raise RpcError(Code.RESOURCE_EXHAUSTED, f"request larger than {MAX_REQUEST_BYTES} bytes")
    return data


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
