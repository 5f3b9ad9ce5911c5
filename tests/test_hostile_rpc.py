"""Hostile raw RPCs against a real controller subprocess, over both transports (Connect/HTTP and
native gRPC): malformed launches, unknown ids for every read RPC, and transport-level abuse (garbage
bytes, wrong content types, JSON of the wrong shape, oversize and gzip-bomb bodies, a huge declared
length). Each gets the right status code and a message; the controller keeps serving after every
one, and ListJobs never shows a job a refused launch half-created."""

from __future__ import annotations

import gzip
import io
import socket
import zipfile
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

import grpc
import httpx
import pytest

from fray_jupyter.controller.api.methods import METHODS
from fray_jupyter.controller.api.validation import MAX_BUNDLE_SIZE_BYTES
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from tests.controller_harness import (
    ControllerProcess,
    Wire,
    WireError,
    launch_request,
    start_controller,
    stop_quietly,
)

C = controller_pb2.Controller
J = job_pb2
BY_NAME = {method.name: method for method in METHODS}
KNOWN = "/alice/survivor"  # a finished 2-task job, made before any hostile call
HOSTILE = "hostile-"  # every refused launch is named with this prefix (unless the name is the hostile part)


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    process = start_controller(tmp_path_factory.mktemp("hostile-rpc") / "state", "--slots", "2")
    wire = process.wire()
    job_id = wire.launch(launch_request("survivor", "echo still-here", replicas=2))
    assert job_id == KNOWN and wire.wait(job_id, {J.JOB_STATE_SUCCEEDED}).state == J.JOB_STATE_SUCCEEDED
    wire.close()
    yield process
    stop_quietly(process)


@pytest.fixture(params=["connect", "grpc"])
def wire(request: pytest.FixtureRequest, controller: ControllerProcess) -> Iterator[Wire]:
    opened = controller.wire(request.param)
    yield opened
    opened.close()


@pytest.fixture(autouse=True)
def still_serving(controller: ControllerProcess) -> Iterator[None]:
    """After every hostile call: the process is alive and answers both transports correctly."""
    yield
    assert controller.process.poll() is None, controller.log()[-3000:]
    for transport in ("connect", "grpc"):
        check = controller.wire(transport)
        assert dict(check.call("GetJobState", C.GetJobStateRequest(job_ids=[KNOWN])).states) == {
            KNOWN: J.JOB_STATE_SUCCEEDED}
        check.close()


def _zip(*names: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(zipfile.ZipInfo(name), b"payload")
    return buffer.getvalue()


def _set(**fields: Any) -> Callable[[C.LaunchJobRequest], None]:
    def mutate(request: C.LaunchJobRequest) -> None:
        for key, value in fields.items():
            target = request
            *path, last = key.split("__")
            for part in path:
                target = getattr(target, part)
            setattr(target, last, value)
    return mutate


def _env(name: str, value: str) -> Callable[[C.LaunchJobRequest], None]:
    return lambda request: request.environment.env_vars.__setitem__(name, value)


def _file(name: str) -> Callable[[C.LaunchJobRequest], None]:
    return lambda request: request.entrypoint.workdir_files.__setitem__(name, b"x")


def _argv(*argv: str) -> Callable[[C.LaunchJobRequest], None]:
    return lambda request: request.entrypoint.run_command.argv.__setitem__(slice(None), list(argv))


# (id, change to a valid request, expected code, a fragment of the message)
LAUNCH_CASES: list[tuple[str, Callable[[C.LaunchJobRequest], None], str, str]] = [
    ("name-empty", _set(name=""), "invalid_argument", "malformed job name ''"),
    ("name-no-slash", _set(name="alice-train"), "invalid_argument", "'alice-train'"),
    ("name-user-only", _set(name="/alice"), "invalid_argument", "'/alice'"),
    ("name-trailing-slash", _set(name="/alice/"), "invalid_argument", "'/alice/'"),
    ("name-orphan-child", _set(name="/alice/a/b"), "failed_precondition", "parent job /alice/a is absent"),
    ("name-integer-child", _set(name="/alice/a/0"), "invalid_argument", "cannot be an integer"),
    ("name-double-slash", _set(name="//x"), "invalid_argument", "'//x'"),
    ("name-blank", _set(name="/alice/   "), "invalid_argument", "'/alice/   '"),
    ("name-dotdot", _set(name="/alice/.."), "invalid_argument", "'/alice/..'"),
    ("name-dot", _set(name="/alice/."), "invalid_argument", "'/alice/.'"),
    ("name-nul", _set(name="/alice/a\x00b"), "invalid_argument", r"'/alice/a\x00b'"),
    ("name-control", _set(name="/alice/bell\x07"), "invalid_argument", r"\x07"),
    ("name-long", _set(name="/alice/" + "x" * 201), "invalid_argument", "x" * 201),
    ("name-relative", _set(name="alice/x"), "invalid_argument", "'alice/x'"),
    ("replicas-zero", _set(replicas=0), "invalid_argument", "replicas must be at least 1 (got 0)"),
    ("replicas-negative", _set(replicas=-1), "invalid_argument", "(got -1)"),
    ("replicas-huge", _set(replicas=2**31 - 1), "invalid_argument", "replicas=2147483647 exceeds"),
    ("no-run-command", lambda request: request.entrypoint.ClearField("run_command"), "invalid_argument",
     "nothing to run"),
    ("argv-empty-program", _argv("", "x"), "invalid_argument", "nothing to run"),
    ("argv-nul", _argv("echo", "a\x00b"), "invalid_argument", "run_command.argv[1]"),
    ("setup-nul", lambda request: request.entrypoint.setup_commands.append("echo \x00"), "invalid_argument",
     "setup_commands[0]"),
    ("env-equals", _env("A=B", "1"), "invalid_argument", "'A=B'"),
    ("env-nul-name", _env("A\x00", "1"), "invalid_argument", r"'A\x00'"),
    ("env-empty-name", _env("", "1"), "invalid_argument", "name ''"),
    ("env-nul-value", _env("A", "x\x00y"), "invalid_argument", "variable A contains a NUL"),
    ("workdir-traversal", _file("../x"), "invalid_argument", "'../x'"),
    ("workdir-absolute", _file("/etc/passwd"), "invalid_argument", "'/etc/passwd'"),
    ("workdir-inner-traversal", _file("a/../../x"), "invalid_argument", "'a/../../x'"),
    ("workdir-backslash", _file("a\\..\\x"), "invalid_argument", r"'a\\..\\x'"),
    ("workdir-dot", _file("."), "invalid_argument", "'.'"),
    ("workdir-empty", _file(""), "invalid_argument", "''"),
    ("workdir-nul", _file("a\x00b"), "invalid_argument", r"'a\x00b'"),
    ("workdir-refs", lambda request: request.entrypoint.workdir_file_refs.__setitem__("x", "ref"),
     "invalid_argument", "workdir_file_refs"),
    ("bundle-oversize", lambda request: setattr(request, "bundle_blob", b"\x00" * (MAX_BUNDLE_SIZE_BYTES + 1)),
     "invalid_argument", "exceeds maximum 25MB"),
    ("bundle-not-zip", _set(bundle_blob=b"this is not a zip"), "invalid_argument", "not a zip archive"),
    ("bundle-truncated-zip", _set(bundle_blob=_zip("a.py", "b.py")[:60]), "invalid_argument", "not a zip"),
    ("bundle-traversal", _set(bundle_blob=_zip("ok.py", "../evil.py")), "invalid_argument", "'../evil.py'"),
    ("bundle-absolute", _set(bundle_blob=_zip("/etc/evil.py")), "invalid_argument", "'/etc/evil.py'"),
    ("max-retries-negative", _set(max_retries_failure=-1), "invalid_argument", "max_retries_failure"),
    ("preemption-retries-negative", _set(max_retries_preemption=-1), "invalid_argument", "max_retries_preemption"),
    ("task-failures-negative", _set(max_task_failures=-5), "invalid_argument", "max_task_failures"),
    ("timeout-negative", _set(timeout__milliseconds=-1), "invalid_argument", "timeout must not be negative"),
    ("scheduling-timeout-negative", _set(scheduling_timeout__milliseconds=-1), "invalid_argument",
     "scheduling_timeout"),
    ("existing-name-policy-error", _set(name=KNOWN, existing_job_policy=J.EXISTING_JOB_POLICY_ERROR),
     "already_exists", f"Job {KNOWN} already exists"),
]


@pytest.mark.parametrize(("mutate", "code", "fragment"), [case[1:] for case in LAUNCH_CASES],
                         ids=[case[0] for case in LAUNCH_CASES])
def test_hostile_launches_are_refused_and_nothing_is_stored(wire: Wire, request: pytest.FixtureRequest,
                                                             mutate: Callable[[C.LaunchJobRequest], None],
                                                             code: str, fragment: str) -> None:
    launch = launch_request(f"{HOSTILE}{request.node.callspec.id}", "true")
    mutate(launch)
    with pytest.raises(WireError) as refused:
        wire.launch(launch)
    assert refused.value.code == code, refused.value
    assert fragment in refused.value.message and "\n" not in refused.value.message, refused.value.message
    assert refused.value.http_status in (0, 400, 409)
    if launch.name != KNOWN:
        with pytest.raises(WireError) as missing:
            wire.status(launch.name)
        assert missing.value.code in ("not_found", "invalid_argument")


# -- unknown ids for every read RPC -------------------------------------------------------------------
READ_CASES: list[tuple[str, Any, str]] = [
    ("GetJobStatus", C.GetJobStatusRequest(job_id="/alice/never"), "not_found"),
    ("GetJobStatus", C.GetJobStatusRequest(job_id=""), "not_found"),
    ("GetJobStatus", C.GetJobStatusRequest(job_id=f"{KNOWN}/0"), "not_found"),
    ("GetJobStatus", C.GetJobStatusRequest(job_id="/alice/" + "x" * 10_000), "not_found"),
    ("GetJobStatus", C.GetJobStatusRequest(job_id="/alice/a\x00b"), "not_found"),
    ("TerminateJob", C.TerminateJobRequest(job_id="/alice/never"), "not_found"),
    ("TerminateJob", C.TerminateJobRequest(job_id=""), "not_found"),
    ("ListTasks", C.ListTasksRequest(job_id="/alice/never"), "not_found"),
    ("ListTasks", C.ListTasksRequest(job_id="%"), "not_found"),
    ("GetTaskStatus", C.GetTaskStatusRequest(task_id="/alice/never/0"), "not_found"),
    ("GetTaskStatus", C.GetTaskStatusRequest(task_id=f"{KNOWN}/2"), "not_found"),  # index out of range
    ("GetTaskStatus", C.GetTaskStatusRequest(task_id=f"{KNOWN}/-1"), "not_found"),
    ("GetTaskStatus", C.GetTaskStatusRequest(task_id=f"{KNOWN}/abc"), "not_found"),
    ("GetTaskStatus", C.GetTaskStatusRequest(task_id=f"{KNOWN}/0:x"), "not_found"),
    ("GetTaskStatus", C.GetTaskStatusRequest(task_id=f"{KNOWN}/{'9' * 40}"), "not_found"),
    ("GetTaskStatus", C.GetTaskStatusRequest(task_id=KNOWN), "not_found"),  # a job id where a task id goes
    ("GetTaskStatus", C.GetTaskStatusRequest(task_id=""), "not_found"),
    ("GetTaskLogs", C.GetTaskLogsRequest(id="/alice/never"), "not_found"),
    ("GetTaskLogs", C.GetTaskLogsRequest(id=f"{KNOWN}/7"), "not_found"),
    ("GetTaskLogs", C.GetTaskLogsRequest(id=f"{KNOWN}/0:-1"), "not_found"),
    ("GetTaskLogs", C.GetTaskLogsRequest(id=""), "not_found"),
    ("ListJobs", C.ListJobsRequest(query=C.JobQuery(scope=C.JOB_QUERY_SCOPE_CHILDREN)), "invalid_argument"),
    ("ListJobs", C.ListJobsRequest(query=C.JobQuery(scope=C.JOB_QUERY_SCOPE_CHILDREN, parent_job_id="garbage")),
     "invalid_argument"),
    ("ListJobs", C.ListJobsRequest(query=C.JobQuery(offset=5001)), "invalid_argument"),  # Iris's MAX_LIST_JOBS_OFFSET
    ("ListJobs", C.ListJobsRequest(query=C.JobQuery(offset=2**31 - 1)), "invalid_argument"),
]


@pytest.mark.parametrize(("method", "message", "code"), READ_CASES,
                         ids=[f"{m}-{i}" for i, (m, _, _) in enumerate(READ_CASES)])
def test_reads_of_unknown_ids_are_not_found(wire: Wire, method: str, message: Any, code: str) -> None:
    with pytest.raises(WireError) as refused:
        wire.call(method, message)
    assert refused.value.code == code and refused.value.message and "\n" not in refused.value.message


def test_odd_but_valid_reads_are_answered(wire: Wire) -> None:
    assert dict(wire.call("GetJobState", C.GetJobStateRequest(job_ids=["/alice/never", "", KNOWN])).states) == {
        KNOWN: J.JOB_STATE_SUCCEEDED}
    for query in (C.JobQuery(limit=-5), C.JobQuery(offset=-5), C.JobQuery(offset=5000),
                  C.JobQuery(scope=C.JOB_QUERY_SCOPE_CHILDREN, parent_job_id="/alice/never"),
                  C.JobQuery(sort_field=99, sort_direction=42), C.JobQuery(state_filter="bogus"),  # type: ignore[arg-type]
                  C.JobQuery(name_filter="%_\\'\"; DROP TABLE jobs;--")):
        wire.call("ListJobs", C.ListJobsRequest(query=query))
    logs = wire.call("GetTaskLogs", C.GetTaskLogsRequest(id=KNOWN, max_total_lines=2**31 - 1, cursor=-7))
    assert [entry.data for batch in logs.task_logs for entry in batch.logs] == ["still-here", "still-here"]


# -- Connect: what reaches the HTTP endpoint ----------------------------------------------------------
@pytest.fixture
def http(controller: ControllerProcess) -> Iterator[Callable[..., tuple[int, dict[str, Any]]]]:
    client = httpx.Client(base_url=controller.info.url, timeout=30)

    def post(method: str, body: bytes, content_type: str | None = "application/proto", *,
             headers: dict[str, str] | None = None, verb: str = "POST") -> tuple[int, dict[str, Any]]:
        sent = {"authorization": f"Bearer {controller.info.token}", **(headers or {})}
        if content_type is not None:
            sent["content-type"] = content_type
        path = BY_NAME[method].path if method in BY_NAME else method
        reply = client.request(verb, path, content=body, headers=sent)
        return reply.status_code, reply.json()

    yield post
    client.close()


@cache
def gzip_bomb() -> bytes:
    """64 MiB of zeros in about 64 KB: twice the request cap once unzipped."""
    return gzip.compress(b"\x00" * (64 * 2**20), 6)


GARBAGE = b"\xff\x00garbage\x01\x02\x03\xfe"
CONNECT_CASES: list[tuple[str, Callable[[], tuple[str, bytes, str | None, dict[str, str], str]], int, str, str]] = [
    # (id, (method, body, content type, headers, verb), HTTP status, Connect code, message fragment)
    *[(f"garbage-{m.name}", (lambda m=m: (m.name, GARBAGE, "application/proto", {}, "POST")), 400,
       "invalid_argument", "cannot parse") for m in METHODS],
    ("content-type-missing", lambda: ("LaunchJob", b"", None, {}, "POST"), 400, "invalid_argument", "''"),
    ("content-type-text", lambda: ("LaunchJob", b"x", "text/plain", {}, "POST"), 400, "invalid_argument",
     "'text/plain'"),
    ("content-type-grpc", lambda: ("LaunchJob", b"", "application/grpc", {}, "POST"), 400, "invalid_argument",
     "'application/grpc'"),
    ("json-array", lambda: ("LaunchJob", b"[]", "application/json", {}, "POST"), 400, "invalid_argument",
     "expected a JSON object, got list"),
    ("json-null", lambda: ("ListJobs", b"null", "application/json", {}, "POST"), 400, "invalid_argument",
     "got NoneType"),
    ("json-string", lambda: ("GetJobState", b'"x"', "application/json", {}, "POST"), 400, "invalid_argument",
     "got str"),
    ("json-name-int", lambda: ("LaunchJob", b'{"name": 5}', "application/json", {}, "POST"), 400,
     "invalid_argument", "name"),
    ("json-replicas-text", lambda: ("LaunchJob", b'{"name": "/alice/x", "replicas": "many"}', "application/json",
                                    {}, "POST"), 400, "invalid_argument", "replicas"),
    ("json-replicas-huge", lambda: ("LaunchJob", b'{"name": "/alice/x", "replicas": 1e20}', "application/json",
                                    {}, "POST"), 400, "invalid_argument", "replicas"),
    ("json-job-ids-object", lambda: ("GetJobState", b'{"jobIds": {"a": 1}}', "application/json", {}, "POST"),
     400, "invalid_argument", "jobIds"),
    ("json-broken", lambda: ("ListJobs", b"{", "application/json", {}, "POST"), 400, "invalid_argument",
     "cannot parse"),
    ("json-not-utf8", lambda: ("ListJobs", b'{"query": "\xff"}', "application/json", {}, "POST"), 400,
     "invalid_argument", "utf-8"),
    ("json-deep", lambda: ("ListJobs", b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "application/json", {}, "POST"),
     400, "invalid_argument", "cannot parse"),
    ("empty-launch", lambda: ("LaunchJob", b"", "application/proto", {}, "POST"), 400, "invalid_argument",
     "malformed job name ''"),
    ("empty-status", lambda: ("GetJobStatus", b"", "application/proto", {}, "POST"), 404, "not_found",
     "job_id is required"),
    ("empty-terminate", lambda: ("TerminateJob", b"", "application/json", {}, "POST"), 404, "not_found",
     "job_id is required"),
    ("empty-task-status", lambda: ("GetTaskStatus", b"", "application/proto", {}, "POST"), 404, "not_found",
     "Task  not found"),
    ("gzip-bomb", lambda: ("ListJobs", gzip_bomb(), "application/proto", {"content-encoding": "gzip"}, "POST"),
     429, "resource_exhausted", "request larger than"),
    ("gzip-broken", lambda: ("ListJobs", b"not gzip", "application/proto", {"content-encoding": "gzip"}, "POST"),
     400, "invalid_argument", "bad gzip body"),
    ("encoding-unknown", lambda: ("ListJobs", b"", "application/proto", {"content-encoding": "br"}, "POST"), 501,
     "unimplemented", "'br'"),
    ("oversize-body", lambda: ("LaunchJob", b"\x00" * (33 * 2**20), "application/proto", {}, "POST"), 429,
     "resource_exhausted", "request larger than"),
    ("get-verb", lambda: ("ListJobs", b"", "application/proto", {}, "GET"), 405, "unimplemented", "use POST"),
    ("unknown-method", lambda: ("/iris.cluster.ControllerService/DropAllJobs", b"", "application/proto", {},
                                "POST"), 501, "unimplemented", "DropAllJobs"),
    ("unknown-service", lambda: ("/grpc.health.v1.Health/Check", b"", "application/proto", {}, "POST"), 501,
     "unimplemented", "no such method"),
]


@pytest.mark.parametrize(("make", "status", "code", "fragment"), [case[1:] for case in CONNECT_CASES],
                         ids=[case[0] for case in CONNECT_CASES])
def test_hostile_connect_bodies_get_a_connect_error(http: Callable[..., tuple[int, dict[str, Any]]],
                                                    make: Callable[[], tuple[str, bytes, str | None, dict[str, str],
                                                                             str]],
                                                    status: int, code: str, fragment: str) -> None:
    method, body, content_type, headers, verb = make()
    answered, error = http(method, body, content_type, headers=headers, verb=verb)
    assert (answered, error["code"]) == (status, code), error
    assert fragment in error["message"], error["message"]


def _read_response(connection: socket.socket) -> bytes:
    """The whole response: headers, then exactly Content-Length body bytes (several recv calls)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(4096)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next((line.split(b":", 1)[1] for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), b"0"))
    while len(body) < length:
        chunk = connection.recv(4096)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


def test_a_huge_declared_length_with_the_token_is_refused_before_the_body(controller: ControllerProcess) -> None:
    """A body of 10**12 bytes announced and never sent: refused at once, not waited for (the
    answer comes within the socket's 5 s timeout, though the body never does)."""
    port = int(controller.info.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(
            f"POST {BY_NAME['LaunchJob'].path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {controller.info.token}\r\nContent-Type: application/proto\r\n"
            f"Content-Length: {10**12}\r\n\r\n".encode())
        head = _read_response(connection)
    assert head.startswith(b"HTTP/1.1 429 ") and b"resource_exhausted" in head, head


@pytest.mark.parametrize("authorization", ["Bearer wrong-token", None])
def test_a_huge_declared_length_is_refused_before_the_body(controller: ControllerProcess,
                                                           authorization: str | None) -> None:
    """A wrong token is refused (401) and the controller's own user, who needs no token, is told
    the size (429), both without waiting for the trillion bytes."""
    port = int(controller.info.url.rsplit(":", 1)[1])
    header = f"Authorization: {authorization}\r\n" if authorization else ""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        connection.sendall(f"POST {BY_NAME['LaunchJob'].path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{header}"
                           f"Content-Type: application/proto\r\nContent-Length: {10**12}\r\n\r\n".encode())
        head = _read_response(connection)
    if authorization:
        assert head.startswith(b"HTTP/1.1 401 ") and b"unauthenticated" in head, head
    else:
        assert head.startswith(b"HTTP/1.1 429 ") and b"resource_exhausted" in head, head


# -- gRPC: raw bytes and oversize messages ------------------------------------------------------------
def _grpc_raw(controller: ControllerProcess, path: str, body: bytes, **channel: Any) -> grpc.RpcError:
    with grpc.insecure_channel(controller.info.grpc_url.removeprefix("grpc://"), **channel) as opened:
        stub = opened.unary_unary(path)
        with pytest.raises(grpc.RpcError) as refused:
            stub(body, metadata=[("authorization", f"Bearer {controller.info.token}")], timeout=30)
    return refused.value


@pytest.mark.parametrize("method", [method.name for method in METHODS])
def test_grpc_garbage_is_invalid_argument_for_every_method(controller: ControllerProcess, method: str) -> None:
    error = _grpc_raw(controller, BY_NAME[method].path, GARBAGE)
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT and "cannot parse" in (error.details() or "")


@pytest.mark.parametrize(("case", "body", "channel", "code"), [
    ("oversize", b"\x00" * (33 * 2**20), {}, grpc.StatusCode.RESOURCE_EXHAUSTED),
    ("gzip-bomb", b"\x00" * (100 * 2**20), {"compression": grpc.Compression.Gzip}, grpc.StatusCode.RESOURCE_EXHAUSTED),
    ("unknown-method", b"", {}, grpc.StatusCode.UNIMPLEMENTED),
])
def test_grpc_oversize_and_unknown_calls_are_refused(controller: ControllerProcess, case: str, body: bytes,
                                                     channel: dict[str, Any], code: grpc.StatusCode) -> None:
    path = "/iris.cluster.ControllerService/DropAllJobs" if case == "unknown-method" else BY_NAME["LaunchJob"].path
    error = _grpc_raw(controller, path, body, **channel)
    assert error.code() == code, (error.code(), error.details())


# -- last: nothing half-created -----------------------------------------------------------------------
def test_list_jobs_shows_no_job_a_refused_launch_created(controller: ControllerProcess) -> None:
    wire = controller.wire("grpc")
    listed = wire.call("ListJobs", C.ListJobsRequest(query=C.JobQuery(limit=500)))
    wire.close()
    assert [job.job_id for job in listed.jobs] == [KNOWN] and listed.total_count == 1
