"""The gRPC transport in process: the core runs on the controller's loop, errors keep their
codes, and accepting calls does not wait for the controller's loop to come round."""

from __future__ import annotations

import asyncio
import os
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc
import pytest
from google.protobuf.message import Message

from fray_jupyter.controller.api.methods import METHODS, Method
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.transport.grpc_server import THREAD_NAME, GrpcServer
from fray_jupyter.controller.transport.rpc import Authenticator
from fray_jupyter.iris.proto import controller_pb2, job_pb2

C = controller_pb2.Controller
BY_NAME = {method.name: method for method in METHODS}
TOKEN = "secret"
T = TypeVar("T")


def _state_of(method: Method, request: Message) -> Message:
    assert isinstance(request, C.GetJobStateRequest)
    if "/missing" in request.job_ids:
        raise RpcError(Code.NOT_FOUND, "Job /missing not found")
    return C.GetJobStateResponse(states={job_id: job_pb2.JOB_STATE_RUNNING for job_id in request.job_ids})


def _serve(invoke: Callable[[Method, Message], Message], body: Callable[[str], Awaitable[T]],
           auth: Authenticator | str = TOKEN) -> T:
    """Run ``body(target)`` on a fresh loop that serves ``invoke`` over gRPC."""

    async def main() -> T:
        server = GrpcServer(invoke, auth)
        port = await server.start("127.0.0.1", 0)
        try:
            return await body(f"127.0.0.1:{port}")
        finally:
            await server.stop(None)
            assert not server.running

    return asyncio.run(main())


def _stub(channel: grpc.Channel, path: str | None = None,
          ) -> grpc.UnaryUnaryMultiCallable[C.GetJobStateRequest, C.GetJobStateResponse]:
    return channel.unary_unary(path or BY_NAME["GetJobState"].path,
                               request_serializer=C.GetJobStateRequest.SerializeToString,
                               response_deserializer=C.GetJobStateResponse.FromString)


def _metadata(token: str | None = TOKEN) -> tuple[tuple[str, str], ...]:
    return (("authorization", f"Bearer {token}"),) if token else ()


def _call(target: str, job_ids: list[str], token: str | None = TOKEN, path: str | None = None) -> C.GetJobStateResponse:
    with grpc.insecure_channel(target) as channel:
        return _stub(channel, path)(C.GetJobStateRequest(job_ids=job_ids), metadata=_metadata(token), timeout=10)


def test_the_core_runs_on_the_controller_loop_and_errors_keep_their_codes() -> None:
    threads: list[str] = []

    def invoke(method: Method, request: Message) -> Message:
        threads.append(threading.current_thread().name)
        return _state_of(method, request)

    async def body(target: str) -> None:
        assert dict((await asyncio.to_thread(_call, target, ["/a/b"])).states) == {"/a/b": 3}
        # no token: this process is the server's own OS user, calling over loopback
        assert dict((await asyncio.to_thread(_call, target, ["/c/d"], None)).states) == {"/c/d": 3}
        for job_ids, token, path, code, words in (
            (["/missing"], TOKEN, None, grpc.StatusCode.NOT_FOUND, "Job /missing not found"),
            (["/a/b"], "wrong", None, grpc.StatusCode.UNAUTHENTICATED, "invalid bearer token"),
            (["/a/b"], TOKEN, "/iris.cluster.ControllerService/Nope", grpc.StatusCode.UNIMPLEMENTED, ""),
            (["/a/b"], TOKEN, "/iris.cluster.ControllerService/ExecuteRawQuery", grpc.StatusCode.UNIMPLEMENTED,
             "ExecuteRawQuery is not served by the embedded fray-jupyter controller: it has no SQL query surface"),
        ):
            with pytest.raises(grpc.RpcError) as caught:
                await asyncio.to_thread(_call, target, job_ids, token, path)
            assert caught.value.code() == code and words in (caught.value.details() or "")

    _serve(invoke, body)
    assert threads == [threading.main_thread().name] * 3


@pytest.mark.parametrize("same_user", [True, False])
def test_tokenless_calls_need_the_same_user_and_the_same_user_mode(same_user: bool) -> None:
    """Without a token a call is let in only when its socket belongs to the server's own uid (here:
    this process) and same-user mode is on; ``owner_of`` stands in for the kernel's answer."""
    owners: list[int | None] = []

    def owner_of(peer: tuple[str, int], port: int) -> int | None:
        assert peer[0] == "127.0.0.1" and port > 0
        return owners.pop(0)

    async def body(target: str) -> list[bool]:
        results = []
        for owner in (os.geteuid(), os.geteuid() + 1, None):
            owners.append(owner)
            try:
                await asyncio.to_thread(_call, target, ["/a/b"], None)
                results.append(True)
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.UNAUTHENTICATED
                results.append(False)
        return results

    auth = Authenticator(TOKEN, same_user=same_user, owner_of=owner_of)
    assert _serve(_state_of, body, auth) == ([True, False, False] if same_user else [False, False, False])


def test_garbage_bytes_are_invalid_argument() -> None:
    async def body(target: str) -> None:
        def send() -> None:
            with grpc.insecure_channel(target) as channel:
                garbage: grpc.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
                    BY_NAME["GetJobState"].path, request_serializer=bytes, response_deserializer=bytes)
                garbage(b"\xff\xff\xff", timeout=10, metadata=_metadata())

        with pytest.raises(grpc.RpcError) as caught:
            await asyncio.to_thread(send)
        assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT

    _serve(_state_of, body)


def test_accepting_calls_does_not_wait_for_a_busy_controller_loop() -> None:
    """While the controller's loop is blocked, 200 concurrent calls are still accepted, checked and
    parsed, and all are handed to the core (grpcio's server on the same loop would accept none until
    the loop came round); released, the core answers them all."""
    calls = 200
    handed = threading.Semaphore(0)
    release = threading.Event()

    async def body(target: str) -> None:
        loop = asyncio.get_running_loop()
        hand_over = loop.call_soon_threadsafe

        def counted(callback: Callable[..., object], *args: object) -> asyncio.Handle:
            handle = hand_over(callback, *args)  # type: ignore[arg-type]
            handed.release()
            return handle

        def burst() -> None:
            with grpc.insecure_channel(target) as channel:
                stub = _stub(channel)
                stub(C.GetJobStateRequest(job_ids=["/warm/up"]), metadata=_metadata(), timeout=10)
                handed.acquire()  # the warm-up's hand-over
                hand_over(release.wait, 60)  # the controller's loop is now busy (not counted)
                futures = [stub.future(C.GetJobStateRequest(job_ids=[f"/a/{i}"]), metadata=_metadata(), timeout=60)
                           for i in range(calls)]
                try:
                    for i in range(calls):
                        assert handed.acquire(timeout=60), f"only {i} of {calls} calls reached the core's queue"
                finally:
                    release.set()
                answers = [future.result() for future in futures]
                assert [list(answer.states) for answer in answers] == [[f"/a/{i}"] for i in range(calls)]

        loop.call_soon_threadsafe = counted  # type: ignore[method-assign]
        await asyncio.to_thread(burst)

    _serve(_state_of, body)


def test_a_taken_port_is_an_os_error_and_leaves_no_thread() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        async def main() -> None:
            server = GrpcServer(_state_of, TOKEN)
            with pytest.raises(OSError, match="cannot bind"):
                await server.start("127.0.0.1", port)
            await server.stop(None)
            assert not server.running

        asyncio.run(main())
    assert not any(thread.name == THREAD_NAME for thread in threading.enumerate())
