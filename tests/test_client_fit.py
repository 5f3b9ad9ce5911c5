""""Will it fit?": verdicts from the two capacity responses, against the embedded controller's profile
(pure), a hand-made live cluster, and the real controller process (cached)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from fray_jupyter import Entrypoint, JobRequest, plan
from fray_jupyter import ResourceConfig as RC
from fray_jupyter.client import FrayClient, FrayError
from fray_jupyter.client.fit import CACHE, fit
from fray_jupyter.cluster.profile import load_profile
from fray_jupyter.controller.engine.cluster import Cluster
from fray_jupyter.iris.fit import fit_from
from fray_jupyter.iris.proto import controller_pb2, vm_pb2
from fray_jupyter.planning import Plan
from tests.controller_harness import ControllerProcess, start_controller, stop_quietly

C = controller_pb2.Controller
PROFILE = load_profile()
SHAPE = Cluster(PROFILE)
STATUS = SHAPE.autoscaler_status(C.GetAutoscalerStatusRequest())
WORKERS = SHAPE.list_workers(C.ListWorkersRequest())


def p(rc: RC) -> Plan:
    return plan(JobRequest(name="f", entrypoint=Entrypoint.from_binary("true"), resources=rc), user="a")


def test_verdicts_on_the_built_in_profile() -> None:
    never = fit_from(p(RC.with_tpu("v4-32", slice_count=2)), STATUS, WORKERS, PROFILE)
    assert never.verdict == "never" and never.line.startswith(
        "fit: never — a v4-32 slice has 4 VMs: this 8-task gang can never be placed by Iris 0.2.227")
    scale = fit_from(p(RC.with_tpu("v4-32")), STATUS, WORKERS, PROFILE)
    assert scale.verdict == "after-scale-up" and [str(c) for c in scale.candidates] == [
        "tpu_v4_32 (us-central2, preemptible, 0/2 slices ready)"]
    now = fit_from(p(RC.with_gpu("H100", count=8, replicas=2)), STATUS, WORKERS, PROFILE)
    assert now.verdict == "now" and now.candidates[0].name == "gpu_h100x8" and now.candidates[0].ready == 4
    five = fit_from(p(RC.with_gpu("H100", count=8, replicas=5)), STATUS, WORKERS, PROFILE)
    assert five.verdict == "never" and five.reason.startswith("coschedule_mismatch: job needs 5 tasks coscheduled")


@pytest.mark.parametrize(("rc", "reason"), [
    (RC.with_gpu("A100", count=8), "no scaling group provides device gpu:a100"),
    (RC.with_tpu("v5p-8", regions=["europe-west4"]), "no groups in region europe-west4"),
    (RC.with_tpu("v5p-8", preemptible=False), "no non-preemptible group provides device tpu:v5p-8"),
    (RC(cpu=1, ram="2000g"), "no matching scaling group has enough per-VM capacity"),
])
def test_never_says_irises_reason(rc: RC, reason: str) -> None:
    result = fit_from(p(rc), STATUS, WORKERS, PROFILE)
    assert result.verdict == "never" and reason in result.reason


def test_without_a_profile_the_wire_is_enough_and_unknowns_are_said() -> None:
    result = fit_from(p(RC.with_tpu("v5p-16")), STATUS, WORKERS)
    assert result.verdict == "after-scale-up"
    assert str(result.candidates[0]) == "tpu_v5p_16 (us-central1, capacity type unknown, 0/? slices ready)"


def _live_cluster(*, busy: bool, at_max: bool) -> tuple[C.GetAutoscalerStatusResponse, C.ListWorkersResponse]:
    """A real cluster's answer: one v5p-16 slice up (2 workers sharing a tpu-name)."""
    group = vm_pb2.ScaleGroupStatus(name="v5p16-east", device_type="tpu", device_variant="v5p-16", region="us-east5",
                                    availability_status="at_max_slices" if at_max else "available")
    group.slice_state_counts["ready"] = 1
    workers = C.ListWorkersResponse()
    for index in range(2):
        worker = workers.workers.add(worker_id=f"w{index}", healthy=True, scale_group="v5p16-east")
        worker.metadata.cpu_count, worker.metadata.memory_bytes = 208, 448 * 2**30
        worker.metadata.device.tpu.variant, worker.metadata.device.tpu.count = "v5p-16", 4
        for key, value in (("tpu-name", "slice-a"), ("device-type", "tpu"), ("device-variant", "v5p-16"),
                           ("preemptible", "false"), ("region", "us-east5"), ("zone", "us-east5-a")):
            worker.metadata.attributes[key].string_value = value
        worker.metadata.attributes["tpu-worker-id"].int_value = index
        if busy:
            worker.running_job_ids.append("/b/other")
    return C.GetAutoscalerStatusResponse(status=vm_pb2.AutoscalerStatus(groups=[group])), workers


def test_live_workers_decide_now_and_at_max() -> None:
    job = p(RC.with_tpu("v5p-16"))
    assert fit_from(job, *_live_cluster(busy=False, at_max=False)).verdict == "now"
    waiting = fit_from(job, *_live_cluster(busy=True, at_max=True))
    assert waiting.verdict == "after-scale-up" and "at max_slices" in waiting.reason
    assert str(waiting.candidates[0]) == "v5p16-east (us-east5, on_demand, 1/? slices ready)"
    # the capacity type read off a live worker is checked: a preemptible-only job does not fit
    zone = fit_from(p(RC.with_tpu("v5p-16", zone="us-east5-b")), *_live_cluster(busy=False, at_max=False))
    assert zone.verdict == "never" and "no groups in zone us-east5-b" in zone.reason


@pytest.mark.parametrize(("rc", "fact", "with_profile"), [
    (RC.with_tpu("v5p-8", zone="us-central1-a"), "tpu_v5p_8's zone", "after-scale-up"),
    (RC.with_tpu("v5p-8", zone="us-central1-b"), "tpu_v5p_8's zone", "never"),
    (RC.with_tpu("v5p-8", preemptible=False), "tpu_v5p_8's capacity type", "never"),
    (RC.with_tpu("v5p-8", ram="2000g"), "tpu_v5p_8's per-VM cpu/ram/disk", "never"),
    (RC(cpu=300, ram="8g"), "cpu's per-VM cpu/ram/disk", "never"),
])
def test_a_fact_the_wire_does_not_carry_never_decides(rc: RC, fact: str, with_profile: str) -> None:
    """Without a profile, a group with no live worker has an unknown zone / capacity type / per-VM size:
    the verdict is ``after-scale-up``, not confident, naming the fact (never ``never`` from missing data);
    with the profile it is exact and confident."""
    blind = fit_from(p(rc), STATUS, WORKERS)
    assert blind.verdict == "after-scale-up" and not blind.confident and fact in blind.unknown
    assert f"(unknown: this controller does not report {fact}" in blind.reason
    exact = fit_from(p(rc), STATUS, WORKERS, PROFILE)
    assert exact.verdict == with_profile and exact.confident


def test_reported_facts_decide_confidently_without_a_profile() -> None:
    """``never`` from facts on the wire (variant, region, gang size) and ``now`` from live workers are
    confident; so is ``after-scale-up`` on a group whose live workers report what the job depends on."""
    for rc in (RC.with_gpu("A100", count=8), RC.with_tpu("v5p-8", regions=["europe-west4"]),
               RC.with_tpu("v4-32", slice_count=2)):
        result = fit_from(p(rc), STATUS, WORKERS)
        assert result.verdict == "never" and result.confident, result
    now = fit_from(p(RC.with_gpu("H100", count=8, replicas=2)), STATUS, WORKERS)
    assert now.verdict == "now" and now.confident
    waiting = fit_from(p(RC.with_tpu("v5p-16")), *_live_cluster(busy=True, at_max=True))
    assert waiting.verdict == "after-scale-up" and waiting.confident  # its live workers report every fact


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    started = start_controller(tmp_path_factory.mktemp("fit"), "--slots", "4")
    yield started
    stop_quietly(started)


def test_fit_against_the_embedded_controller_is_cached(controller: ControllerProcess) -> None:
    CACHE.clear()
    with FrayClient(controller.info.url, controller.info.token) as client:
        assert fit(p(RC.with_tpu("v4-32", slice_count=2)), client).verdict == "never"
        assert fit(p(RC.with_tpu("v5p-8")), client).verdict == "after-scale-up"
        calls: list[str] = []
        original = client.autoscaler_status
        client.autoscaler_status = lambda: calls.append("x") or original()  # type: ignore[method-assign]
        assert fit(p(RC.with_tpu("v6e-8", regions=["europe-west4"])), client).verdict == "after-scale-up"
        assert calls == []  # the shape came from the cache
        assert fit(p(RC.with_tpu("v6e-8")), client, max_age=0).verdict == "after-scale-up" and calls == ["x"]


def test_the_embedded_controller_reports_its_exact_profile(controller: ControllerProcess) -> None:
    """``fit(plan, client)`` with no profile reads the one the embedded controller reports, so facts the
    wire leaves out (a zone, a capacity type, per-VM sizes) give the exact verdict."""
    CACHE.clear()
    with FrayClient(controller.info.url, controller.info.token) as client:
        assert client.cluster_profile() == PROFILE
        for rc in (RC.with_tpu("v5p-8", zone="us-central1-a"), RC.with_tpu("v5p-8", zone="us-central1-b"),
                   RC.with_tpu("v5p-8", preemptible=False), RC(cpu=300, ram="8g")):
            reported = fit(p(rc), client, max_age=0)
            assert reported == fit_from(p(rc), STATUS, WORKERS, PROFILE) and reported.confident


def test_no_controller_is_a_fray_error() -> None:
    CACHE.clear()
    with FrayClient("http://127.0.0.1:9", None, timeout=2, retry_for=0) as client, pytest.raises(FrayError):
        fit(p(RC()), client)
