"""Oracle: capture the exact ``LaunchJobRequest`` Marin's real Fray→Iris client sends, without a cluster.

The conformance suite compares fray-jupyter's own translation with Marin's real client
(``fray.iris_backend.FrayIrisClient`` on top of ``iris.client.client.IrisClient``). The
oracle runs that real client unmodified up to the wire and records what it sends:

* :class:`RecordingController` is a tiny stand-in for the Iris controller. It listens on
  ``127.0.0.1`` (ephemeral port, background thread) and speaks just enough of the Connect
  unary protocol over HTTP/1.1: ``POST /iris.cluster.ControllerService/LaunchJob`` with
  ``Content-Type: application/proto`` (or ``application/json``) is recorded byte for byte and
  answered ``200`` with ``LaunchJobResponse(job_id=<the request's name>)`` in the same codec.
  Every other request is recorded too and answered with a Connect error
  (``404 {"code": "unimplemented", ...}``), so a test can see unexpected calls.
* :class:`Oracle` owns one server and ONE reused real client (one keep-alive HTTP/1.1
  connection), and turns a ``fray.types.JobRequest`` into the serialized request body.

Transport facts (checked empirically with connect-python 0.9.0 + pyqwest): the real client
talks plain HTTP/1.1 (``http://`` URL, no TLS, no h2c upgrade) to the stdlib
``ThreadingHTTPServer``, with ``Content-Type: application/proto``, ``Connect-Protocol-Version:
1``, ``Content-Encoding: identity`` and a ``Content-Length`` body, and reuses one keep-alive
connection. ``FrayIrisClient.submit`` makes exactly one RPC (``LaunchJob``); the returned
handle makes none until it is used.

Hermeticity rules (applied around every :meth:`Oracle.capture`, then undone):

* the job's user comes from ``IRIS_USER`` (set to ``user``);
* ``iris.client.client.forwarded_secrets`` returns ``{}``, so no mounted secret or
  ``HF_TOKEN``/``WANDB_API_KEY``/``CW_KEY_*`` of this machine reaches a capture (Marin releases
  before 0.2.222 forward none and have no such function: the oracle runs on every release it is
  pointed at);
* every other variable the real submit path reads is removed from ``os.environ``: all
  ``IRIS_*`` (``IRIS_NSYS_TASKS`` would wrap the command in nsys; ``IRIS_TASK_ID`` and friends
  would make the submit a nested child job; ``IRIS_REVISION_DATE`` would override
  ``client_revision_date``), ``MARIN_PROVENANCE``, ``RIGGING_SECRETS_DIR`` and the forwarded
  secret names;
* the submit runs in a fresh :class:`contextvars.Context`, so an ambient Iris job context
  (``iris_ctx_scope``/job-info context variables) cannot make it a child submission;
* ``client_revision_date`` is resolved once per oracle with ``IRIS_REVISION_DATE`` unset
  (it is ``iris._build_info.BUILD_DATE`` for the installed wheel) and pinned for each capture.

Patches and environment changes are applied per capture, not for the oracle's whole
lifetime: the effect on captures is the same, and code that uses the real client between
captures (or another oracle) never sees them.

What still depends on the submitting process, not on the ``JobRequest``: ``MARIN_PROVENANCE`` (git state of the cwd, OS user, capture time and
``sys.argv``; captured once per process, pin it with ``Oracle(provenance=...)``), the Python
``major.minor`` inside the default uv-sync setup script, and the byte order of protobuf map
entries (``env_vars``, ``secrets``, ``workdir_files``), which upb derives from a per-process
hash seed. Use :func:`canonical_bytes` to compare bodies produced by different processes.

No-hang rules: the real client's ``call_with_retry`` (up to 30 minutes of retries on
``UNAVAILABLE``/``INTERNAL``) is replaced by a single attempt during a capture, and the
LaunchJob deadline floor (180 s) is lowered to ``rpc_timeout_ms``. Client-side validation
errors (``ValueError`` and others raised before the RPC) propagate unchanged: same type,
same message.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import gzip
import json
import os
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, Self, TypeVar

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from iris.rpc import controller_pb2

if TYPE_CHECKING:
    from fray.iris_backend import FrayIrisClient
    from fray.types import JobRequest

__all__ = [
    "CONNECT_JSON",
    "CONNECT_PROTO",
    "HERMETIC_ENV_DROP",
    "HERMETIC_ENV_DROP_PREFIXES",
    "LAUNCH_JOB_PATH",
    "Oracle",
    "OracleError",
    "RecordedCall",
    "RecordingController",
    "canonical_bytes",
]

LaunchJobRequest = controller_pb2.Controller.LaunchJobRequest
LaunchJobResponse = controller_pb2.Controller.LaunchJobResponse

#: The one RPC the real ``FrayIrisClient.submit`` makes.
LAUNCH_JOB_PATH: Final = "/iris.cluster.ControllerService/LaunchJob"
CONNECT_PROTO: Final = "application/proto"
CONNECT_JSON: Final = "application/json"

#: Environment variables removed from ``os.environ`` for the duration of a capture.
HERMETIC_ENV_DROP: Final[frozenset[str]] = frozenset(
    {
        "MARIN_PROVENANCE",  # would be forwarded verbatim instead of the process's own provenance
        "RIGGING_SECRETS_DIR",  # mounted-secrets directory read by forwarded_secrets
        "HF_TOKEN",
        "WANDB_API_KEY",
        "CW_KEY_ID",
        "CW_KEY_SECRET",
        "MARIN_CI_DISABLE_RUNTIME_ENVS",
    }
)
#: Every variable with one of these prefixes is removed too (``IRIS_USER`` is then set to the user).
HERMETIC_ENV_DROP_PREFIXES: Final[tuple[str, ...]] = ("IRIS_",)

_T = TypeVar("_T")


class OracleError(RuntimeError):
    """The oracle itself misbehaved (not the real client): e.g. no LaunchJob was recorded."""


# --------------------------------------------------------------------------------------------
# Recording Connect server
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedCall:
    """One HTTP request received by :class:`RecordingController`, recorded before it is answered.

    ``body`` is the request body exactly as received on the wire (after undoing a
    ``Content-Encoding: gzip`` only when ``decoded_body`` is used; ``body`` itself is raw).
    """

    seq: int
    method: str
    path: str
    http_version: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    connection_id: int
    status: int

    def header(self, name: str) -> str | None:
        """The first value of header ``name`` (case-insensitive), or None."""
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return None

    @property
    def content_type(self) -> str:
        """The media type without parameters, lower-cased ("" when absent)."""
        return (self.header("Content-Type") or "").split(";", 1)[0].strip().lower()

    @property
    def is_launch_job(self) -> bool:
        """True for a well-formed ``POST .../LaunchJob`` that was answered 200."""
        return self.method == "POST" and self.path == LAUNCH_JOB_PATH and self.status == 200

    def decoded_body(self) -> bytes:
        """The body with any ``Content-Encoding: gzip`` removed (identity otherwise)."""
        encoding = (self.header("Content-Encoding") or "identity").strip().lower()
        return gzip.decompress(self.body) if encoding == "gzip" else self.body


def _connect_error_body(code: str, message: str) -> bytes:
    return json.dumps({"code": code, "message": message}).encode()


class _Handler(BaseHTTPRequestHandler):
    """Connect-unary subset. One instance per TCP connection (HTTP/1.1 keep-alive)."""

    protocol_version = "HTTP/1.1"
    server_version = "fray-oracle"
    sys_version = ""
    # One write per response plus TCP_NODELAY: avoids the 40 ms Nagle/delayed-ACK stall
    # that a header-write + body-write response would hit on a reused connection.
    disable_nagle_algorithm = True
    server: _RecordingHTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.untrack(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log."""

    def _read_body(self) -> bytes:
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _respond(self, status: int, content_type: str, payload: bytes) -> None:
        head = (
            f"{self.protocol_version} {status} {self.responses.get(status, ('',))[0]}\r\n"
            f"Content-Type: {content_type}\r\n"
            f"Content-Length: {len(payload)}\r\n"
            "\r\n"
        ).encode("latin-1")
        self.wfile.write(head + payload)
        self.wfile.flush()

    def _handle(self) -> None:
        body = self._read_body()
        status, content_type, payload = self.server.controller.answer(
            self.command, self.path, self.headers, body
        )
        self.server.controller.record(
            method=self.command,
            path=self.path,
            http_version=self.request_version,
            headers=tuple(self.headers.items()),
            body=body,
            connection_id=id(self.connection),
            status=status,
        )
        self._respond(status, content_type, payload)

    do_POST = _handle
    do_GET = _handle
    do_PUT = _handle
    do_DELETE = _handle
    do_PATCH = _handle


class _RecordingHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, controller: RecordingController) -> None:
        self.controller = controller
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Handler)

    def track(self, sock: socket.socket) -> None:
        with self._open_lock:
            self._open.add(sock)

    def untrack(self, sock: socket.socket) -> None:
        with self._open_lock:
            self._open.discard(sock)

    def close_connections(self) -> None:
        """Shut down live keep-alive connections so their handler threads exit."""
        with self._open_lock:
            socks = list(self._open)
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class RecordingController:
    """A loopback-only stand-in for the Iris controller that records every request.

    Rule: ``POST /iris.cluster.ControllerService/LaunchJob`` with a body that parses as a
    ``LaunchJobRequest`` in the request's codec (``application/proto`` or
    ``application/json``, optionally gzip-encoded) is answered ``200`` with
    ``LaunchJobResponse(job_id=request.name)`` in the same codec. A LaunchJob body that does
    not parse is answered ``400 invalid_argument``; any other method or path is answered
    ``404 unimplemented`` (Connect error JSON). All requests are recorded in arrival order in
    :attr:`calls` before the response is written, so a caller that got its response always
    finds its record.

    The server thread is a daemon and :meth:`stop` is registered with :mod:`atexit`, so it
    stops by itself at interpreter exit; :meth:`stop` (or leaving the ``with`` block) stops
    it earlier.
    """

    def __init__(self) -> None:
        self._calls: list[RecordedCall] = []
        self._lock = threading.Lock()
        self._httpd: _RecordingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle -----------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind ``127.0.0.1:0`` and serve on a daemon thread. Idempotent."""
        if self._httpd is not None:
            return self
        self._httpd = _RecordingHTTPServer(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"fray-oracle-server:{self.port}",
            daemon=True,
        )
        self._thread.start()
        atexit.register(self.stop)
        return self

    def stop(self) -> None:
        """Stop serving, close the listening socket and live connections. Idempotent."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._httpd = self._thread = None
        atexit.unregister(self.stop)
        httpd.shutdown()
        httpd.close_connections()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise OracleError("server not started")
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: the controller address to give a client."""
        return f"http://127.0.0.1:{self.port}"

    # records -------------------------------------------------------------------------------

    @property
    def calls(self) -> list[RecordedCall]:
        """A snapshot of every request received so far, in arrival order."""
        with self._lock:
            return list(self._calls)

    def calls_since(self, seq: int) -> list[RecordedCall]:
        """Requests whose ``seq`` is ``>= seq`` (use :meth:`next_seq` as a bookmark)."""
        with self._lock:
            return self._calls[seq:]

    def next_seq(self) -> int:
        """The ``seq`` the next recorded request will get."""
        with self._lock:
            return len(self._calls)

    def unexpected_calls(self) -> list[RecordedCall]:
        """Every recorded request that was not a successful LaunchJob."""
        return [c for c in self.calls if not c.is_launch_job]

    def clear(self) -> None:
        """Forget recorded requests (sequence numbers restart at 0)."""
        with self._lock:
            self._calls.clear()

    def record(
        self,
        *,
        method: str,
        path: str,
        http_version: str,
        headers: tuple[tuple[str, str], ...],
        body: bytes,
        connection_id: int,
        status: int,
    ) -> RecordedCall:
        """Append one request to :attr:`calls` (called by the handler before it answers)."""
        with self._lock:
            call = RecordedCall(
                seq=len(self._calls),
                method=method,
                path=path,
                http_version=http_version,
                headers=headers,
                body=body,
                connection_id=connection_id,
                status=status,
            )
            self._calls.append(call)
            return call

    # protocol ------------------------------------------------------------------------------

    def answer(self, method: str, path: str, headers: Any, body: bytes) -> tuple[int, str, bytes]:
        """Compute ``(status, content_type, payload)`` for one request (rules in the class doc)."""
        if method != "POST" or path != LAUNCH_JOB_PATH:
            return (
                404,
                CONNECT_JSON,
                _connect_error_body("unimplemented", f"{method} {path} is not implemented"),
            )
        content_type = (headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        encoding = (headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding not in ("identity", "gzip"):
            return 501, CONNECT_JSON, _connect_error_body("unimplemented", f"content-encoding {encoding}")
        try:
            raw = gzip.decompress(body) if encoding == "gzip" else body
            if content_type == CONNECT_PROTO:
                request = LaunchJobRequest.FromString(raw)
                return 200, CONNECT_PROTO, LaunchJobResponse(job_id=request.name).SerializeToString()
            if content_type == CONNECT_JSON:
                request = json_format.Parse(raw.decode("utf-8"), LaunchJobRequest())
                return (
                    200,
                    CONNECT_JSON,
                    json_format.MessageToJson(LaunchJobResponse(job_id=request.name)).encode(),
                )
        except (DecodeError, json_format.ParseError, UnicodeDecodeError, OSError, EOFError) as exc:
            # Any decode failure is the client's fault: invalid_argument.
            return (
                400,
                CONNECT_JSON,
                _connect_error_body("invalid_argument", f"cannot decode LaunchJobRequest: {exc}"),
            )
        return (
            415,
            CONNECT_JSON,
            _connect_error_body("internal", f"unsupported content-type {content_type!r}"),
        )


# --------------------------------------------------------------------------------------------
# Oracle around the real client
# --------------------------------------------------------------------------------------------


def canonical_bytes(body: bytes) -> bytes:
    """Re-serialize a ``LaunchJobRequest`` body deterministically (map entries sorted by key).

    The real client's bytes are stable within one process, but upb writes map entries
    (``environment.env_vars``, ``environment.secrets``, ``entrypoint.workdir_files``...) in
    hash-table order with a per-process seed, so two processes can send the same request
    with a different byte order. Comparing ``canonical_bytes`` removes only that freedom.
    """
    return bytes(LaunchJobRequest.FromString(body).SerializeToString(deterministic=True))


def _single_attempt(operation: str, call_fn: Callable[[], _T], **_: Any) -> _T:
    """Replacement for ``iris.rpc.errors.call_with_retry`` during a capture: one attempt, no retry."""
    del operation
    return call_fn()


@contextlib.contextmanager
def _patched(obj: Any, name: str, value: Any, *, optional: bool = False) -> Iterator[None]:
    """``obj.name = value`` for the block; with ``optional``, nothing when ``obj`` has no ``name`` (a
    Marin release without that piece)."""
    if optional and not hasattr(obj, name):
        yield
        return
    old = getattr(obj, name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        setattr(obj, name, old)


@contextlib.contextmanager
def _hermetic_environ(user: str, task_env: Mapping[str, str]) -> Iterator[None]:
    """Remove submit-path variables from ``os.environ``, set ``IRIS_USER`` and ``task_env`` (the
    variables of an Iris task, for a child submission); restore after."""
    saved = {
        k: v
        for k, v in os.environ.items()
        if k in HERMETIC_ENV_DROP or k.startswith(HERMETIC_ENV_DROP_PREFIXES)
    }
    for key in saved:
        del os.environ[key]
    os.environ["IRIS_USER"] = user
    os.environ.update(task_env)
    try:
        yield
    finally:
        for key in ("IRIS_USER", *task_env):
            os.environ.pop(key, None)
        os.environ.update(saved)


class Oracle:
    """The real Fray→Iris client pointed at a :class:`RecordingController`.

    Use as a context manager (or call :meth:`start` / :meth:`close`). One real
    ``FrayIrisClient`` (from ``IrisClient.remote(url)``, no workspace, no bundle id) is built
    at start and reused for every capture, so all captures share one keep-alive connection.
    Captures are serialized by a lock; ``os.environ`` and module globals are touched only
    inside a capture and restored before it returns (see the module doc for the rules).

    Args:
        rpc_timeout_ms: client timeout, also used as the LaunchJob deadline (the real floor
            of 180 s is lowered to this for captures, so a broken server cannot stall a test).
        provenance: ``None`` keeps the real ``MARIN_PROVENANCE`` (captured once per process
            from the cwd's git state); a JSON string (``rigging.provenance.Provenance``
            fields) pins it for captures.
        warm_up: make one throw-away capture at start (fills the per-process provenance and
            revision-date caches, opens the connection) so the first real capture is fast.
    """

    def __init__(
        self, *, rpc_timeout_ms: int = 10_000, provenance: str | None = None, warm_up: bool = True
    ) -> None:
        self.server = RecordingController()
        self._rpc_timeout_ms = rpc_timeout_ms
        self._provenance_json = provenance
        self._warm_up = warm_up
        self._client: FrayIrisClient | None = None
        self._iris_client: Any = None
        self._revision_date: str | None = None
        self._lock = threading.RLock()

    # lifecycle -----------------------------------------------------------------------------

    def start(self) -> Self:
        """Start the server, build the real client, warm up. Idempotent."""
        with self._lock:
            if self._client is not None:
                return self
            from fray.iris_backend import FrayIrisClient
            from iris.client.client import IrisClient

            self.server.start()
            self._revision_date = self._resolve_revision_date()
            self._iris_client = IrisClient.remote(self.server.url, timeout_ms=self._rpc_timeout_ms)
            self._client = FrayIrisClient.from_iris_client(self._iris_client)
            atexit.register(self.close)
            if self._warm_up:
                self._warm()
            return self

    def close(self) -> None:
        """Close the real client and stop the server. Idempotent."""
        with self._lock:
            iris_client, self._iris_client, self._client = self._iris_client, None, None
            atexit.unregister(self.close)
            if iris_client is not None:
                with contextlib.suppress(Exception):
                    iris_client.shutdown()
            self.server.stop()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def revision_date(self) -> str:
        """The ``client_revision_date`` every capture carries (resolved with ``IRIS_REVISION_DATE`` unset)."""
        if self._revision_date is None:
            raise OracleError("oracle not started")
        return self._revision_date

    def unexpected_calls(self) -> list[RecordedCall]:
        """Requests other than successful LaunchJobs received since start (should be empty)."""
        return self.server.unexpected_calls()

    # capture -------------------------------------------------------------------------------

    def capture(self, job: JobRequest, *, user: str, adopt_existing: bool = True,
                task_env: Mapping[str, str] | None = None) -> bytes:
        """Run the real ``FrayIrisClient.submit(job, adopt_existing)`` and return the LaunchJob body;
        with ``task_env`` (``IRIS_TASK_ID`` and the other variables of an Iris task) the submit runs
        as if from inside that task, so it is a child job.

        The body is returned exactly as the real client put it on the wire (binary protobuf).
        Exceptions raised by the real client (e.g. ``ValueError`` from its validation) are
        re-raised unchanged. :class:`OracleError` means the client returned without exactly
        one LaunchJob reaching the server.
        """
        with self._lock:
            client = self._client
            if client is None:
                raise OracleError("oracle not started; use `with Oracle() as oracle:` or .start()")
            seq = self.server.next_seq()
            self._run_hermetic(lambda: client.submit(job, adopt_existing=adopt_existing), user=user,
                               task_env=task_env or {})
            new = self.server.calls_since(seq)
            launches = [c for c in new if c.is_launch_job]
            if len(launches) != 1 or len(new) != 1:
                summary = [(c.method, c.path, c.status) for c in new]
                raise OracleError(f"expected exactly one LaunchJob request, the real client sent {summary}")
            return launches[0].body

    def capture_parsed(
        self, job: JobRequest, *, user: str, adopt_existing: bool = True
    ) -> controller_pb2.Controller.LaunchJobRequest:
        """:meth:`capture` parsed as ``iris.rpc.controller_pb2.Controller.LaunchJobRequest``."""
        return LaunchJobRequest.FromString(self.capture(job, user=user, adopt_existing=adopt_existing))

    # internals -----------------------------------------------------------------------------

    def _run_hermetic(self, fn: Callable[[], _T], *, user: str, task_env: Mapping[str, str]) -> _T:
        import iris.client.client as iris_client_mod
        import iris.cluster.client.remote_client as remote_client_mod
        import iris.version as iris_version_mod

        with contextlib.ExitStack() as stack:
            stack.enter_context(_hermetic_environ(user, task_env))
            # Marin before 0.2.222 forwards no secrets (and has no forwarded_secrets to stub).
            stack.enter_context(_patched(iris_client_mod, "forwarded_secrets", lambda *, exclude=(): {},
                                         optional=True))
            stack.enter_context(_patched(remote_client_mod, "call_with_retry", _single_attempt))
            stack.enter_context(
                _patched(remote_client_mod, "LAUNCH_JOB_TIMEOUT_FLOOR_MS", self._rpc_timeout_ms)
            )
            stack.enter_context(_patched(iris_version_mod, "_CACHED", self._revision_date))
            if self._provenance_json is not None:
                import iris.cluster.types as iris_types_mod
                from rigging.provenance import Provenance

                pinned = Provenance.from_json(self._provenance_json)
                stack.enter_context(_patched(iris_types_mod, "launch_provenance", lambda: pinned))
            # A fresh Context: no ambient Iris job context / job info can leak in.
            return contextvars.Context().run(fn)

    @staticmethod
    def _resolve_revision_date() -> str:
        import iris.version as iris_version_mod

        saved_cache = iris_version_mod._CACHED
        saved_env = os.environ.pop(iris_version_mod.REVISION_DATE_ENV, None)
        try:
            iris_version_mod._CACHED = None
            return str(iris_version_mod.client_revision_date())
        finally:
            iris_version_mod._CACHED = saved_cache
            if saved_env is not None:
                os.environ[iris_version_mod.REVISION_DATE_ENV] = saved_env

    def _warm(self) -> None:
        from fray.types import Entrypoint, JobRequest, ResourceConfig

        seq = self.server.next_seq()
        self.capture(
            JobRequest(
                name="oracle-warm-up",
                entrypoint=Entrypoint.from_binary("true", []),
                resources=ResourceConfig(),
            ),
            user="oracle",
        )
        # Keep the warm-up out of the records tests look at.
        with self.server._lock:
            del self.server._calls[seq:]
