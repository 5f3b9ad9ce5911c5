"""How one unary RPC reaches a controller: Connect over HTTP/1.1, or native gRPC.

Rule: the URL scheme picks the transport (``TRANSPORTS``): ``http(s)://`` speaks Connect (protobuf
binary over HTTP/1.1 POST to ``<url>/iris.cluster.ControllerService/<Method>``; what a real Iris
controller and the embedded one both serve), ``grpc://host:port`` speaks native gRPC (the embedded
controller only: a real Iris controller refuses HTTP/2). Both send ``authorization: Bearer <token>``
when a token is given, give up connecting after ``CONNECT_TIMEOUT`` seconds, and turn every failure
into a one-line ``FrayError`` (``errors.error_for``). Neither retries; the client decides that.
Both mark "cannot connect" retryable only once the controller has answered on this transport: a URL
that never answered fails at once, a controller that answered before is restarting.

Capabilities: a transport says what it can do as data, so no caller asks what class it is: its
``kind`` (``"connect"``, ``"grpc"``), whether the controller is on this machine (``local``: a
loopback host; the client's retry budget follows it), and whether it reaches other paths of the
controller's host with Connect's JSON codec (``json_calls``: the log and stats services a controller
proxies, the embedded controller's change feed and cluster profile, and a launch whose fields only
JSON carries safely). ``call_json`` on a transport without ``json_calls`` is an ``unimplemented``
``FrayError``.

Headers: besides the static token, a transport may be given a header provider (``HeaderSource``),
called once per call; it attaches exactly what the provider returns (a named cluster's current
IAP edge token and bearer, see ``client.clusters``) and lets the provider's own ``FrayError``
through. It never mints, caches or interprets credentials itself.

Exit: every transport is closed when the interpreter exits (``at_exit.close_at_exit``), so a script that
never calls ``close()`` still ends: a gRPC channel left open makes the interpreter wait for ever in
grpcio's ``Channel.__del__``.

Speed (Connect): every request leaves in ONE write and every read ACKs at once (``PromptStream``).
A real Iris controller sends a response in several small writes (headers, body chunk, the chunk
terminator) with Nagle's algorithm on, and forwards a request whose body came in a second segment
the same way; with the kernel's delayed ACK on the other end each of those stalls ~40 ms, so every
call cost 44-88 ms on loopback against 1 ms for the embedded controller (``bench/client.py``).
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol, TypeVar, cast
from urllib.parse import urlsplit

import grpc
import httpcore
import httpx
from google.protobuf.message import Message

from fray_jupyter.client.at_exit import close_at_exit
from fray_jupyter.client.errors import ControllerUnreachable, FrayError, RpcFailed, error_for
from fray_jupyter.iris.proto.controller_pb2_grpc import ControllerServiceStub, EndpointServiceStub
from fray_jupyter.iris.wire import (
    CONNECT_PROTOCOL_HEADER,
    CONTROLLER_SERVICE,
    ENDPOINT_SERVICE,
    JSON_CONTENT_TYPE,
    PROTO_CONTENT_TYPE,
    method_path,
)

M = TypeVar("M", bound=Message)

SERVICE: Final[str] = CONTROLLER_SERVICE
"""The service a call goes to unless it names another (Iris's endpoint registry, ``ENDPOINT_SERVICE``,
is a service of its own beside it on the same controller)."""
CONNECT_TIMEOUT: Final[float] = 2.0
"""Seconds to wait for a TCP connection (Connect) or a ready channel (gRPC) before giving up."""

HTTP_STATUS_CODES: Final[dict[int, str]] = {
    400: "internal", 401: "unauthenticated", 403: "permission_denied", 404: "unimplemented",
    429: "unavailable", 502: "unavailable", 503: "unavailable", 504: "unavailable",
}
"""Connect's status name for an HTTP error that carries no Connect error JSON (Connect protocol
spec); any other status is ``unknown``."""

GRPC_OPTIONS: Final[tuple[tuple[str, int], ...]] = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2000),
)
"""Reconnect quickly after a controller restart (grpcio's defaults wait up to 120 s)."""

HeaderSource = Callable[[], Mapping[str, str]]
"""Called once per call for the headers to add (lower-case names); may raise a ``FrayError``."""

FLUSH_AT: Final[int] = 1 << 16
"""Bytes a ``PromptStream`` holds before writing them out even though the request is not complete
(a large body, e.g. a workspace bundle, goes out in pieces of this size)."""
QUICKACK: Final[int | None] = getattr(socket, "TCP_QUICKACK", None)
"""Linux's "ACK what arrived now" socket option (reset by the kernel, so set before every read)."""


class Transport(Protocol):
    """Sends one unary ``ControllerService`` (or ``EndpointService``) RPC; raises ``FrayError`` on any
    failure; says what else it can do (the module's Capabilities rule)."""

    url: str

    @property
    def kind(self) -> str:
        """Which protocol it speaks: ``"connect"`` or ``"grpc"``."""
        ...

    @property
    def local(self) -> bool:
        """Whether the controller is on this machine (a loopback host)."""
        ...

    @property
    def json_calls(self) -> bool:
        """Whether ``call_json`` reaches other paths of the controller's host."""
        ...

    def call(self, method: str, request: Message, response_type: type[M], timeout: float,
             service: str = SERVICE) -> M:
        """Send ``request`` to RPC ``method`` (e.g. ``"GetJobStatus"``) of ``service`` and return the response."""
        ...

    def call_json(self, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Send ``body`` as JSON to ``path`` of the controller's host (only with ``json_calls``)."""
        ...

    def close(self) -> None:
        """Release connections; the transport must not be used afterwards."""
        ...


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _connect_status(response: httpx.Response) -> tuple[str, str]:
    """``(code, message)`` of a Connect error response: its JSON ``{code, message}`` when present,
    else the code implied by the HTTP status."""
    try:
        payload = response.json()
        if isinstance(payload, dict) and isinstance(payload.get("code"), str):
            return payload["code"], str(payload.get("message", ""))
    except ValueError:
        pass
    code = HTTP_STATUS_CODES.get(response.status_code, "unknown")
    return code, f"HTTP {response.status_code} {response.reason_phrase} {response.text}"


class PromptStream(httpcore.NetworkStream):
    """An httpcore stream that sends each request in one write and ACKs each read at once.

    httpcore writes a request's headers and body separately and reads the response as it arrives.
    This stream holds the writes (up to ``FLUSH_AT`` bytes) until the first read — by then the
    request is complete — and sends them as one; before each read it sets ``TCP_QUICKACK``
    (Linux; elsewhere a no-op), so a server that writes its response in pieces with Nagle's
    algorithm on gets its ACK now instead of after the delayed-ACK timer (~40 ms). httpcore
    already sets TCP_NODELAY on every socket. Connection reuse is untouched."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream
        self._pending: list[bytes] = []
        self._size = 0
        self._timeout: float | None = None
        self._socket: socket.socket | None = stream.get_extra_info("socket")

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if buffer:
            self._pending.append(buffer)
            self._size += len(buffer)
        self._timeout = timeout
        if self._size >= FLUSH_AT:
            self._flush()

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        self._flush()
        if QUICKACK is not None and self._socket is not None:
            try:
                self._socket.setsockopt(socket.IPPROTO_TCP, QUICKACK, 1)
            except OSError:  # not a TCP socket after all: nothing to speed up
                pass
        return self._stream.read(max_bytes, timeout)

    def close(self) -> None:
        self._pending.clear()
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        self._flush()
        return PromptStream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            self._size = 0
            self._stream.write(data, self._timeout)


class PromptBackend(httpcore.NetworkBackend):
    """httpcore's own synchronous backend, its streams wrapped in ``PromptStream``."""

    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return PromptStream(self._backend.connect_tcp(host, port, timeout, local_address, socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return PromptStream(self._backend.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def prompt_transport(*, trust_env: bool) -> httpx.HTTPTransport:
    """An ``httpx.HTTPTransport`` (HTTP/1.1, a kept-alive pool with httpx's default limits, TLS
    verified as httpx does) whose connections are ``PromptStream``s. httpx has no public way to
    pass a network backend, so its pool is replaced by an ``httpcore.ConnectionPool`` built with
    one (a test checks that the connections are ours)."""
    transport = httpx.HTTPTransport(trust_env=trust_env)
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(verify=True, trust_env=trust_env),
        max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0,
        network_backend=PromptBackend())
    return transport


class ConnectTransport:
    """Connect unary calls over one pooled, kept-alive HTTP/1.1 client (thread-safe) whose
    connections send each request in one write and ACK promptly (``PromptStream``). A loopback
    URL never goes through a proxy; any other URL takes proxy and CA settings from the
    environment, as httpx does by default (a proxied connection is httpx's own)."""

    kind: Final[str] = "connect"
    json_calls: Final[bool] = True

    def __init__(self, url: str, token: str | None = None, *, headers: HeaderSource | None = None) -> None:
        self.url = url.rstrip("/")
        fixed = dict(CONNECT_PROTOCOL_HEADER)
        if token:
            fixed["authorization"] = f"Bearer {token}"
        self._headers = headers
        self.local = _is_loopback(urlsplit(self.url).hostname or "")
        trust_env = not self.local
        self._http = httpx.Client(headers=fixed, transport=prompt_transport(trust_env=trust_env),
                                  trust_env=trust_env)
        self._answered = False  # a controller answered here before: a refused connection is a restart
        close_at_exit(self)

    def call(self, method: str, request: Message, response_type: type[M], timeout: float,
             service: str = SERVICE) -> M:
        body = self._post(method_path(service, method), request.SerializeToString(), PROTO_CONTENT_TYPE,
                          method, timeout)
        return response_type.FromString(body)

    def call_json(self, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Connect call with the JSON codec to any ``path`` on the same host (e.g. the log service
        that a real Iris controller proxies, whose messages fray-jupyter has no generated code for)."""
        content = self._post(path, json.dumps(body).encode(), JSON_CONTENT_TYPE,
                             path.rsplit("/", 1)[-1], timeout)
        return cast(dict[str, Any], json.loads(content))

    def close(self) -> None:
        self._http.close()

    def _post(self, path: str, content: bytes, content_type: str, method: str, timeout: float) -> bytes:
        limits = httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT))
        headers = {"content-type": content_type, "connect-timeout-ms": str(max(1, int(timeout * 1000)))}
        if self._headers is not None:
            headers.update(self._headers())
        try:
            response = self._http.post(self.url + path, content=content, headers=headers, timeout=limits)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise ControllerUnreachable(str(exc) or type(exc).__name__, url=self.url, method=method,
                                        code="unavailable", retryable=self._answered) from None
        except httpx.TimeoutException:
            raise RpcFailed(f"no answer within {timeout:g} s", url=self.url, method=method,
                            code="deadline_exceeded") from None
        except httpx.TransportError as exc:  # a kept-alive connection dropped: the server restarted
            raise ControllerUnreachable(f"connection lost: {exc or type(exc).__name__}", url=self.url,
                                        method=method, code="unavailable", retryable=True) from None
        self._answered = True
        if response.status_code == 200:
            return response.content
        code, message = _connect_status(response)
        raise error_for(code, message, url=self.url, method=method)


class GrpcTransport:
    """Native gRPC unary calls through the generated ``ControllerServiceStub`` on one channel.
    The first call waits up to ``CONNECT_TIMEOUT`` for the channel to connect (``_connect``);
    afterwards an ``UNAVAILABLE`` answer is retryable (the controller is restarting). A loopback
    URL never goes through a proxy (grpcio otherwise honours ``http_proxy`` / ``grpc_proxy`` even for
    127.0.0.1, and the call fails as "connection refused"), as the Connect transport's."""

    kind: Final[str] = "grpc"
    json_calls: Final[bool] = False

    def __init__(self, url: str, token: str | None = None, *, headers: HeaderSource | None = None) -> None:
        self.url = url.rstrip("/")
        target = urlsplit(self.url).netloc
        if not target:
            raise ValueError(f"gRPC URL {url!r} must look like grpc://host:port")
        self.local = _is_loopback(urlsplit(self.url).hostname or "")
        options = [*GRPC_OPTIONS, *((("grpc.enable_http_proxy", 0),) if self.local else ())]
        self._target = target
        self._channel = grpc.insecure_channel(target, options=options)
        self._stubs: dict[str, Any] = {
            SERVICE: ControllerServiceStub(self._channel),  # type: ignore[no-untyped-call]
            ENDPOINT_SERVICE: EndpointServiceStub(self._channel),  # type: ignore[no-untyped-call]
        }
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self._headers = headers
        self._connected = False
        close_at_exit(self)

    def call(self, method: str, request: Message, response_type: type[M], timeout: float,
             service: str = SERVICE) -> M:
        if not self._connected:
            self._connect(method, min(timeout, CONNECT_TIMEOUT))
        metadata = self._metadata
        if self._headers is not None:
            metadata = (*metadata, *self._headers().items())
        try:
            response = getattr(self._stubs[service], method)(request, timeout=timeout, metadata=metadata)
        except grpc.RpcError as exc:
            status = cast(grpc.Call, exc)
            raise _grpc_error(status, url=self.url, method=method) from None
        return cast(M, response)

    def call_json(self, path: str, body: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Refused: gRPC reaches the controller's services only (``json_calls`` is False)."""
        raise FrayError(f"{path} is served over Connect only (an http:// or https:// controller URL)",
                        url=self.url, method=path.rsplit("/", 1)[-1], code="unimplemented")

    def close(self) -> None:
        self._channel.close()

    def _connect(self, method: str, timeout: float) -> None:
        """Wait for the channel's first connection: done at READY, refused at a TRANSIENT_FAILURE
        while nothing accepts TCP connections at the target (so a closed port fails at once),
        unreachable after ``timeout``. A TRANSIENT_FAILURE while the port accepts (grpcio's first
        attempt can fail so on a loaded machine) is waited past, within ``timeout``."""
        deadline = time.monotonic() + timeout
        settled = threading.Event()
        seen: list[grpc.ChannelConnectivity] = []

        def watch(state: grpc.ChannelConnectivity) -> None:
            seen.append(state)
            if state in (grpc.ChannelConnectivity.READY, grpc.ChannelConnectivity.TRANSIENT_FAILURE):
                settled.set()

        refused = False
        self._channel.subscribe(watch, try_to_connect=True)
        try:
            while settled.wait(max(0.0, deadline - time.monotonic())) and grpc.ChannelConnectivity.READY not in seen:
                refused = not _accepts(self._target, deadline - time.monotonic())
                if refused:
                    break
                settled.clear()  # grpcio tries again by itself (GRPC_OPTIONS' backoff)
        finally:
            self._channel.unsubscribe(watch)
        if grpc.ChannelConnectivity.READY in seen:
            self._connected = True
            return
        detail = "connection refused" if refused else f"no gRPC connection within {timeout:g} s"
        raise ControllerUnreachable(detail, url=self.url, method=method, code="unavailable")


def _accepts(target: str, timeout: float) -> bool:
    """Whether something accepts a TCP connection at ``host:port`` within ``timeout`` seconds."""
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=max(timeout, 0.01)):
            return True
    except (OSError, ValueError):
        return False


def _grpc_error(status: grpc.Call, *, url: str, method: str) -> FrayError:
    code = status.code()
    return error_for(code.name.lower() if code else "unknown", status.details() or "", url=url, method=method)


class TransportFactory(Protocol):
    """How ``TRANSPORTS`` entries are called: ``make(url, token, headers=...)``."""

    def __call__(self, url: str, token: str | None = None, *, headers: HeaderSource | None = None) -> Transport:
        ...


TRANSPORTS: Final[dict[str, TransportFactory]] = {
    "http": ConnectTransport,
    "https": ConnectTransport,
    "grpc": GrpcTransport,
}


def open_transport(url: str, token: str | None = None, *, headers: HeaderSource | None = None) -> Transport:
    """The transport for ``url``'s scheme (see ``TRANSPORTS``), adding ``headers()`` to each call."""
    scheme = urlsplit(url).scheme.lower()
    try:
        make = TRANSPORTS[scheme]
    except KeyError:
        known = ", ".join(f"{name}://" for name in TRANSPORTS)
        raise ValueError(f"controller URL {url!r} must start with one of {known}") from None
    return make(url, token, headers=headers)
