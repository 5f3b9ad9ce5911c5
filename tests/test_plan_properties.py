"""Property tests over thousands of generated jobs: every TPU type x slice counts, GPU models x
counts x replicas (1-70) x alternatives, region/zone/cluster/preemptible choices, environments and
job fields. Each input gives either a ``Plan`` whose invariants hold or a one-line ``ValueError``;
never any other exception."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf import json_format, text_format
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from fray_jupyter import Plan, plan
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.resources import (
    CpuConfig,
    Entrypoint,
    EnvironmentConfig,
    GpuConfig,
    JobRequest,
    ResourceConfig,
    TpuConfig,
)
from fray_jupyter.resources.devices import tpu_family
from fray_jupyter.resources.tables import TPU_HBM_BYTES_PER_CHIP, TPU_TOPOLOGIES, TPU_TOPOLOGY_BY_NAME

LaunchJobRequest = controller_pb2.Controller.LaunchJobRequest
RC = ResourceConfig
USER = "alice"

TPU_TYPES = [t.name for t in TPU_TOPOLOGIES]
BAD_TPU_TYPES = ["v5p-7", "v7-8", "v5e-4", "V4-8", ""]
GPU_VARIANTS = [
    "H100",
    "h100",
    "H200",
    "A100",
    "A100-80G",
    "L4",
    "B200",
    "auto",
    "GB200",
    "gb200",
    "GB300",
    "H 100",
]
REGIONS = [
    None,
    [],
    ["us-central1"],
    ["us-central1", "us-east5"],
    ["*"],
    ["*", "us-east5"],
    [" US-Central2 "],
    "us-central1",
    ["us-east5", ""],
]
ZONES = [None, "", "us-central1-a", "US-EAST1-D"]
CLUSTERS = [None, "", "cw-east", "CW-West"]
SIZES = ["4g", "512m", "16GB", "1.5g", "3 gigs", "1t", "100g", "2048", "lots"]
CPUS = [0.5, 1, 1.005, 2.9999, 3.9, 4, 8, 32, 0, -1]
SOURCES = {"user", "device", "iris", "iris-topology"}
SETTINGS: dict[str, Any] = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow],
}


def shape(name: str) -> tuple[int, int]:
    info = TPU_TOPOLOGY_BY_NAME[name]
    return (info.vm_count, info.chips_per_vm)


placement = st.fixed_dictionaries(
    {
        "regions": st.sampled_from(REGIONS),
        "zone": st.sampled_from(ZONES),
        "target_cluster": st.sampled_from(CLUSTERS),
        "preemptible": st.booleans(),
    }
)

environment = st.one_of(
    st.none(),
    st.builds(
        lambda env_vars, extras, scripts, pip, image: EnvironmentConfig(
            workspace=None if image else "/ws",
            docker_image="img" if image else None,
            env_vars=env_vars,
            extras=extras,
            setup_scripts=scripts,
            pip_packages=pip,
        ),
        env_vars=st.dictionaries(
            st.sampled_from(
                [
                    "JAX_PLATFORMS",
                    "IRIS_SLICE_COUNT",
                    "IRIS_TASKS_PER_SLICE",
                    "TOKENIZERS_PARALLELISM",
                    "NCCL_DEBUG",
                    "MY_VAR",
                    "LIBTPU_INIT_ARGS",
                ]
            ),
            st.sampled_from(["", "1", "tpu,cpu", "x y"]),
            max_size=3,
        ),
        extras=st.lists(st.sampled_from(["gpu", "tpu", "marin:gpu"]), max_size=2, unique=True),
        scripts=st.sampled_from([None, [], ["echo setup"], ["  ", "echo b"]]),
        pip=st.sampled_from([[], ["numpy"]]),
        image=st.booleans(),
    ),
)

job_fields = st.fixed_dictionaries(
    {
        "replicas": st.one_of(
            st.none(), st.none(), st.integers(min_value=1, max_value=70), st.sampled_from([0, -1])
        ),
        "processes_per_task": st.sampled_from([1, 1, 1, 2, 3, 4, 8]),
        "priority": st.sampled_from([0, 1, 2, 3, 4, "batch", "interactive", 9]),
        "max_retries_failure": st.integers(min_value=0, max_value=5),
        "timeout": st.sampled_from([None, 30, 1.5]),
    }
)


@st.composite
def tpu_types(draw: st.DrawFn) -> list[str]:
    primary = draw(st.sampled_from(TPU_TYPES + BAD_TPU_TYPES))
    mode = draw(st.sampled_from(["single", "single", "same shape", "anything"]))
    if mode == "single":
        return [primary]
    if mode == "same shape" and primary in TPU_TOPOLOGY_BY_NAME:
        peers = [t for t in TPU_TYPES if shape(t) == shape(primary)]
        return [primary, *draw(st.lists(st.sampled_from(peers), min_size=1, max_size=3))]
    return [primary, *draw(st.lists(st.sampled_from(TPU_TYPES + BAD_TPU_TYPES), min_size=1, max_size=2))]


def outcome(build: Callable[[], JobRequest]) -> tuple[JobRequest, Plan] | None:
    """The job and its plan, or None after checking the ValueError is a proper message. Any other
    exception escapes and fails the test."""
    try:
        job = build()
        result = job, plan(job, user=USER)
    except ValueError as error:
        event("ValueError")
        message = str(error)
        assert not isinstance(error, ValidationError), f"pydantic text leaked: {message}"
        assert message.strip(), "empty error message"
        assert "\n" not in message, f"multi-line error: {message!r}"
        return None
    event("plan")
    return result


def check_invariants(job: JobRequest, p: Plan) -> None:
    resources = job.resources
    device = resources.device
    request = p.request
    requested = job.replicas

    # replica arithmetic (Iris's adjust_tpu_replicas)
    if isinstance(device, TpuConfig):
        vms = device.vm_count()
        assert p.replicas == (vms if vms > 1 and requested == 1 else requested)
        assert p.replicas % vms == 0
    else:
        assert p.replicas == requested
    assert request.replicas == p.replicas

    # every task (hence every chip) is in exactly one group
    tasks = [t for group in p.groups for t in group.tasks]
    assert sorted(tasks) == list(range(p.replicas))
    assert all(group.tasks for group in p.groups)
    assert (
        p.total_chips
        == p.chips_per_task * p.replicas
        == sum(len(g.tasks) for g in p.groups) * p.chips_per_task
    )
    if isinstance(device, TpuConfig):
        assert p.chips_per_task == device.chip_count()
        # Iris places a coscheduled job as ONE gang; a gang larger than one slice is never placed
        gang = p.group_by is not None
        assert [len(g.tasks) for g in p.groups] == ([p.replicas] if gang else [1] * p.replicas)
        assert bool(p.errors) == (gang and p.replicas != device.vm_count())
        assert p.hbm_bytes == p.total_chips * TPU_HBM_BYTES_PER_CHIP[tpu_family(device.variant)]
    elif isinstance(device, GpuConfig):
        assert p.chips_per_task == device.count and p.hbm_bytes is None
    else:
        assert p.chips_per_task == 0 and p.hbm_bytes is None and p.peak_flops is None

    # coscheduling
    if (
        requested <= 1
        or isinstance(device, CpuConfig)
        or (isinstance(device, TpuConfig) and device.vm_count() == 1)
    ):
        assert p.group_by is None
    elif isinstance(device, TpuConfig):
        assert p.group_by == "tpu-name"
    else:
        assert p.group_by in {"leafgroup", "nvlink.domain", "nvlink.domain.sliced"}
    assert len(p.groups) == (1 if p.group_by else p.replicas)
    assert (request.coscheduling.group_by if request.HasField("coscheduling") else None) == p.group_by

    # the request round-trips unchanged, in every rendering
    parsed = LaunchJobRequest.FromString(p.request_bytes)
    assert parsed == request == p.translation.request
    assert parsed.SerializeToString(deterministic=True) == p.translation.request.SerializeToString(
        deterministic=True
    )
    assert p.request_size == len(p.request_bytes)
    assert text_format.Parse(p.request_text, LaunchJobRequest()) == request
    assert json_format.Parse(p.request_json, LaunchJobRequest()) == request
    assert request.name == f"/{USER}/{job.name}"

    # resources as sent
    millicores = int(resources.cpu * 1000)
    if isinstance(device, CpuConfig):
        assert p.cpu_millicores == millicores and not request.resources.HasField("device")
    else:
        assert p.cpu_millicores == max(4000, millicores) >= 4000
        kind = request.resources.device.WhichOneof("device")
        assert kind == device.kind and getattr(request.resources.device, kind).variant == device.variant
        assert getattr(request.resources.device, kind).count == device.chip_count()
    assert (p.memory_bytes, p.disk_bytes) == (resources.ram_bytes(), resources.disk_bytes())
    assert any(w.startswith("cpu raised") for w in p.warnings) == (p.cpu_millicores != millicores)

    # constraints on the wire: no ANY marker, values stripped and lowercased
    for constraint in request.constraints:
        assert not (constraint.key == "region" and constraint.op == job_pb2.CONSTRAINT_OP_EXISTS)
        values = [v.string_value for v in constraint.values]
        if constraint.HasField("value"):
            values.append(constraint.value.string_value)
        assert values and all(v == v.strip().lower() for v in values)
    assert len(request.constraints) == len(p.wire_constraints)

    # env: what is listed is what is sent, each with a source
    sent = dict(request.environment.env_vars)
    assert {v.name: v.value for v in p.env} == sent
    assert {v.source for v in p.env} <= SOURCES
    user_env = job.environment.env_vars if job.environment is not None else {}
    for name, value in user_env.items():
        if not name.startswith("IRIS_"):
            assert sent[name] == value
    for name, value in device.default_env_vars().items():
        assert sent[name] == user_env.get(name, value)
    slice_count = p.replicas // device.vm_count() if isinstance(device, TpuConfig) else 1
    if slice_count > 1:
        assert (sent["IRIS_SLICE_COUNT"], sent["IRIS_TASKS_PER_SLICE"]) == (
            str(slice_count),
            str(device.vm_count()),
        )
    else:
        assert "IRIS_SLICE_COUNT" not in sent and "IRIS_TASKS_PER_SLICE" not in sent

    assert all(w and "\n" not in w for w in p.warnings)


def make_job(
    resources: Callable[[], ResourceConfig],
    fields: dict[str, Any],
    env: EnvironmentConfig | None,
    name: str = "prop-job",
) -> Callable[[], JobRequest]:
    return lambda: JobRequest(
        name=name,
        entrypoint=Entrypoint.from_binary("python", ["train.py"]),
        resources=resources(),
        environment=env,
        **fields,
    )


@given(
    types=tpu_types(),
    slices=st.integers(min_value=1, max_value=8),
    where=placement,
    cpu=st.sampled_from([None, *CPUS]),
    env=environment,
)
@settings(max_examples=900, **SETTINGS)
def test_tpu_slices(types: list[str], slices: int, where: dict, cpu: float | None, env) -> None:
    kwargs = dict(where) if cpu is None else {**where, "cpu": cpu}
    result = outcome(make_job(lambda: RC.with_tpu(types, slice_count=slices, **kwargs), {}, env))
    if result is None:
        return
    job, p = result
    check_invariants(job, p)
    vms = TPU_TOPOLOGY_BY_NAME[types[0]].vm_count
    assert p.replicas == slices * vms
    assert p.total_chips == slices * TPU_TOPOLOGY_BY_NAME[types[0]].chip_count
    assert p.group_by == ("tpu-name" if vms > 1 else None)
    if len(types) > 1:
        assert p.wire_constraints[-1].key == "device-variant" and p.wire_constraints[-1].op == "IN"


@given(
    tpu=st.sampled_from(TPU_TYPES),
    fields=job_fields,
    where=placement,
    alternatives=st.one_of(st.none(), st.lists(st.sampled_from(TPU_TYPES), min_size=1, max_size=2)),
)
@settings(max_examples=500, **SETTINGS)
def test_direct_tpu_config_with_any_replicas(tpu: str, fields: dict, where: dict, alternatives) -> None:
    resources = lambda: RC(device=TpuConfig(tpu), device_alternatives=alternatives, **where)
    result = outcome(make_job(resources, fields, None))
    if result is not None:
        check_invariants(*result)


@given(
    variant=st.sampled_from(GPU_VARIANTS),
    count=st.integers(min_value=0, max_value=9),
    replicas=st.integers(min_value=1, max_value=70),
    where=placement,
    fields=job_fields,
    alternatives=st.one_of(st.none(), st.lists(st.sampled_from(GPU_VARIANTS), max_size=2)),
    cpu=st.sampled_from(CPUS),
    env=environment,
)
@settings(max_examples=900, **SETTINGS)
def test_gpu_jobs(
    variant: str, count: int, replicas: int, where: dict, fields: dict, alternatives, cpu: float, env
) -> None:
    fields = {k: v for k, v in fields.items() if k != "replicas"}
    resources = lambda: RC.with_gpu(
        variant, count=count, replicas=replicas, device_alternatives=alternatives, cpu=cpu, **where
    )
    result = outcome(make_job(resources, fields, env))
    if result is None:
        return
    job, p = result
    check_invariants(job, p)
    assert p.replicas == replicas
    if replicas > 1:
        assert p.group_by == (
            "leafgroup"
            if not variant.lower().startswith(("gb200", "gb300"))
            else "nvlink.domain"
            if replicas <= 16
            else "nvlink.domain.sliced"
        )


@given(
    where=placement,
    cpu=st.sampled_from(CPUS),
    ram=st.sampled_from(SIZES),
    disk=st.sampled_from(SIZES),
    fields=job_fields,
    env=environment,
    alternatives=st.one_of(st.none(), st.lists(st.sampled_from(["H100", "v5p-8"]), max_size=2)),
    name=st.sampled_from(["prop-job", "my job", "a/b", "123", "x.y_z"]),
)
@settings(max_examples=500, **SETTINGS)
def test_cpu_jobs_and_placement(
    where: dict, cpu: float, ram: str, disk: str, fields: dict, env, alternatives, name: str
) -> None:
    resources = lambda: RC.with_cpu(cpu=cpu, ram=ram, disk=disk, device_alternatives=alternatives, **where)
    result = outcome(make_job(resources, fields, env, name=name))
    if result is None:
        return
    job, p = result
    check_invariants(job, p)
    regions = where["regions"]
    fray_keys = [c.key for c in p.fray_constraints]
    assert fray_keys == sorted(fray_keys, key=["preemptible", "region", "zone", "cluster"].index)
    assert ("preemptible" in fray_keys) == (not where["preemptible"])
    if regions == ["*"]:
        assert "region" in fray_keys and "region" not in [c.key for c in p.wire_constraints]
