"""Iris 0.2.227's placement rules as pure functions (Iris's routing and scheduler, as the twin shows them)."""

from __future__ import annotations

from fray_jupyter import Entrypoint, JobRequest, plan
from fray_jupyter import ResourceConfig as RC
from fray_jupyter.cluster.profile import ClusterProfile, ScaleGroup, load_profile
from fray_jupyter.iris import placement as P
from fray_jupyter.iris import placement_workers as W
from fray_jupyter.iris.proto import controller_pb2, job_pb2

PROFILE = load_profile()


def request(rc: RC, name: str = "t") -> controller_pb2.Controller.LaunchJobRequest:
    return plan(JobRequest(name=name, entrypoint=Entrypoint.from_binary("true"), resources=rc), user="a").request


def names(verdict: P.Verdict) -> list[str]:
    return [g.name for g in verdict.groups]


# -- a coscheduled job is one gang, placed only where a group's num_vms is its size --------------------
def test_v4_32_times_two_is_one_gang_never_placed() -> None:
    r = request(RC.with_tpu("v4-32", slice_count=2))
    assert P.gangs(r) == (P.Gang(tuple(range(8)), "tpu-name"),)
    assert P.gang_error(r) is not None
    assert P.launch_refusal(r, PROFILE) is None  # 8 is a multiple of 4: LaunchJob accepts it
    assert P.route(r, PROFILE).reason == ("coschedule_mismatch: job needs 8 tasks coscheduled but no matching group "
                                          "has num_vms=8 (tpu_v4_32=4)")
    assert W.pending_reason(r, PROFILE) == (
        "Scheduler: No workers match constraints: ['device-type', 'device-variant']\n\n"
        "Autoscaler: Unsatisfied autoscaler demand: coschedule_mismatch: job needs 8 tasks coscheduled but no "
        "matching group has num_vms=8 (tpu_v4_32=4)")


def test_v5p_16_and_v4_32_times_one_are_one_gang_each() -> None:
    for rc, group in ((RC.with_tpu("v5p-16"), "tpu_v5p_16"), (RC.with_tpu("v4-32"), "tpu_v4_32")):
        r = request(rc)
        assert len(P.gangs(r)) == 1 and P.gang_error(r) is None
        assert names(P.route(r, PROFILE)) == [group] and W.pending_reason(r, PROFILE) is None


def test_v5p_8_times_two_is_two_independent_tasks() -> None:
    r = request(RC.with_tpu("v5p-8", slice_count=2))
    assert P.gangs(r) == (P.Gang((0,), None), P.Gang((1,), None))
    assert names(P.route(r, PROFILE)) == ["tpu_v5p_8"] and W.never_reason(r, PROFILE) is None


# -- groups ---------------------------------------------------------------------------------------------
def test_alternatives_route_to_every_listed_variant() -> None:
    r = request(RC.with_tpu(["v5p-8", "v4-8"]))
    assert names(P.route(r, PROFILE)) == ["tpu_v5p_8", "tpu_v4_8"]


def test_region_preemptible_and_zone_reasons_are_irises() -> None:
    east = P.launch_refusal(request(RC.with_tpu("v5p-8", regions=["us-east5"]), "e"), PROFILE)
    assert east == P.Refusal("failed_precondition", "Job /a/e is unschedulable: no groups in region us-east5 "
                             "(constraints: [device-type==tpu, device-variant==v5p-8, region==us-east5])")
    steady = P.launch_refusal(request(RC.with_tpu("v5p-8", preemptible=False)), PROFILE)
    assert steady is not None and "no non-preemptible group provides device tpu:v5p-8" in steady.message
    zone = P.launch_refusal(request(RC.with_tpu("v5p-8", zone="us-central1")), PROFILE)
    assert zone is not None and "'us-central1' looks like a region, not a zone; use a region constraint" in zone.message
    assert P.launch_refusal(request(RC.with_tpu("v6e-8", regions=["europe-west4"])), PROFILE) is None


def test_unknown_device_is_refused_naming_the_groups() -> None:
    refusal = P.launch_refusal(request(RC.with_gpu("A100", count=8)), PROFILE)
    assert refusal is not None and refusal.code == "failed_precondition"
    assert "no scaling group provides device gpu:a100 (available: cpu, tpu_v5p_8," in refusal.message


def test_per_vm_capacity() -> None:
    big = request(RC.with_cpu(cpu=500))
    refusal = P.launch_refusal(big, PROFILE)
    assert refusal is not None and "no matching scaling group has enough per-VM capacity: cpu (cpu: need 500000, " \
                                   "available 16000)" in refusal.message
    # a CPU job fits any group: 64 cores go to the TPU/GPU hosts, not the 16-core cpu group
    assert "cpu" not in names(P.route(request(RC.with_cpu(cpu=64)), PROFILE))
    assert names(P.route(request(RC()), PROFILE))[0] == "cpu"


def test_coscheduled_size_must_divide_by_some_group() -> None:
    r = request(RC.with_tpu("v4-32"))
    r.replicas = 6
    refusal = P.launch_refusal(r, PROFILE)
    assert refusal is not None and "job requires 6 coscheduled replicas but no matching scaling group has a " \
                                   "compatible size" in refusal.message and "{'tpu_v4_32': 4}" in refusal.message


def test_warm_gpu_workers_hold_a_small_leafgroup_gang() -> None:
    two = request(RC.with_gpu("H100", count=8, replicas=2))
    assert P.route(two, PROFILE).reason is not None  # no 2-VM group for the autoscaler …
    assert W.never_reason(two, PROFILE) is None  # … but two warm workers share leafgroup local-leaf-0
    five = request(RC.with_gpu("H100", count=8, replicas=5))
    reason = W.pending_reason(five, PROFILE)
    assert reason is not None and "need 5 workers in same 'leafgroup' group, largest group has 4" in reason


def test_chip_count_and_cluster_pin_are_invalid_arguments() -> None:
    r = request(RC.with_tpu("v5p-8"))
    r.resources.device.tpu.count = 8
    refusal = P.launch_refusal(r, PROFILE)
    assert refusal is not None and refusal.code == "invalid_argument" and "TPU chip count mismatch" in refusal.message
    pinned = request(RC(target_cluster="east"))
    refusal = P.launch_refusal(pinned, PROFILE)
    assert refusal == P.Refusal("invalid_argument",
                                "Job /a/t pins cluster 'east', which is not a configured federation peer.")


def test_explicit_canonical_constraint_replaces_the_derived_one() -> None:
    r = request(RC.with_tpu("v5p-8"))
    r.constraints.add(key="device-variant", op=job_pb2.CONSTRAINT_OP_IN).values.add(string_value="V4-8")
    assert [str(rule) for rule in P.effective_rules(r)] == ["device-type==tpu", "device-variant in {v4-8}"]
    soft = request(RC.with_tpu("v5p-8"))
    soft.constraints.add(key="region", op=job_pb2.CONSTRAINT_OP_EQ, mode=job_pb2.CONSTRAINT_MODE_PREFERRED,
                         value=job_pb2.AttributeValue(string_value="mars"))
    assert names(P.route(soft, PROFILE)) == ["tpu_v5p_8"]  # preferred rules never filter groups


def test_max_slices_zero_is_no_capacity() -> None:
    group = PROFILE.group("tpu_v5p_8")
    assert group is not None
    empty = ClusterProfile("x", (ScaleGroup(**{**group.__dict__, "max_slices": 0}),))
    assert P.route(request(RC.with_tpu("v5p-8")), empty).reason == "no_capacity: tpu_v5p_8=at_max_slices"


def test_slice_workers_carry_irises_attributes() -> None:
    group = PROFILE.group("tpu_v5p_16")
    assert group is not None
    workers = W.slice_workers(group, 1)
    assert [w.worker_id for w in workers] == ["tpu_v5p_16-1-w0", "tpu_v5p_16-1-w1"]
    assert workers[1].attributes == {
        "device-type": "tpu", "device-variant": "v5p-16", "preemptible": "true", "region": "us-central1",
        "zone": "us-central1-a", "scale-group": "tpu_v5p_16", "tpu-name": "tpu_v5p_16-1", "tpu-worker-id": 1,
        "tpu-topology": "v5p-16", "tpu-vm-count": 2}


def test_a_worker_only_constraint_no_worker_matches_stays_pending() -> None:
    """tpu-name routes to no group (Iris skips it there) but filters workers: a slice's tpu-name is
    its own generated id, so pinning another value is never placed."""
    r = request(RC.with_tpu("v5p-8"))
    r.constraints.add(key="tpu-name", op=job_pb2.CONSTRAINT_OP_EQ).value.string_value = "my-slice"
    assert P.launch_refusal(r, PROFILE) is None and P.route(r, PROFILE).reason is None
    assert W.never_reason(r, PROFILE) is not None
    assert W.pending_reason(r, PROFILE) == (
        "Scheduler: No workers match constraints: ['device-type', 'device-variant', 'tpu-name']")
    exists = request(RC.with_tpu("v5p-8"))
    exists.constraints.add(key="tpu-name", op=job_pb2.CONSTRAINT_OP_EXISTS)
    assert W.never_reason(exists, PROFILE) is None
