"""Fuzz the controller's native gRPC server (a real subprocess) with random ``LaunchJobRequest``s —
weird strings, negative and huge integers, random constraints, coscheduling, env maps, workdir files
and bundle bytes — with mangled encodings of them, and with random bytes sent to every method.

Every call must end in a response or a proper status (INVALID_ARGUMENT, NOT_FOUND, ALREADY_EXISTS,
RESOURCE_EXHAUSTED), never UNKNOWN or INTERNAL; after every example the controller still answers;
an accepted job is really there. Fuzzed jobs never run anything: the controller has one slot and a
blocker job holds it for the whole test, so they queue (or are UNSCHEDULABLE) and are never started.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from fray_jupyter.controller.api.methods import METHODS
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from tests.controller_harness import ControllerProcess, launch_request, start_controller, stop_quietly

C = controller_pb2.Controller
J = job_pb2
BLOCKER = "/fuzz/hold-the-only-slot"
LAUNCH = next(method for method in METHODS if method.name == "LaunchJob")
# FAILED_PRECONDITION: as Iris, a job no scaling group of the cluster profile can host is refused
# at submission ("Job <id> is unschedulable: ..."; controller/engine/cluster.py). PERMISSION_DENIED: a band above
# the user's max band (controller/engine/budgets.py).
ALLOWED_LAUNCH = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.ALREADY_EXISTS, grpc.StatusCode.PERMISSION_DENIED,
                  grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.FAILED_PRECONDITION}
UNSCHEDULABLE = b" is unschedulable: "
ORPHAN = b"Cannot submit job: parent job "
ALLOWED_OTHER = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND}
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


class Channel:
    """Raw bytes-in, bytes-out calls to the controller under test."""

    def __init__(self, controller: ControllerProcess) -> None:
        self._channel = grpc.insecure_channel(controller.info.grpc_url.removeprefix("grpc://"))
        self._metadata = [("authorization", f"Bearer {controller.info.token}")]
        self.accepted: set[str] = set()

    def call(self, path: str, body: bytes) -> tuple[grpc.StatusCode, bytes]:
        try:
            return grpc.StatusCode.OK, self._channel.unary_unary(path)(body, metadata=self._metadata, timeout=30)
        except grpc.RpcError as error:
            return error.code(), (error.details() or "").encode()

    def close(self) -> None:
        self._channel.close()


@pytest.fixture(scope="module")
def channel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Channel]:
    # one slot and one task process at once: the blocker holds both, so no fuzzed job runs, even one
    # asking for no CPU (which takes no slot, as on Iris)
    controller = start_controller(tmp_path_factory.mktemp("fuzz") / "state", "--slots", "1", "--max-tasks", "1")
    wire = controller.wire("grpc")
    blocker = launch_request("hold-the-only-slot", "sleep 600", user="fuzz")
    assert wire.launch(blocker) == BLOCKER
    wire.wait(BLOCKER, {J.JOB_STATE_RUNNING})
    opened = Channel(controller)
    yield opened
    opened.close()
    try:  # afterwards: nothing fuzzed ever ran, and every accepted job is listed
        listed = wire.call("ListJobs", C.ListJobsRequest(query=C.JobQuery(limit=500)))
        ids = {job.job_id for job in listed.jobs}
        assert opened.accepted <= ids or listed.total_count > 500
        for job in listed.jobs:
            if job.job_id != BLOCKER:
                assert job.state in (J.JOB_STATE_PENDING, J.JOB_STATE_UNSCHEDULABLE, J.JOB_STATE_KILLED), job
                assert not job.HasField("started_at"), f"fuzzed job {job.job_id} ran"
    finally:
        wire.close()
        stop_quietly(controller)


# -- strategies -----------------------------------------------------------------------------------------
weird_text = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=st.sampled_from("/.\\ \t\n\x00=%_'\"-aZ9é中\u202e"), max_size=12),
    st.sampled_from(["", "..", ".", "/", "../x", "/etc/passwd", "a/../../b", "x" * 300, "v5p-8", "H100", "*",
                     "region", "device-variant", "tpu-name", "sh", "true"]),
)
names = st.one_of(
    st.builds(lambda user, name: f"/{user}/{name}", weird_text, weird_text),
    weird_text,
    st.builds(lambda parts: "/" + "/".join(parts), st.lists(weird_text, min_size=1, max_size=4)),
)
replicas = st.one_of(st.integers(-3, 4), INT32, st.sampled_from([10_000, 10_001]))
attribute = st.one_of(st.builds(lambda v: J.AttributeValue(string_value=v), weird_text),
                      st.builds(lambda v: J.AttributeValue(int_value=v), INT64),
                      st.builds(lambda v: J.AttributeValue(float_value=v), st.floats(allow_nan=True)))
constraint = st.builds(lambda key, op, values, mode: J.Constraint(key=key, op=op, values=values, mode=mode),
                       weird_text, INT32, st.lists(attribute, max_size=3), INT32)


def bundles(entry_names: st.SearchStrategy[str]) -> st.SearchStrategy[bytes]:
    """Bundle bytes: random bytes, or a zip whose entries are named by ``entry_names``."""

    @st.composite
    def zipped(draw: Any) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for name in draw(st.lists(entry_names.filter(bool), min_size=1, max_size=3, unique=True)):
                archive.writestr(zipfile.ZipInfo(name), draw(st.binary(max_size=20)))
        return buffer.getvalue()

    return st.one_of(st.binary(min_size=1, max_size=200), zipped())


safe_text = st.text(alphabet="abc-_.9", min_size=1, max_size=3).filter(lambda text: text not in (".", ".."))
valid = {  # what the controller accepts (small alphabets, so names collide and the policies are exercised)
    "name": st.builds(lambda user, name: f"/fuzz-{user}/{name}", safe_text, safe_text),
    "replicas": st.integers(1, 4),
    "argv": st.lists(safe_text, min_size=1, max_size=3),
    "setup": st.lists(safe_text, max_size=2),
    "files": st.dictionaries(st.from_regex(r"[a-z]{1,4}(/[a-z]{1,4}){0,2}", fullmatch=True), st.binary(max_size=20),
                             max_size=3),
    "refs": st.just({}),
    "env": st.dictionaries(st.from_regex(r"[A-Z_][A-Z0-9_]{0,6}", fullmatch=True),
                           st.text(max_size=8).filter(lambda text: "\x00" not in text), max_size=3),
    "bundle": st.one_of(st.just(b""), bundles(safe_text)),
    "retries": st.integers(0, 3),
    "timeout": st.integers(0, 10**9),
}
weird = {
    "name": names,
    "replicas": replicas,
    "argv": st.lists(weird_text, max_size=4),
    "setup": st.lists(weird_text, min_size=1, max_size=2),
    "files": st.dictionaries(weird_text, st.binary(max_size=20), min_size=1, max_size=3),
    "refs": st.dictionaries(weird_text, weird_text, min_size=1, max_size=2),
    "env": st.dictionaries(weird_text, weird_text, min_size=1, max_size=4),
    "bundle": bundles(weird_text),
    "retries": st.one_of(st.integers(-2, 3), INT32),
    "timeout": st.one_of(st.just(0), INT64),
}


@st.composite
def launch_requests(draw: Any) -> C.LaunchJobRequest:
    """Mostly valid requests with zero, one or two fields broken; the fields the controller takes
    as they come (resources, constraints, coscheduling, policies, ...) are random throughout."""
    broken = draw(st.sets(st.sampled_from(sorted(valid)), max_size=2))

    def field(name: str) -> Any:
        return draw((weird if name in broken else valid)[name])

    request = C.LaunchJobRequest(name=field("name"), replicas=field("replicas"), bundle_blob=field("bundle"))
    entrypoint = request.entrypoint
    entrypoint.run_command.argv.extend(field("argv"))
    entrypoint.setup_commands.extend(field("setup"))
    for key, value in field("files").items():
        entrypoint.workdir_files[key] = value
    for key, value in field("refs").items():
        entrypoint.workdir_file_refs[key] = value
    for key, value in field("env").items():
        request.environment.env_vars[key] = value
    request.environment.setup_scripts.extend(draw(st.lists(weird_text, max_size=2)))
    resources = request.resources
    resources.cpu_millicores, resources.memory_bytes, resources.disk_bytes = draw(INT32), draw(INT64), draw(INT64)
    device = draw(st.sampled_from(["none", "cpu", "gpu", "tpu"]))
    if device == "gpu":
        resources.device.gpu.variant, resources.device.gpu.count = draw(weird_text), draw(INT32)
    elif device == "tpu":
        resources.device.tpu.variant, resources.device.tpu.count = draw(weird_text), draw(INT32)
    elif device == "cpu":
        resources.device.cpu.variant = draw(weird_text)
    request.constraints.extend(draw(st.lists(constraint, max_size=3)))
    if draw(st.booleans()):
        request.coscheduling.group_by = draw(weird_text)
    for name in ("max_task_failures", "max_retries_failure", "max_retries_preemption"):
        setattr(request, name, field("retries"))
    request.timeout.milliseconds = field("timeout")
    request.scheduling_timeout.milliseconds = field("timeout")
    request.existing_job_policy = draw(st.integers(-1, 5))
    request.priority_band = draw(st.integers(-1, 6))
    request.container_profile = draw(st.integers(-1, 9))
    request.preemption_policy = draw(st.integers(-1, 4))
    request.fail_if_exists = draw(st.booleans())
    request.task_image, request.bundle_id, request.client_revision_date = draw(weird_text), draw(weird_text), draw(
        weird_text)
    request.ports.extend(draw(st.lists(weird_text, max_size=2)))
    request.submit_argv.extend(draw(st.lists(weird_text, max_size=2)))
    return request


@st.composite
def mangled(draw: Any, request: C.LaunchJobRequest) -> bytes:
    """The request's encoding with a few bytes overwritten, cut short or extended."""
    data = bytearray(request.SerializeToString())
    for _ in range(draw(st.integers(1, 4))):
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[:cut]) + draw(st.binary(max_size=8))


# -- the fuzz ----------------------------------------------------------------------------------------------
def _check_launch(channel: Channel, body: bytes, request: C.LaunchJobRequest | None) -> None:
    code, answer = channel.call(LAUNCH.path, body)
    event(f"LaunchJob ({'generated' if request is not None else 'mangled'}): {code.name}")
    assert code == grpc.StatusCode.OK or code in ALLOWED_LAUNCH, (code, answer, request)
    if code != grpc.StatusCode.OK:
        assert answer, f"{code} without a message"
        assert code != grpc.StatusCode.FAILED_PRECONDITION or UNSCHEDULABLE in answer or ORPHAN in answer, answer
        return
    job_id = C.LaunchJobResponse.FromString(answer).job_id
    if request is not None:
        assert job_id == request.name
    status_code, status = channel.call(METHODS[1].path, C.GetJobStatusRequest(job_id=job_id).SerializeToString())
    assert status_code == grpc.StatusCode.OK, (status_code, status)
    channel.accepted.add(job_id)


@settings(max_examples=300, deadline=None, database=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture, HealthCheck.large_base_example])
@given(data=st.data(), request=launch_requests(), method=st.sampled_from(METHODS), noise=st.binary(max_size=300))
def test_random_requests_get_a_response_or_a_proper_status(channel: Channel, data: st.DataObject,
                                                           request: C.LaunchJobRequest, method: Any,
                                                           noise: bytes) -> None:
    _check_launch(channel, request.SerializeToString(), request)
    _check_launch(channel, data.draw(mangled(request)), None)
    code, answer = channel.call(method.path, noise)
    event(f"random bytes to {method.name}: {code.name}")
    allowed = ALLOWED_LAUNCH if method is LAUNCH else ALLOWED_OTHER
    assert code == grpc.StatusCode.OK or code in allowed, (method.name, code, answer, noise)
    assert code != grpc.StatusCode.FAILED_PRECONDITION or UNSCHEDULABLE in answer or ORPHAN in answer, answer
    if code == grpc.StatusCode.OK and method is LAUNCH:
        channel.accepted.add(C.LaunchJobResponse.FromString(answer).job_id)
    # healthy after every example: the blocker is still the one running job
    code, answer = channel.call(METHODS[2].path, C.GetJobStateRequest(job_ids=[BLOCKER]).SerializeToString())
    assert code == grpc.StatusCode.OK and dict(C.GetJobStateResponse.FromString(answer).states) == {
        BLOCKER: J.JOB_STATE_RUNNING}
