"""Conformance of ``iris.placement`` with Iris's own routing code (marin-iris 0.2.227), job by job:
for every request of a corpus and the built-in cluster profile, LaunchJob's gate (Iris's
``validate_tpu_request`` + ``job_feasibility`` on the constraints ``_inject_resource_constraints``
makes) and the autoscaler's verdict for one unit of demand (``route_demand``) give the same answer
and the same reason text as ours, on the built-in profile and on Marin's 82-group manifest. Iris's
functions run on ``ScalingGroup`` objects built by Iris's own ``parse_config`` / ``load_config``;
nothing is started."""

from __future__ import annotations

from typing import Any

import pytest

from fray_jupyter import Entrypoint, JobRequest, plan
from fray_jupyter import ResourceConfig as RC
from fray_jupyter.cluster.profile import load_profile
from fray_jupyter.iris import placement as ours
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from tests.conformance.iris_routing import their_groups, their_launch, their_route

PROFILES = {name: (load_profile(name), their_groups(name)) for name in ("default", "marin")}


def _request(rc: RC, **fields: Any) -> controller_pb2.Controller.LaunchJobRequest:
    request = plan(JobRequest(name="c", entrypoint=Entrypoint.from_binary("true"), resources=rc), user="u").request
    for key, value in fields.items():
        setattr(request, key, value)
    return request


def _with_constraint(rc: RC, key: str, op: int, *values: str, mode: int = 0) -> controller_pb2.Controller.LaunchJobRequest:
    request = _request(rc)
    constraint = request.constraints.add(key=key, op=op, mode=mode)
    if op == job_pb2.CONSTRAINT_OP_IN:
        constraint.values.extend(job_pb2.AttributeValue(string_value=v) for v in values)
    elif values:
        constraint.value.string_value = values[0]
    return request


IN, EQ = job_pb2.CONSTRAINT_OP_IN, job_pb2.CONSTRAINT_OP_EQ
CORPUS: dict[str, controller_pb2.Controller.LaunchJobRequest] = {
    "cpu": _request(RC()),
    "cpu x3": _request(RC(replicas=3)),
    "cpu 64 cores": _request(RC(cpu=64)),
    "cpu 500 cores": _request(RC(cpu=500)),
    "cpu huge disk": _request(RC(disk="5t")),
    "cpu non-preemptible": _request(RC(preemptible=False)),
    "cpu in europe": _request(RC(regions=["europe-west4"])),
    "v5p-8": _request(RC.with_tpu("v5p-8")),
    "v5p-8 x2": _request(RC.with_tpu("v5p-8", slice_count=2)),
    "v5p-8 us-east5": _request(RC.with_tpu("v5p-8", regions=["us-east5"])),
    "v5p-8 us-central1": _request(RC.with_tpu("v5p-8", regions=["us-central1"])),
    "v5p-8 two regions": _request(RC.with_tpu("v5p-8", regions=["us-east5", "us-central1"])),
    "v5p-8 zone a": _request(RC.with_tpu("v5p-8", zone="us-central1-a")),
    "v5p-8 zone b": _request(RC.with_tpu("v5p-8", zone="us-central1-b")),
    "v5p-8 zone as region": _request(RC.with_tpu("v5p-8", zone="us-central1")),
    "v5p-8 region as zone": _request(RC.with_tpu("v5p-8", regions=["us-central1-a"])),
    "v5p-8 non-preemptible": _request(RC.with_tpu("v5p-8", preemptible=False)),
    "v5p-8 alt v4-8": _request(RC.with_tpu(["v5p-8", "v4-8"])),
    "v5p-16": _request(RC.with_tpu("v5p-16")),
    "v5p-16 x2": _request(RC.with_tpu("v5p-16", slice_count=2)),
    "v4-32": _request(RC.with_tpu("v4-32")),
    "v4-32 x2": _request(RC.with_tpu("v4-32", slice_count=2)),
    "v4-32 x2 europe": _request(RC.with_tpu("v4-32", slice_count=2, regions=["europe-west4"])),
    "v4-32 six replicas": _request(RC.with_tpu("v4-32"), replicas=6),
    "v4-64": _request(RC.with_tpu("v4-64")),
    "v6e-8 europe": _request(RC.with_tpu("v6e-8", regions=["europe-west4"])),
    "v6e-8": _request(RC.with_tpu("v6e-8")),
    "v5litepod-4": _request(RC.with_tpu("v5litepod-4")),
    "v5p-8 big cpu": _request(RC.with_tpu("v5p-8", cpu=300)),
    "h100": _request(RC.with_gpu("H100", count=8)),
    "h100 x2": _request(RC.with_gpu("H100", count=8, replicas=2)),
    "h100 x5": _request(RC.with_gpu("H100", count=8, replicas=5)),
    "h100 16 gpus": _request(RC.with_gpu("H100", count=16)),
    "h100 non-preemptible": _request(RC.with_gpu("H100", count=8, preemptible=False)),
    "a100": _request(RC.with_gpu("A100", count=8)),
    "gb200 x16": _request(RC.with_gpu("GB200", count=4, replicas=16)),
    "explicit variant IN": _with_constraint(RC.with_tpu("v5p-8"), "device-variant", IN, "v4-8", "v6e-8"),
    "explicit region EQ upper": _with_constraint(RC.with_tpu("v5p-8"), "region", EQ, "US-CENTRAL1"),
    "soft region": _with_constraint(RC.with_tpu("v5p-8"), "region", EQ, "mars", mode=job_pb2.CONSTRAINT_MODE_PREFERRED),
    "worker-only key": _with_constraint(RC.with_tpu("v5p-8"), "tpu-name", EQ, "x"),
    "chip mismatch": _with_constraint(RC.with_tpu("v6e-8"), "device-variant", EQ, "v6e-4"),
}


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_launch_gate_matches_iris(name: str, profile: str) -> None:
    request, (mine_profile, groups) = CORPUS[name], PROFILES[profile]
    refusal = ours.launch_refusal(request, mine_profile)
    mine = None
    if refusal is not None:
        reason = refusal.message
        prefix = f"Job {request.name} is unschedulable: "
        if reason.startswith(prefix):
            reason = reason[len(prefix):].rsplit(" (constraints: [", 1)[0]
        mine = f"{refusal.code}: {reason}"
    assert mine == their_launch(request, groups)


@pytest.mark.parametrize("profile", sorted(PROFILES))
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_route_matches_iris(name: str, profile: str) -> None:
    request, (mine_profile, groups) = CORPUS[name], PROFILES[profile]
    if their_launch(request, groups) is not None:
        return  # refused at LaunchJob: never routed
    assert ours.route(request, mine_profile).reason == their_route(request, groups)
