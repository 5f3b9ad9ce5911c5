"""The embedded controller applies Iris's placement rules to its cluster profile (the real process,
over both transports): refusals at LaunchJob as Iris gives them, gangs nothing can hold kept PENDING
with Iris's reason, and the profile's shape on ListWorkers / GetAutoscalerStatus."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.resources import ResourceConfig
from tests.controller_harness import (
    TERMINAL,
    ControllerProcess,
    Wire,
    WireError,
    launch_request,
    start_controller,
    stop_quietly,
)

C = controller_pb2.Controller
J = job_pb2


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    started = start_controller(tmp_path_factory.mktemp("cluster"), "--slots", "8")
    yield started
    stop_quietly(started)


@pytest.fixture(params=["connect-json", "grpc"])
def wire(request: pytest.FixtureRequest, controller: ControllerProcess) -> Iterator[Wire]:
    transport, _, codec = request.param.partition("-")
    opened = controller.wire(transport, codec or "proto")
    yield opened
    opened.close()


def test_no_group_for_the_device_is_failed_precondition(wire: Wire) -> None:
    with pytest.raises(WireError) as error:
        wire.launch(launch_request(f"a100-{wire.transport}", "true", resources=ResourceConfig.with_gpu("A100", count=8)))
    assert error.value.code == "failed_precondition"
    assert error.value.message.startswith(f"Job /alice/a100-{wire.transport} is unschedulable: no scaling group "
                                          "provides device gpu:a100 (available: cpu, tpu_v5p_8,")
    with pytest.raises(WireError, match="no groups in region us-east5"):
        wire.launch(launch_request("east", "true", resources=ResourceConfig.with_tpu("v5p-8", regions=["us-east5"])))
    with pytest.raises(WireError, match="no matching scaling group has enough per-VM capacity"):
        wire.launch(launch_request("huge", "true", resources=ResourceConfig(cpu=500, ram="1g", disk="1g")))


def test_an_eight_task_v4_32_gang_stays_pending_with_irises_reason(wire: Wire) -> None:
    """As on the genuine Iris: accepted (8 is a multiple of 4 VMs), never placed; other jobs run past it."""
    held = wire.launch(launch_request(f"v4x2-{wire.transport}", "true",
                                      resources=ResourceConfig.with_tpu("v4-32", slice_count=2)))
    ran = wire.launch(launch_request(f"v4x1-{wire.transport}", "true", resources=ResourceConfig.with_tpu("v4-32")))
    assert wire.wait(ran, TERMINAL).state == J.JOB_STATE_SUCCEEDED
    status = wire.status(held)
    assert status.state == J.JOB_STATE_PENDING
    assert status.pending_reason == (
        "Scheduler: No workers match constraints: ['device-type', 'device-variant']\n\n"
        "Autoscaler: Unsatisfied autoscaler demand: coschedule_mismatch: job needs 8 tasks coscheduled but no "
        "matching group has num_vms=8 (tpu_v4_32=4)")
    assert {t.state for t in wire.tasks(held)} == {J.TASK_STATE_PENDING}
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=held))
    assert wire.wait(held, TERMINAL).state == J.JOB_STATE_KILLED


def test_placeable_shapes_run(wire: Wire) -> None:
    for shape, resources in (("v5p16", ResourceConfig.with_tpu("v5p-16")),
                             ("v5p8x2", ResourceConfig.with_tpu("v5p-8", slice_count=2)),
                             ("h100x2", ResourceConfig.with_gpu("H100", count=8, replicas=2))):
        job_id = wire.launch(launch_request(f"{shape}-{wire.transport}", "true", resources=resources))
        assert wire.wait(job_id, TERMINAL).state == J.JOB_STATE_SUCCEEDED, shape


def test_a_held_gang_times_out_like_any_pending_job(wire: Wire) -> None:
    request = launch_request(f"timeout-{wire.transport}", "true",
                             resources=ResourceConfig.with_tpu("v4-32", slice_count=2))
    request.scheduling_timeout.milliseconds = 300
    status = wire.wait(wire.launch(request), TERMINAL)
    assert status.state == J.JOB_STATE_UNSCHEDULABLE


def test_capacity_rpcs_describe_the_profile(wire: Wire) -> None:
    status = wire.call("GetAutoscalerStatus", C.GetAutoscalerStatusRequest()).status
    groups = {g.name: g for g in status.groups}
    assert next(iter(groups)) == "cpu" and "tpu_v4_32" in groups
    v4 = groups["tpu_v4_32"]
    assert (v4.device_type, v4.device_variant, v4.region, v4.availability_status) == (
        "tpu", "v4-32", "us-central2", "available")
    assert v4.slice_state_counts["ready"] == 0 and not v4.slices
    gpu = groups["gpu_h100x8"]
    assert gpu.slice_state_counts["ready"] == 4 and gpu.availability_status == "at_max_slices"
    assert [s.state for s in gpu.slices] == ["ready"] * 4 and gpu.slices[0].vms[0].worker_healthy
    workers = wire.call("ListWorkers", C.ListWorkersRequest()).workers
    assert [w.worker_id for w in workers] == [f"gpu_h100x8-{i}-w0" for i in range(4)]
    metadata = workers[0].metadata
    assert (metadata.cpu_count, metadata.device.gpu.variant, metadata.device.gpu.count) == (128, "H100", 8)
    assert metadata.attributes["leafgroup"].string_value == "local-leaf-0"
    assert metadata.attributes["scale-group"].string_value == "gpu_h100x8"
    page = wire.call("ListWorkers", C.ListWorkersRequest(query=C.WorkerQuery(limit=1)))
    assert (len(page.workers), page.total_count, page.has_more) == (1, 4, True)


def test_a_user_profile_changes_what_runs(tmp_path: Path) -> None:
    profile = tmp_path / "big.yaml"
    profile.write_text(
        "name: big\nscale_groups:\n"
        "  v4_64: {num_vms: 8, max_slices: 1, resources: {device_type: tpu, device_variant: v4-64, device_count: 4,"
        " cpu: 240, ram: 400GB, disk: 100GB, capacity_type: preemptible}, slice_template: {gcp: {zone: us-central2-b}}}\n")
    started = start_controller(tmp_path / "state", "--slots", "8", "--cluster-config", str(profile))
    try:
        wire = started.wire()
        job_id = wire.launch(launch_request("v4-64", "true", resources=ResourceConfig.with_tpu("v4-64")))
        assert wire.wait(job_id, TERMINAL).state == J.JOB_STATE_SUCCEEDED
        with pytest.raises(WireError, match="no scaling group provides device tpu:v4-32 .available: v4_64."):
            wire.launch(launch_request("v4-32", "true", resources=ResourceConfig.with_tpu("v4-32")))
        assert "cluster=big" in started.log()
        wire.close()
    finally:
        stop_quietly(started)


def test_an_unreadable_profile_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "fray_jupyter.controller", "--state-dir", str(tmp_path),
                             "--cluster-config", str(tmp_path / "missing.yaml")], capture_output=True, text=True,
                            timeout=60, check=False)
    assert result.returncode == 2
    assert result.stderr.strip().startswith("fray controller: cannot read cluster config")
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_profile_may_come_from_the_environment(tmp_path: Path) -> None:
    """FRAY_CLUSTER_CONFIG names the profile of a controller started without --cluster-config (e.g. the
    one connect() starts for a kernel)."""
    profile = tmp_path / "cpu-only.yaml"
    profile.write_text("name: cpu-only\nscale_groups:\n  cpu: {num_vms: 1, max_slices: 1, resources: "
                       "{device_type: cpu, capacity_type: on-demand, cpu: 8}, slice_template: {local: {}}}\n")
    started = start_controller(tmp_path / "state", "--slots", "2", env={"FRAY_CLUSTER_CONFIG": str(profile)})
    try:
        wire = started.wire()
        with pytest.raises(WireError, match="no scaling group provides device tpu:v5p-8 .available: cpu."):
            wire.launch(launch_request("tpu", "true", resources=ResourceConfig.with_tpu("v5p-8")))
        wire.close()
        assert "cluster=cpu-only" in started.log()
    finally:
        stop_quietly(started)


@pytest.mark.parametrize(("resources", "region"), [
    (ResourceConfig.with_tpu("v5p-8"), "us-central1"),
    (ResourceConfig.with_tpu("v6e-8"), "europe-west4"),
    (ResourceConfig(), ""),  # the cpu group has no region
])
def test_a_task_stands_in_the_region_of_the_group_it_is_routed_to(resources: ResourceConfig, region: str) -> None:
    """``IRIS_WORKER_REGION``'s value: the region of the first group the autoscaler routes the job to."""
    from fray_jupyter import Entrypoint, JobRequest, plan
    from fray_jupyter.cluster.profile import load_profile
    from fray_jupyter.controller.engine.cluster import Cluster

    job = JobRequest(name="r", entrypoint=Entrypoint.from_binary("true"), resources=resources)
    assert Cluster(load_profile()).placed_region(plan(job, user="a").request) == region
