"""``plan()``: the one immutable object every surface shows and submission sends."""

from __future__ import annotations

import dataclasses
import json

import pytest
from google.protobuf import json_format, text_format

from fray_jupyter import Plan, plan
from fray_jupyter.iris.proto import controller_pb2
from fray_jupyter.resources import ANY_REGION, Entrypoint, EnvironmentConfig, JobRequest, ResourceConfig

RC = ResourceConfig
LaunchJobRequest = controller_pb2.Controller.LaunchJobRequest
GIB = 1024**3


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IRIS_USER", raising=False)
    monkeypatch.delenv("IRIS_REVISION_DATE", raising=False)


def job(resources: ResourceConfig | None = None, **kwargs) -> JobRequest:
    return JobRequest(
        name=kwargs.pop("name", "train"),
        entrypoint=Entrypoint.from_binary("python", ["train.py"]),
        resources=resources or RC(),
        **kwargs,
    )


def test_multi_slice_tpu_plan() -> None:
    p = plan(job(RC.with_tpu("v4-32", slice_count=2, regions=["us-central2"])), user="alice")
    assert isinstance(p, Plan)
    assert (p.job_id, p.user, p.replicas) == ("/alice/train", "alice", 8)
    assert (p.cpu_millicores, p.memory_bytes, p.disk_bytes) == (120_000, 200 * GIB, 50 * GIB)
    assert (p.chips_per_task, p.total_chips) == (4, 32)
    assert p.hbm_bytes == 32 * 32 * GIB
    assert p.peak_flops == 275e12 * 32
    assert p.group_by == "tpu-name"
    assert [g.tasks for g in p.groups] == [(0, 1, 2, 3, 4, 5, 6, 7)]  # one gang, as Iris places it
    assert len(p.errors) == 1 and p.errors[0].startswith(
        "a v4-32 slice has 4 VMs: this 8-task gang can never be placed by Iris 0.2.227")
    assert "v4-64" in p.errors[0] and "2 separate v4-32 jobs" in p.errors[0]
    assert (
        [str(c) for c in p.fray_constraints]
        == [str(c) for c in p.wire_constraints]
        == ["region EQ us-central2"]
    )
    env = {v.name: (v.value, v.source) for v in p.env}
    assert env["IRIS_SLICE_COUNT"] == ("2", "iris-topology") and env["IRIS_TASKS_PER_SLICE"] == (
        "4",
        "iris-topology",
    )
    assert p.warnings == ()
    assert p.device.variant == "v4-32"


@pytest.mark.parametrize(("variant", "slices", "replicas"), [("v5p-16", 1, 2), ("v4-32", 1, 4), ("v5p-8", 2, 2)])
def test_placeable_tpu_shapes_have_no_errors(variant: str, slices: int, replicas: int) -> None:
    """As on the genuine Iris: v5p-16 and v4-32 x 1 run as one gang; v5p-8 x 2 as two independent tasks."""
    p = plan(job(RC.with_tpu(variant, slice_count=slices)), user="alice")
    assert p.replicas == replicas and p.errors == ()
    assert [g.gang for g in p.groups] == ([True] if p.group_by else [False] * replicas)


def test_gpu_plan_figures() -> None:
    p = plan(job(RC.with_gpu("H100", count=8, replicas=2)), user="alice")
    assert (p.replicas, p.cpu_millicores, p.total_chips, p.hbm_bytes) == (2, 4000, 16, None)
    assert p.peak_flops == 989.5e12 * 16
    assert p.group_by == "leafgroup"
    assert len(p.warnings) == 1 and p.warnings[0].startswith("cpu raised")


def test_plans_without_known_flops() -> None:
    assert plan(job(RC.with_gpu("GB200", count=4, replicas=4)), user="a").peak_flops is None
    cpu = plan(job(RC(replicas=3)), user="a")
    assert (cpu.peak_flops, cpu.hbm_bytes, cpu.total_chips, cpu.chips_per_task, cpu.group_by) == (
        None,
        None,
        0,
        0,
        None,
    )
    assert [g.tasks for g in cpu.groups] == [(0,), (1,), (2,)]


def test_any_region_plan_keeps_the_marker_at_fray_level_only() -> None:
    p = plan(job(RC(regions=[ANY_REGION])), user="a")
    assert [str(c) for c in p.fray_constraints] == ["region EXISTS"]
    assert p.wire_constraints == () and len(p.request.constraints) == 0
    assert len(p.warnings) == 1


def test_request_is_a_fresh_copy_each_time() -> None:
    p = plan(job(RC.with_tpu("v5p-8")), user="a")
    first = p.request
    first.replicas = 99
    first.name = "/mallory/x"
    assert p.request.replicas == 1 and p.request.name == "/a/train"
    assert p.request is not p.request


def test_request_bytes_and_size() -> None:
    p = plan(job(RC.with_tpu("v6e-16", slice_count=2)), user="a")
    assert p.request_size == len(p.request_bytes) > 0
    assert LaunchJobRequest.FromString(p.request_bytes) == p.request == p.translation.request


def test_text_rendering_parses_back() -> None:
    p = plan(job(RC.with_gpu("GB200", count=4, replicas=32, device_alternatives=["GB300"])), user="a")
    assert 'group_by: "nvlink.domain.sliced"' in p.request_text
    assert text_format.Parse(p.request_text, LaunchJobRequest()) == p.request


def test_json_rendering_is_connect_json_and_parses_back() -> None:
    p = plan(job(RC.with_tpu("v5p-8", slice_count=2)), user="a")
    data = json.loads(p.request_json)
    assert data["name"] == "/a/train"
    assert data["resources"]["cpuMillicores"] == 104000
    assert data["resources"]["memoryBytes"] == str(224 * GIB)  # int64 as a string
    assert data["existingJobPolicy"] == "EXISTING_JOB_POLICY_KEEP"
    assert json_format.Parse(p.request_json, LaunchJobRequest()) == p.request


def test_plan_is_immutable() -> None:
    p = plan(job(), user="a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.request_bytes = b""  # type: ignore[misc]


def test_user_defaults_to_iris_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IRIS_USER", "bob")
    assert plan(job()).job_id == "/bob/train"


def test_policy_and_revision_date_reach_the_request() -> None:
    p = plan(job(), user="a", existing_job_policy="recreate", revision_date="2027-03-04")
    assert (p.request.existing_job_policy, p.request.client_revision_date) == (3, "2027-03-04")


def test_env_lists_every_wire_variable_with_a_source() -> None:
    env = EnvironmentConfig(workspace="/ws", env_vars={"A": "1"}, extras=["gpu"], setup_scripts=[])
    p = plan(job(RC.with_gpu("H100", count=8), environment=env), user="a")
    assert {v.name: v.value for v in p.env} == dict(p.request.environment.env_vars)
    assert {v.source for v in p.env} == {"user", "device", "iris"}


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda: job(RC.with_tpu("v4-32"), replicas=3), "multiple of 4"),
        (lambda: job(RC(regions=[ANY_REGION, "us-east5"])), "ANY_REGION cannot be combined"),
        (lambda: job(RC.with_gpu("GB200", count=4, replicas=17)), "17"),
        (lambda: job(processes_per_task=2), "requires a GPU device"),
    ],
)
def test_plan_errors_are_one_line_value_errors(make, fragment: str) -> None:
    with pytest.raises(ValueError) as caught:
        plan(make(), user="a")
    assert fragment in str(caught.value) and "\n" not in str(caught.value)
