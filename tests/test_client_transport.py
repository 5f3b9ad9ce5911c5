"""transport: the URL scheme picks Connect or gRPC; both carry the token, fail fast when nobody
answers, and turn status codes into typed one-line errors. Uses small fake servers."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
import pytest

from fray_jupyter.client.errors import (
    AuthenticationFailed,
    ControllerUnreachable,
    FrayError,
    JobNotFound,
    RpcFailed,
)
from fray_jupyter.client.transport import (
    FLUSH_AT,
    ConnectTransport,
    GrpcTransport,
    PromptStream,
    open_transport,
)
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.proto.controller_pb2 import Controller
from tests.waiting import gives_up

TOKEN = "s3cret"
STATUS_REQUEST = Controller.GetJobStatusRequest(job_id="/u/j")
STATUS_RESPONSE = Controller.GetJobStatusResponse(job=job_pb2.JobStatus(job_id="/u/j", state=job_pb2.JOB_STATE_RUNNING))


# -- fake Connect server ----------------------------------------------------------------------------
@dataclass
class Answer:
    status: int
    body: bytes
    content_type: str = "application/json"


@dataclass
class FakeConnect:
    """Answers every POST with the next scripted ``Answer``; records what it received."""

    url: str
    answers: list[Answer] = field(default_factory=list)
    seen: list[dict[str, Any]] = field(default_factory=list)


@pytest.fixture
def fake_connect() -> Iterator[FakeConnect]:
    fake = FakeConnect("")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            fake.seen.append({"path": self.path, "headers": dict(self.headers), "body": body,
                              "peer": self.client_address})
            answer = fake.answers.pop(0)
            self.send_response(answer.status)
            self.send_header("content-type", answer.content_type)
            self.send_header("content-length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield fake
    server.shutdown()
    server.server_close()


def test_connect_call_sends_proto_with_token_over_one_connection(fake_connect: FakeConnect) -> None:
    fake_connect.answers = [Answer(200, STATUS_RESPONSE.SerializeToString(), "application/proto")] * 3
    transport = ConnectTransport(fake_connect.url + "/", TOKEN)
    for _ in range(3):
        assert transport.call("GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5) == STATUS_RESPONSE
    transport.close()
    first = fake_connect.seen[0]
    assert first["path"] == "/iris.cluster.ControllerService/GetJobStatus"
    assert first["headers"]["authorization"] == f"Bearer {TOKEN}"
    assert first["headers"]["content-type"] == "application/proto"
    assert first["headers"]["connect-protocol-version"] == "1"
    assert Controller.GetJobStatusRequest.FromString(first["body"]) == STATUS_REQUEST
    assert len({seen["peer"] for seen in fake_connect.seen}) == 1  # kept alive


def test_loopback_calls_ignore_proxy_settings(fake_connect: FakeConnect, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{_closed_port()}")
    fake_connect.answers = [Answer(200, STATUS_RESPONSE.SerializeToString(), "application/proto")]
    assert ConnectTransport(fake_connect.url).call(
        "GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5) == STATUS_RESPONSE


def test_connect_without_token_sends_no_authorization(fake_connect: FakeConnect) -> None:
    fake_connect.answers = [Answer(200, b"", "application/proto")]
    ConnectTransport(fake_connect.url).call("TerminateJob", Controller.TerminateJobRequest(), job_pb2.Empty, 5)
    assert "authorization" not in {name.lower() for name in fake_connect.seen[0]["headers"]}


@pytest.mark.parametrize(("answer", "cls", "code", "retryable"), [
    (Answer(401, b'{"code": "unauthenticated", "message": "bad token"}'), AuthenticationFailed,
     "unauthenticated", False),
    (Answer(404, b'{"code": "not_found", "message": "Job /u/j not found"}'), JobNotFound, "not_found", False),
    (Answer(404, b"", "text/plain"), RpcFailed, "unimplemented", False),
    (Answer(503, b"<html>down</html>", "text/html"), ControllerUnreachable, "unavailable", True),
    (Answer(500, b'{"code": "internal", "message": "boom\\nline 2"}'), RpcFailed, "internal", False),
])
def test_connect_errors_become_typed_one_line_errors(fake_connect: FakeConnect, answer: Answer,
                                                     cls: type[FrayError], code: str, retryable: bool) -> None:
    fake_connect.answers = [answer]
    with pytest.raises(cls) as caught:
        ConnectTransport(fake_connect.url).call("GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5)
    assert caught.value.code == code and caught.value.retryable == retryable
    assert fake_connect.url in str(caught.value) and "\n" not in str(caught.value)


def test_connect_json_call(fake_connect: FakeConnect) -> None:
    fake_connect.answers = [Answer(200, b'{"entries": [], "cursor": "3"}')]
    transport = ConnectTransport(fake_connect.url)
    assert transport.call_json("/x.Service/Fetch", {"source": "/u/j/"}, 5) == {"entries": [], "cursor": "3"}
    assert fake_connect.seen[0]["path"] == "/x.Service/Fetch"
    assert json.loads(fake_connect.seen[0]["body"]) == {"source": "/u/j/"}


# -- unreachable controllers -------------------------------------------------------------------------
def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def blackhole_port() -> Iterator[int]:
    """A port whose accept queue is full: connecting hangs, like a firewalled host."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = int(server.getsockname()[1])
        fillers = [socket.socket() for _ in range(3)]
        for filler in fillers:
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
        time.sleep(0.05)
        yield port
        for filler in fillers:
            filler.close()


CALL_TIMEOUT = 3600.0
"""The call's own timeout in the tests below: a transport that waited for it, instead of giving up at
once (refused) or at its connect timeout (no answer), trips ``gives_up``'s hang guard."""


@pytest.mark.parametrize("scheme", ["http", "grpc"])
def test_refused_connection_is_unreachable_without_waiting_for_the_call_timeout(scheme: str) -> None:
    url = f"{scheme}://127.0.0.1:{_closed_port()}"
    caught = gives_up(lambda: open_transport(url).call("GetJobStatus", STATUS_REQUEST,
                                                       Controller.GetJobStatusResponse, CALL_TIMEOUT))
    assert isinstance(caught, ControllerUnreachable), caught
    assert str(caught).startswith(f"cannot reach the Fray controller at {url}")
    assert not caught.retryable


def test_refused_after_an_answer_is_retryable_as_a_restart() -> None:
    """Once the controller has answered, a refused connection means it is restarting: retryable,
    as gRPC's UNAVAILABLE is (so the client's retry deadline rides through a restart)."""
    body = STATUS_RESPONSE.SerializeToString()
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        transport = ConnectTransport(f"http://127.0.0.1:{server.getsockname()[1]}")

        def answer_once() -> None:
            connection, _ = server.accept()
            with connection:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += connection.recv(65536)
                head, _, rest = request.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(rest) < length:
                    rest += connection.recv(65536)
                connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/proto\r\nconnection: close\r\n"
                                   b"content-length: %d\r\n\r\n%s" % (len(body), body))

        thread = threading.Thread(target=answer_once)
        thread.start()
        assert transport.call("GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5) == STATUS_RESPONSE
        thread.join()
    with pytest.raises(ControllerUnreachable) as caught:  # the port is closed now
        transport.call("GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5)
    transport.close()
    assert caught.value.retryable and caught.value.code == "unavailable"


@pytest.mark.parametrize("scheme", ["http", "grpc"])
def test_hanging_connect_gives_up_after_the_connect_timeout(scheme: str, blackhole_port: int) -> None:
    caught = gives_up(lambda: open_transport(f"{scheme}://127.0.0.1:{blackhole_port}").call(
        "GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, CALL_TIMEOUT))
    assert isinstance(caught, ControllerUnreachable), caught


# -- fake gRPC server ---------------------------------------------------------------------------------
@pytest.fixture
def fake_grpc() -> Iterator[str]:
    def get_job_status(request: Controller.GetJobStatusRequest, context: grpc.ServicerContext) -> Any:
        if dict(context.invocation_metadata()).get("authorization") != f"Bearer {TOKEN}":
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")
        if request.job_id != "/u/j":
            context.abort(grpc.StatusCode.NOT_FOUND, f"Job {request.job_id} not found")
        return STATUS_RESPONSE

    handler = grpc.method_handlers_generic_handler("iris.cluster.ControllerService", {
        "GetJobStatus": grpc.unary_unary_rpc_method_handler(
            get_job_status, request_deserializer=Controller.GetJobStatusRequest.FromString,
            response_serializer=Controller.GetJobStatusResponse.SerializeToString),
    })
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"grpc://127.0.0.1:{port}"
    server.stop(None)


def test_grpc_call_carries_the_token(fake_grpc: str) -> None:
    transport = GrpcTransport(fake_grpc, TOKEN)
    assert transport.call("GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5) == STATUS_RESPONSE
    with pytest.raises(JobNotFound, match="Job /u/other not found"):
        transport.call("GetJobStatus", Controller.GetJobStatusRequest(job_id="/u/other"),
                       Controller.GetJobStatusResponse, 5)
    transport.close()


def test_grpc_loopback_calls_ignore_proxy_settings(fake_grpc: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """grpcio sends even a 127.0.0.1 target through ``http_proxy`` / ``grpc_proxy``; ours never do."""
    for name in ("http_proxy", "https_proxy", "grpc_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{_closed_port()}")
    transport = GrpcTransport(fake_grpc, TOKEN)
    assert transport.call("GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5) == STATUS_RESPONSE
    transport.close()


def test_a_grpc_connection_dropped_once_while_the_port_accepts_is_waited_past(fake_grpc: str) -> None:
    """A failed first attempt at a port that accepts is not "refused": the transport waits for the
    next one (within the connect timeout). Here a relay drops the first connection and forwards the rest."""
    upstream = ("127.0.0.1", int(fake_grpc.rsplit(":", 1)[1]))
    accepted: list[int] = []
    with socket.socket() as relay:
        relay.bind(("127.0.0.1", 0))
        relay.listen(8)
        relay.settimeout(0.2)

        def pipe(source: socket.socket, sink: socket.socket) -> None:
            with contextlib.suppress(OSError):
                while data := source.recv(65536):
                    sink.sendall(data)
            with contextlib.suppress(OSError):
                sink.shutdown(socket.SHUT_WR)

        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                try:
                    connection, _ = relay.accept()
                except TimeoutError:
                    continue
                accepted.append(1)
                if len(accepted) == 1:
                    connection.close()  # the first attempt fails: grpcio reports TRANSIENT_FAILURE
                    continue
                server = socket.create_connection(upstream)
                for source, sink in ((connection, server), (server, connection)):
                    threading.Thread(target=pipe, args=(source, sink), daemon=True).start()

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        transport = GrpcTransport(f"grpc://127.0.0.1:{relay.getsockname()[1]}", TOKEN)
        try:
            assert transport.call("GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5) == STATUS_RESPONSE
        finally:
            transport.close()
            stop.set()
            thread.join()
    assert len(accepted) >= 2


def test_a_port_that_accepts_but_speaks_no_grpc_is_unreachable_after_the_connect_timeout() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        stop = threading.Event()

        def hang_up() -> None:
            server.settimeout(0.2)
            while not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    server.accept()[0].close()

        thread = threading.Thread(target=hang_up, daemon=True)
        thread.start()
        url = f"grpc://127.0.0.1:{server.getsockname()[1]}"
        try:
            with pytest.raises(ControllerUnreachable, match=r"no gRPC connection within 2 s"):
                GrpcTransport(url).call("GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 30)
        finally:
            stop.set()
            thread.join()


@pytest.mark.parametrize("token", [None, "wrong"])
def test_grpc_bad_token_is_authentication_failed(fake_grpc: str, token: str | None) -> None:
    with pytest.raises(AuthenticationFailed) as caught:
        GrpcTransport(fake_grpc, token).call("GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5)
    assert caught.value.code == "unauthenticated" and fake_grpc in str(caught.value)


# -- choosing a transport ---------------------------------------------------------------------------------
def test_scheme_picks_the_transport() -> None:
    assert isinstance(open_transport("http://127.0.0.1:1"), ConnectTransport)
    assert isinstance(open_transport("HTTPS://iris.example.com"), ConnectTransport)
    assert isinstance(open_transport("grpc://127.0.0.1:1"), GrpcTransport)
    with pytest.raises(ValueError, match="must start with one of http://, https://, grpc://"):
        open_transport("ftp://127.0.0.1:1")
    with pytest.raises(ValueError, match="grpc://host:port"):
        open_transport("grpc://")


# -- speed: one write per request, prompt ACKs (transport.PromptStream) --------------------------------
class RecordingStream:
    """An httpcore stream stand-in: records each write; reads return a fixed answer."""

    def __init__(self, sock: object = None) -> None:
        self.writes: list[bytes] = []
        self.sock = sock

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self.writes.append(buffer)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return b"answer"

    def close(self) -> None:
        pass

    def get_extra_info(self, info: str) -> Any:
        return self.sock if info == "socket" else None


class OptionsSocket:
    """A socket stand-in that records ``setsockopt``."""

    def __init__(self) -> None:
        self.options: list[tuple[int, int, int]] = []

    def setsockopt(self, level: int, option: int, value: int) -> None:
        self.options.append((level, option, value))


def test_prompt_stream_sends_headers_and_body_as_one_write() -> None:
    inner = RecordingStream()
    stream = PromptStream(inner)  # type: ignore[arg-type]
    stream.write(b"POST / HTTP/1.1\r\ncontent-length: 4\r\n\r\n")
    stream.write(b"body")
    stream.write(b"")
    assert inner.writes == []
    assert stream.read(100) == b"answer"
    assert inner.writes == [b"POST / HTTP/1.1\r\ncontent-length: 4\r\n\r\nbody"]
    stream.read(100)
    assert len(inner.writes) == 1


def test_prompt_stream_writes_a_large_body_in_pieces_without_waiting_for_the_read() -> None:
    inner = RecordingStream()
    stream = PromptStream(inner)  # type: ignore[arg-type]
    stream.write(b"head\r\n\r\n")
    stream.write(b"x" * FLUSH_AT)
    assert inner.writes == [b"head\r\n\r\n" + b"x" * FLUSH_AT]


def test_connect_transport_connections_are_prompt_streams(fake_connect: FakeConnect) -> None:
    fake_connect.answers = [Answer(200, STATUS_RESPONSE.SerializeToString(), "application/proto")]
    transport = ConnectTransport(fake_connect.url)
    transport.call("GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5)
    pool = transport._http._transport._pool  # type: ignore[attr-defined]
    streams = [connection._connection._network_stream for connection in pool.connections]
    assert streams and all(isinstance(stream, PromptStream) for stream in streams)
    transport.close()


def _nagle_server(answers: int) -> tuple[socket.socket, threading.Thread]:
    """A server that answers like a real Iris controller: Nagle's algorithm ON, the response in
    three writes (headers, a body chunk, the chunk terminator). Against a client with delayed
    ACKs the last writes wait ~40 ms for the ACK of the first."""
    body = STATUS_RESPONSE.SerializeToString()
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def serve() -> None:
        connection, _ = server.accept()
        with connection:
            buffered = b""
            for _ in range(answers):
                while b"\r\n\r\n" not in buffered:
                    buffered += connection.recv(65536)
                head, _, buffered = buffered.partition(b"\r\n\r\n")
                length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                                  if line.lower().startswith(b"content-length")))
                while len(buffered) < length:
                    buffered += connection.recv(65536)
                buffered = buffered[length:]
                connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/proto\r\n"
                                   b"transfer-encoding: chunked\r\n\r\n")
                connection.sendall(b"%x\r\n%s\r\n" % (len(body), body))
                connection.sendall(b"0\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return server, thread


@pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK"), reason="TCP_QUICKACK is Linux's")
def test_every_read_acks_at_once() -> None:
    """Before each read the stream sets TCP_QUICKACK, so a server that writes its answer in pieces
    with Nagle's algorithm on (a real Iris controller: 48 ms per call with a stock client) is not
    kept waiting for a delayed ACK. bench/client.py measures the calls against a real controller."""
    sock = OptionsSocket()
    stream = PromptStream(RecordingStream(sock))  # type: ignore[arg-type]
    stream.write(b"head\r\n\r\n")
    stream.read(100)
    stream.read(100)
    assert sock.options == [(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)] * 2


def test_a_server_that_writes_its_answer_in_pieces_is_read_whole() -> None:
    """Against such a server (headers, a chunk, the terminator, in three writes), every call on the
    kept-alive connection gets the whole answer."""
    calls = 20
    server, thread = _nagle_server(calls)
    transport = ConnectTransport(f"http://127.0.0.1:{server.getsockname()[1]}")
    for _ in range(calls):
        assert transport.call("GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5) == STATUS_RESPONSE
    transport.close()
    thread.join(5)
    server.close()
    assert not thread.is_alive()


def test_header_provider_is_called_for_every_call(fake_connect: FakeConnect) -> None:
    fake_connect.answers = [Answer(200, STATUS_RESPONSE.SerializeToString(), "application/proto")] * 2
    tokens = iter(["one", "two"])
    transport = ConnectTransport(fake_connect.url, headers=lambda: {"proxy-authorization": f"Bearer {next(tokens)}"})
    for _ in range(2):
        transport.call("GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5)
    transport.close()
    assert [seen["headers"]["proxy-authorization"] for seen in fake_connect.seen] == ["Bearer one", "Bearer two"]
    assert "authorization" not in {name.lower() for name in fake_connect.seen[0]["headers"]}


def test_an_error_from_the_header_provider_reaches_the_caller_unchanged(fake_connect: FakeConnect) -> None:
    def expired() -> dict[str, str]:
        raise AuthenticationFailed("log in again", url=fake_connect.url, code="unauthenticated")

    with pytest.raises(AuthenticationFailed, match="log in again"):
        ConnectTransport(fake_connect.url, headers=expired).call(
            "GetJobStatus", STATUS_REQUEST, Controller.GetJobStatusResponse, 5)
    assert fake_connect.seen == []
