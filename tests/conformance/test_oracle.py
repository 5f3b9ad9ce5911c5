"""Tests for the conformance oracle: the real Marin Fray→Iris client against a recording server.

Every test here drives the real ``fray``/``iris`` packages; the expected values are what this
client was first seen to send (its stub patched to keep the request), the lettered rows of
``tests/test_golden.py``.
"""

from __future__ import annotations

import http.client
import json
import sys
from collections.abc import Iterator

import pytest

if sys.version_info < (3, 12):  # marin-fray / marin-iris require Python >= 3.12
    pytest.skip("the oracle needs marin-fray/marin-iris (Python >= 3.12)", allow_module_level=True)

import iris.client.client as iris_client_mod
import iris.cluster.client.remote_client as remote_client_mod
from connectrpc.errors import ConnectError
from fray.types import Entrypoint, JobRequest, ResourceConfig
from iris.cluster.types import adjust_tpu_replicas, tpu_device
from iris.rpc import controller_pb2, job_pb2

try:
    from tests.conformance.oracle import (
        CONNECT_PROTO,
        LAUNCH_JOB_PATH,
        Oracle,
        RecordingController,
        canonical_bytes,
    )
except ModuleNotFoundError:  # rootdir not on sys.path (plain `pytest`, no __init__.py files)
    from oracle import (  # type: ignore[no-redef,unused-ignore]
        CONNECT_PROTO,
        LAUNCH_JOB_PATH,
        Oracle,
        RecordingController,
        canonical_bytes,
    )

USER = "probe"
LaunchJobRequest = controller_pb2.Controller.LaunchJobRequest


@pytest.fixture(scope="module")
def oracle() -> Iterator[Oracle]:
    with Oracle() as o:
        yield o


def _echo_job(name: str, resources: ResourceConfig, **kw: object) -> JobRequest:
    return JobRequest(
        name=name, entrypoint=Entrypoint.from_binary("echo", ["hello"]), resources=resources, **kw
    )


# --- what Marin's client sends ------------------------------------------------------------------


def test_multislice_v5p_row_a(oracle: Oracle) -> None:
    req = oracle.capture_parsed(
        _echo_job("slices", ResourceConfig.with_tpu("v5p-8", slice_count=2)), user=USER
    )

    assert req.name == f"/{USER}/slices"
    assert req.replicas == 2
    assert req.resources.cpu_millicores == 104000
    assert req.resources.memory_bytes == 224 * 1024**3
    assert req.resources.disk_bytes == 50 * 1024**3
    assert req.resources.device.WhichOneof("device") == "tpu"
    assert req.resources.device.tpu.variant == "v5p-8"
    assert req.resources.device.tpu.count == 4
    env = dict(req.environment.env_vars)
    assert env["IRIS_SLICE_COUNT"] == "2"
    assert env["IRIS_TASKS_PER_SLICE"] == "1"
    assert env["JAX_PLATFORMS"] == ""
    assert env["LIBTPU_INIT_ARGS"] == "--xla_tpu_scoped_vmem_limit_kib=50000"
    assert env["HF_DATASETS_TRUST_REMOTE_CODE"] == "1"
    assert env["TOKENIZERS_PARALLELISM"] == "false"
    assert set(json.loads(env["MARIN_PROVENANCE"])) == {
        "tree_hash", "base_commit", "dirty", "branch", "built_by", "git_remote", "created_at", "command_line",
    }  # fmt: skip
    assert not req.HasField("coscheduling")
    assert req.existing_job_policy == job_pb2.EXISTING_JOB_POLICY_KEEP
    assert list(req.entrypoint.run_command.argv) == ["echo", "hello"]
    assert req.max_retries_preemption == 100
    assert req.priority_band == job_pb2.PRIORITY_BAND_INHERIT
    assert req.client_revision_date == oracle.revision_date != ""
    # No credentials: secrets are neutralized.
    assert len(req.environment.secrets) == 0
    # Default setup (environment=None): one uv-sync script; setup_commands = it + the iris runtime script.
    assert len(req.environment.setup_scripts) == 1
    assert req.entrypoint.setup_commands[0] == req.environment.setup_scripts[0]
    assert len(req.entrypoint.setup_commands) == 2
    assert "uv sync" in req.environment.setup_scripts[0]


def test_v4_32_is_coscheduled_on_tpu_name(oracle: Oracle) -> None:
    req = oracle.capture_parsed(_echo_job("pod", ResourceConfig.with_tpu("v4-32")), user=USER)
    assert req.replicas == 4
    assert req.coscheduling.group_by == "tpu-name"
    assert req.resources.device.tpu.variant == "v4-32"
    assert req.resources.device.tpu.count == 4
    assert req.resources.cpu_millicores == 120000
    assert "LIBTPU_INIT_ARGS" not in req.environment.env_vars
    # A single slice gets no slice-topology vars.
    assert "IRIS_SLICE_COUNT" not in req.environment.env_vars


def test_adopt_existing_false_sends_unspecified_policy(oracle: Oracle) -> None:
    req = oracle.capture_parsed(_echo_job("fresh", ResourceConfig()), user=USER, adopt_existing=False)
    assert req.existing_job_policy == job_pb2.EXISTING_JOB_POLICY_UNSPECIFIED
    assert req.resources.cpu_millicores == 1000
    assert req.environment.env_vars["JAX_PLATFORMS"] == "cpu"


def test_user_comes_from_argument_and_is_restored(oracle: Oracle, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRIS_USER", "somebody-else")
    assert oracle.capture_parsed(_echo_job("who", ResourceConfig()), user="alice").name == "/alice/who"
    import os

    assert os.environ["IRIS_USER"] == "somebody-else"


# --- errors ----------------------------------------------------------------------------------


def test_replicas_not_multiple_of_vm_count_raises_same_error(oracle: Oracle) -> None:
    job = _echo_job("bad", ResourceConfig.with_tpu("v4-32"), replicas=6)
    before = oracle.server.next_seq()
    with pytest.raises(ValueError, match="multiple of 4") as info:
        oracle.capture(job, user=USER)
    # Same type and text as Iris's own validator.
    with pytest.raises(ValueError) as direct:
        adjust_tpu_replicas(tpu_device("v4-32"), 6)
    assert type(info.value) is type(direct.value)
    assert str(info.value) == str(direct.value)
    # Raised client-side: nothing reached the server, and the oracle keeps working.
    assert oracle.server.next_seq() == before
    assert (
        oracle.capture_parsed(
            _echo_job("ok", ResourceConfig.with_tpu("v4-32"), replicas=8), user=USER
        ).replicas
        == 8
    )


def test_invalid_user_error_propagates(oracle: Oracle) -> None:
    with pytest.raises(ValueError):
        oracle.capture(_echo_job("x", ResourceConfig()), user="has/slash")


def test_an_unavailable_controller_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """The real client would retry UNAVAILABLE for 30 minutes; the oracle makes one attempt and
    raises the client's error."""
    unavailable = (503, "application/json", json.dumps({"code": "unavailable", "message": "down"}).encode())
    with Oracle(rpc_timeout_ms=2000) as o:
        monkeypatch.setattr(o.server, "answer", lambda *_: unavailable)
        before = o.server.next_seq()
        with pytest.raises(ConnectError, match="down"):
            o.capture(_echo_job("down", ResourceConfig()), user=USER)
        assert [(c.path, c.status) for c in o.server.calls_since(before)] == [(LAUNCH_JOB_PATH, 503)]


# --- protocol / recording ----------------------------------------------------------------------


def test_only_launch_job_rpcs_on_one_http11_connection(oracle: Oracle) -> None:
    oracle.server.clear()
    jobs = [
        _echo_job("a", ResourceConfig()),
        _echo_job("b", ResourceConfig.with_tpu("v4-32")),
        _echo_job("c", ResourceConfig.with_gpu("H100", count=8, cpu=32, ram="512g", disk="256g", replicas=2)),
    ]
    bodies = [oracle.capture(j, user=USER) for j in jobs]
    calls = oracle.server.calls
    assert [c.path for c in calls] == [LAUNCH_JOB_PATH] * 3
    assert oracle.unexpected_calls() == []
    assert all(c.method == "POST" and c.http_version == "HTTP/1.1" for c in calls)
    assert all(c.content_type == CONNECT_PROTO for c in calls)
    assert all(c.header("Connect-Protocol-Version") == "1" for c in calls)
    assert [c.body for c in calls] == bodies
    assert len({c.connection_id for c in calls}) == 1  # the connection is reused
    assert LaunchJobRequest.FromString(bodies[2]).coscheduling.group_by == "leafgroup"


def test_capture_is_deterministic(oracle: Oracle) -> None:
    job = _echo_job("same", ResourceConfig.with_tpu("v5p-8", slice_count=2))
    twin = _echo_job("same", ResourceConfig.with_tpu("v5p-8", slice_count=2))
    first = oracle.capture(job, user=USER)
    assert oracle.capture(job, user=USER) == first
    assert oracle.capture(twin, user=USER) == first
    assert canonical_bytes(first) == LaunchJobRequest.FromString(first).SerializeToString(deterministic=True)


def test_callable_entrypoint_capture_is_deterministic(oracle: Oracle) -> None:
    job = JobRequest(name="fn", entrypoint=Entrypoint.from_callable(len, args=("abc",)))
    first = oracle.capture(job, user=USER)
    assert oracle.capture(job, user=USER) == first
    req = LaunchJobRequest.FromString(first)
    assert set(req.entrypoint.workdir_files) == {"_callable.pkl", "_callable_runner.py"}


def test_local_environment_does_not_leak(oracle: Oracle, monkeypatch: pytest.MonkeyPatch) -> None:
    job = _echo_job("hermetic", ResourceConfig.with_tpu("v5p-8"))
    baseline = oracle.capture(job, user=USER)
    original_forwarded = iris_client_mod.forwarded_secrets
    original_retry = remote_client_mod.call_with_retry
    monkeypatch.setenv("HF_TOKEN", "hf_should_not_leak")
    monkeypatch.setenv("WANDB_API_KEY", "wandb_should_not_leak")
    monkeypatch.setenv("CW_KEY_ID", "cw")
    monkeypatch.setenv("CW_KEY_SECRET", "cw")
    monkeypatch.setenv("IRIS_NSYS_TASKS", "all")
    monkeypatch.setenv("IRIS_REVISION_DATE", "2001-01-01")
    monkeypatch.setenv("IRIS_TASK_ID", "/someone/parent/0:0")
    monkeypatch.setenv("MARIN_PROVENANCE", json.dumps({"tree_hash": "x", "base_commit": "y", "dirty": False}))
    body = oracle.capture(job, user=USER)
    assert body == baseline
    assert b"should_not_leak" not in body
    # Everything is restored after the capture.
    import os

    assert os.environ["HF_TOKEN"] == "hf_should_not_leak"
    assert os.environ["IRIS_NSYS_TASKS"] == "all"
    assert iris_client_mod.forwarded_secrets is original_forwarded
    assert remote_client_mod.call_with_retry is original_retry


def test_pinned_provenance() -> None:
    pinned = json.dumps(
        {
            "tree_hash": "abc",
            "base_commit": "def",
            "dirty": False,
            "branch": None,
            "built_by": "ci",
            "git_remote": None,
            "created_at": "",
            "command_line": [],
        }
    )
    with Oracle(provenance=pinned, warm_up=False) as o:
        req = o.capture_parsed(_echo_job("prov", ResourceConfig()), user=USER)
    assert json.loads(req.environment.env_vars["MARIN_PROVENANCE"]) == json.loads(pinned)


# --- the server alone ----------------------------------------------------------------------------


def _post(url: str, path: str, body: bytes, content_type: str) -> tuple[int, str, bytes]:
    host_port = url.removeprefix("http://")
    conn = http.client.HTTPConnection(host_port, timeout=5)
    try:
        conn.request(
            "POST", path, body=body, headers={"Content-Type": content_type, "Connect-Protocol-Version": "1"}
        )
        resp = conn.getresponse()
        return resp.status, resp.getheader("Content-Type") or "", resp.read()
    finally:
        conn.close()


def test_server_answers_other_methods_with_connect_unimplemented_and_records_them() -> None:
    with RecordingController() as server:
        status, ctype, payload = _post(
            server.url, "/iris.cluster.ControllerService/ListJobs", b"{}", "application/json"
        )
        assert status == 404
        assert ctype == "application/json"
        assert json.loads(payload)["code"] == "unimplemented"
        [call] = server.unexpected_calls()
        assert call.path == "/iris.cluster.ControllerService/ListJobs"
        assert call.body == b"{}"


def test_server_accepts_json_and_proto_launch_job() -> None:
    with RecordingController() as server:
        body = json.dumps({"name": "/probe/curl-job", "replicas": 1}).encode()
        status, ctype, payload = _post(server.url, LAUNCH_JOB_PATH, body, "application/json")
        assert (status, ctype) == (200, "application/json")
        assert json.loads(payload) == {"jobId": "/probe/curl-job"}

        proto = LaunchJobRequest(name="/probe/p").SerializeToString()
        status, ctype, payload = _post(server.url, LAUNCH_JOB_PATH, proto, CONNECT_PROTO)
        assert (status, ctype) == (200, CONNECT_PROTO)
        assert controller_pb2.Controller.LaunchJobResponse.FromString(payload).job_id == "/probe/p"

        status, _, payload = _post(server.url, LAUNCH_JOB_PATH, b"\xff\xff", CONNECT_PROTO)
        assert status == 400 and json.loads(payload)["code"] == "invalid_argument"

        assert [c.body for c in server.calls] == [body, proto, b"\xff\xff"]
        assert [c.is_launch_job for c in server.calls] == [True, True, False]
    assert not server.running
