"""``GET /fray/capacity`` (``fray_jupyter.server.capacity``) through a real Jupyter server
(pytest-jupyter) against a real embedded controller whose cluster profile keeps 1,000 GPU workers
warm: every worker and scale group with its accelerators, CPU and memory (total, used, free), a
running task's request counted as used, and a gang that can never be placed listed as pending with
the controller's reason. The shaping alone is also checked on answers shaped as a genuine Iris gives
them (running tasks named by worker). pytest-jupyter's fixtures are imported into this module only."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from pytest_jupyter.jupyter_server import *

from fray_jupyter.iris.proto import controller_pb2, job_pb2, vm_pb2
from fray_jupyter.resources import ResourceConfig
from fray_jupyter.server.capacity import capacity_json
from tests.controller_harness import ControllerProcess, launch_request, start_controller, stop_quietly
from tests.fray_rest import Reply, announced, jp_server_config, no_controller_env, rest  # noqa: F401 - fixtures

C = controller_pb2.Controller
WORKERS = 1000
PROFILE = f"""\
name: thousand
platform: {{local: {{}}}}
worker_provider: {{}}
controller: {{local: {{}}}}
scale_groups:
  gpu_h100x8:
    num_vms: 1
    buffer_slices: {WORKERS}
    max_slices: {WORKERS}
    resources: {{cpu: 128, ram: 1000GB, disk: 100GB, device_type: gpu, device_variant: H100, device_count: 8,
                capacity_type: on-demand}}
    slice_template: {{local: {{}}}}
  tpu_v4_32:
    num_vms: 4
    buffer_slices: 0
    max_slices: 2
    resources: {{cpu: 240, ram: 400GB, disk: 100GB, device_type: tpu, device_variant: v4-32, device_count: 4,
                capacity_type: preemptible}}
    slice_template: {{gcp: {{zone: us-central2-b, runtime_version: tpu-ubuntu2204-base,
                           service_account: local@thousand.iam.gserviceaccount.com}}}}
"""


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    """An embedded controller on a profile with ``WORKERS`` warm H100 workers and a v4-32 group."""
    folder = tmp_path_factory.mktemp("server-capacity")
    profile = folder / "thousand.yaml"
    profile.write_text(PROFILE)
    process = start_controller(folder / "state", "--cluster-config", str(profile))
    yield process
    stop_quietly(process)


@pytest.fixture(scope="module")
def jobs(controller: ControllerProcess) -> Iterator[tuple[str, str]]:
    """alice's running 2-core task and her v4-32 gang of two slices that no group can hold."""
    wire = controller.wire()
    running = wire.launch(launch_request(f"holds-{time.monotonic_ns()}", "exec sleep 300",
                                         resources=ResourceConfig(cpu=2, ram="1g", disk="1g")))
    waiting = wire.launch(launch_request(f"gang-{time.monotonic_ns()}", "true",
                                         resources=ResourceConfig.with_tpu("v4-32", slice_count=2)))
    wire.wait(running, {job_pb2.JOB_STATE_RUNNING})
    yield running, waiting
    for job_id in (running, waiting):
        wire.call("TerminateJob", C.TerminateJobRequest(job_id=job_id))
    wire.close()


def test_capacity_lists_every_worker_with_total_used_and_free(rest: Callable[..., Reply], jobs: tuple[str, str]) -> None:  # noqa: F811
    _, waiting = jobs
    answer = rest("capacity")
    assert answer.code == 200, answer.body
    body = answer.body
    groups = {group["name"]: group for group in body["groups"]}
    gpus = groups["gpu_h100x8"]
    assert (gpus["workers"], gpus["healthy"], gpus["slices"]) == (WORKERS, WORKERS, f"{WORKERS} ready")
    h100 = {r["name"]: r for r in gpus["resources"]}["H100"]
    assert (h100["total"], h100["used"], h100["free"], h100["free_text"]) == (8 * WORKERS, 0, 8 * WORKERS, "8000")
    assert groups["tpu_v4_32"]["workers"] == 0 and groups["tpu_v4_32"]["tone"] == "success"
    listed = [w for w in body["workers"] if w["group"] == "gpu_h100x8"]
    assert len(listed) == WORKERS and listed[0]["status"] == "healthy" and listed[0]["tone"] == "success"
    assert listed[0]["line"] == "H100: 0 used, 8 free · CPU: 0 cores used, 128 cores free · memory: 0 bytes used, 1000 GiB free"
    # The embedded controller runs tasks on its own machine, the worker their TaskStatus names, which
    # ListWorkers does not list: one row, named, says what they use.
    elsewhere = [w for w in body["workers"] if w["status"] == "not listed"]
    assert [w["worker_id"] for w in elsewhere] == ["fray-local"]
    assert elsewhere[0]["tasks"] >= 1 and "CPU: 2 cores used" in elsewhere[0]["line"]
    assert body["running_tasks"] >= 1 and body["note"] == ""
    (gang,) = [p for p in body["pending"] if p["job_id"] == waiting]
    assert gang["tasks"] == 8 and gang["reason"].startswith("Scheduler:") and "Autoscaler:" in gang["reason"]


def test_capacity_needs_jupyter_s_authentication(rest: Callable[..., Reply]) -> None:  # noqa: F811
    assert rest("capacity", auth=False).code == 403


def worker(worker_id: str, group: str, *, gpus: int = 8, healthy: bool = True) -> C.WorkerHealthStatus:
    device = job_pb2.DeviceConfig(gpu=job_pb2.GpuDevice(variant="H100", count=gpus))
    return C.WorkerHealthStatus(worker_id=worker_id, scale_group=group, healthy=healthy, metadata=job_pb2.WorkerMetadata(
        cpu_count=128, memory_bytes=1000 * 2**30, device=device))


def test_used_is_what_the_tasks_on_each_worker_asked_for_as_iris_names_them() -> None:
    status = vm_pb2.AutoscalerStatus(groups=[vm_pb2.ScaleGroupStatus(
        name="h100", device_type="gpu", device_variant="H100", availability_status="backoff",
        availability_reason="quota exhausted in us-east5", current_demand=3)])
    workers = C.ListWorkersResponse(workers=[worker("w0", "h100"), worker("w1", "h100", healthy=False),
                                             worker("w2", "other")])
    scheduler = C.GetSchedulerStateResponse(total_running=5, total_pending=3, running_buckets=[
        C.RunningTaskBucket(worker_id="w0", job_id="/alice/train", count=2),
        C.RunningTaskBucket(worker_id="w1", job_id="/bob/big", count=1),
        C.RunningTaskBucket(worker_id="gone", job_id="/alice/train", count=2)],
        pending_buckets=[C.PendingTaskBucket(job_id="/carol/wait", count=3)])
    gpu4 = job_pb2.ResourceSpecProto(cpu_millicores=8000, memory_bytes=64 * 2**30,
                                     device=job_pb2.DeviceConfig(gpu=job_pb2.GpuDevice(variant="H100", count=4)))
    too_big = job_pb2.ResourceSpecProto(cpu_millicores=200_000, memory_bytes=10, device=gpu4.device)
    answer = capacity_json(C.GetAutoscalerStatusResponse(status=status), workers, scheduler,
                           {"/alice/train": gpu4, "/bob/big": too_big},
                           {"/carol/wait": job_pb2.JobStatus(job_id="/carol/wait", pending_reason="Scheduler: no H100")})
    by_id = {w["worker_id"]: w for w in answer["workers"]}
    assert by_id["w0"]["line"].startswith("H100: 8 used, 0 free · CPU: 16 cores used, 112 cores free")
    assert by_id["w0"]["load"] == 1.0 and by_id["w0"]["tasks"] == 2
    assert by_id["w1"]["status"] == "unhealthy" and by_id["w1"]["tone"] == "danger"
    assert "CPU: 200 cores used, 0 cores free" in by_id["w1"]["line"]  # free never below 0
    assert by_id["gone"]["status"] == "not listed" and by_id["gone"]["line"].startswith("H100: 8 used ·")
    h100, other = answer["groups"]
    assert (h100["status"], h100["tone"], h100["reason"], h100["demand"]) == \
        ("backoff", "warning", "quota exhausted in us-east5", 3)
    assert {r["name"]: (r["total"], r["used"], r["free"]) for r in h100["resources"]}["H100"] == (16, 12, 4)
    assert (other["name"], other["workers"]) == ("", 1)  # a worker of no known group
    assert answer["pending"] == [{"job_id": "/carol/wait", "tasks": 3, "reason": "Scheduler: no H100"}]
    assert (answer["running_tasks"], answer["pending_tasks"]) == (5, 3)


def test_a_controller_without_the_scheduler_s_state_still_lists_its_workers_and_waits() -> None:
    waiting = job_pb2.JobStatus(job_id="/a/w", task_count=2, pending_reason="Scheduler: no capacity")
    answer = capacity_json(C.GetAutoscalerStatusResponse(), C.ListWorkersResponse(workers=[worker("w0", "")]), None,
                           {}, {"/a/w": waiting}, ["GetSchedulerState is unimplemented"])
    assert [w["line"] for w in answer["workers"]] == [
        "H100: 0 used, 8 free · CPU: 0 cores used, 128 cores free · memory: 0 bytes used, 1000 GiB free"]
    assert answer["note"] == "GetSchedulerState is unimplemented"
    assert answer["pending"] == [{"job_id": "/a/w", "tasks": 2, "reason": "Scheduler: no capacity"}]
