"""Job specs as plain data, built the same way with either Fray implementation.

``build(types, spec)`` calls the same Fray API on ``fray_jupyter.resources`` or on Marin's
``fray.types``; hypothesis strategies generate specs over every TPU type x slices, GPU models,
counts, replicas and alternatives, regions, zones, preemptibility, environments and job fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from types import ModuleType
from typing import Any

from hypothesis import strategies as st

from fray_jupyter.resources.tables import TPU_TOPOLOGIES

TPU_TYPES = [t.name for t in TPU_TOPOLOGIES]
GPU_VARIANTS = ["H100", "h100", "A100", "A100-80G", "L4", "auto", "GB200", "gb300", "B200"]
REGIONS = [None, [], ["us-central1"], ["us-central1", "us-east5"], ["*"], ["*", "us-east5"], ["US-Central2"]]
ZONES = [None, "", "us-central1-a", "US-EAST1-D"]
SIZES = ["4g", "512m", "16GB", "1.5g", "3 gigs", "1t", "100g", "2048"]


@dataclass(frozen=True)
class Spec:
    """One job, described without reference to either implementation."""

    kind: str
    tpu_types: tuple[str, ...] = ()
    slice_count: int = 1
    gpu: str = "H100"
    gpu_count: int = 1
    resource_kwargs: dict[str, Any] = field(default_factory=dict)
    job_kwargs: dict[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None
    env: dict[str, Any] | None = None
    argv: tuple[str, ...] = ("echo", "hello")
    name: str = "conf-job"


def build(types: ModuleType, spec: Spec, duration: Any = None) -> Any:
    """The ``JobRequest`` for ``spec`` built with ``types`` (either Fray). ``duration`` converts
    seconds to that implementation's timeout type."""
    rc = types.ResourceConfig
    kwargs = dict(spec.resource_kwargs)
    if spec.kind == "tpu":
        resources = rc.with_tpu(list(spec.tpu_types) if len(spec.tpu_types) > 1 else spec.tpu_types[0],
                                slice_count=spec.slice_count, **kwargs)
    elif spec.kind == "gpu":
        resources = rc.with_gpu(spec.gpu, count=spec.gpu_count, **kwargs)
    else:
        resources = rc.with_cpu(**kwargs)
    environment = None if spec.env is None else types.EnvironmentConfig(**spec.env)
    job_kwargs = dict(spec.job_kwargs)
    if spec.timeout_s is not None:
        job_kwargs["timeout"] = duration(spec.timeout_s) if duration else timedelta(seconds=spec.timeout_s)
    return types.JobRequest(
        name=spec.name, entrypoint=types.Entrypoint.from_binary(spec.argv[0], list(spec.argv[1:])),
        resources=resources, environment=environment, **job_kwargs,
    )


def _tpu(types: str | list[str], **kw: Any) -> Spec:
    kind_types = (types,) if isinstance(types, str) else tuple(types)
    slices = kw.pop("slice_count", 1)
    job = kw.pop("job", {})
    return Spec("tpu", tpu_types=kind_types, slice_count=slices, resource_kwargs=kw, job_kwargs=job)


#: The reference's worked examples (and a few more), each compared with Marin's client.
WORKED_EXAMPLES = {
    "1 ResourceConfig()": Spec("cpu"),
    "2 with_cpu(cpu=4, ram=16g)": Spec("cpu", resource_kwargs={"cpu": 4, "ram": "16g"}),
    "3 v5p-8": _tpu("v5p-8"),
    "4 v5p-8 x2 slices": _tpu("v5p-8", slice_count=2),
    "5 v4-32": _tpu("v4-32"),
    "6 v4-32 x2 slices": _tpu("v4-32", slice_count=2),
    "7 v5litepod-16": _tpu("v5litepod-16"),
    "9 flexible v4-8/v5p-8": _tpu(["v4-8", "v5p-8"]),
    "10a mixed chips per VM": _tpu(["v6e-4", "v6e-8"]),
    "10b mixed VM count": _tpu(["v4-8", "v4-16"]),
    "10d unknown type": _tpu("v7-8"),
    "12 H100x8 (cpu floor)": Spec("gpu", gpu="H100", gpu_count=8),
    "13 H100x8 x2 leafgroup": Spec("gpu", gpu="H100", gpu_count=8,
                                   resource_kwargs={"cpu": 32, "ram": "512g", "disk": "256g", "replicas": 2}),
    "14a GB200x4 x16 nvlink.domain": Spec("gpu", gpu="GB200", gpu_count=4, resource_kwargs={"replicas": 16}),
    "14b GB200x4 x32 sliced": Spec("gpu", gpu="GB200", gpu_count=4, resource_kwargs={"replicas": 32}),
    "14c GB200x4 x64 sliced": Spec("gpu", gpu="GB200", gpu_count=4, resource_kwargs={"replicas": 64}),
    "15a GB200x1 x32 sub-node": Spec("gpu", gpu="GB200", gpu_count=1, resource_kwargs={"replicas": 32}),
    "15b GB200x4 x17 uneven": Spec("gpu", gpu="GB200", gpu_count=4, resource_kwargs={"replicas": 17}),
    "16 GB200 alt GB300 x32": Spec("gpu", gpu="GB200", gpu_count=4,
                                   resource_kwargs={"replicas": 32, "device_alternatives": ["GB300"]}),
    "17 GB200 alt H100 x32": Spec("gpu", gpu="GB200", gpu_count=4,
                                  resource_kwargs={"replicas": 32, "device_alternatives": ["H100"]}),
    "18 one region": Spec("cpu", resource_kwargs={"regions": ["us-central1"]}),
    "19 two regions": Spec("cpu", resource_kwargs={"regions": ["us-central1", "us-central2"]}),
    "20 ANY with a region": Spec("cpu", resource_kwargs={"regions": ["*", "us-central1"]}),
    "21 non-preemptible": Spec("cpu", resource_kwargs={"preemptible": False}),
    "22 zone": Spec("cpu", resource_kwargs={"zone": "us-east1-d"}),
    "23 target cluster": Spec("cpu", resource_kwargs={"target_cluster": "cw-us-east-02a"}),
    "24 ANY region (stripped)": _tpu(["v5litepod-4", "v4-8", "v5p-8", "v6e-4"], ram="96g", regions=["*"]),
    "25 v4-32 replicas=3": _tpu("v4-32", job={"replicas": 3}),
    "27 v5p-8 cpu/ram override": _tpu("v5p-8", cpu=8, ram="32g"),
    "28 processes_per_task=4": Spec("gpu", gpu="H100", gpu_count=8, job_kwargs={"processes_per_task": 4},
                                    argv=("python", "train.py")),
    "28b processes_per_task=3": Spec("gpu", gpu="H100", gpu_count=8, job_kwargs={"processes_per_task": 3}),
    "g cpu 0.5 ANY non-preemptible": Spec("cpu", resource_kwargs={"cpu": 0.5, "ram": "6g", "disk": "16g",
                                                                    "regions": ["*"], "preemptible": False}),
    "h regions+zone+cluster": Spec("cpu", resource_kwargs={"regions": ["us-central1", "us-central2"],
                                                            "zone": "us-central1-a", "target_cluster": "cw-east"}),
    "v6e multislice with env": Spec("tpu", tpu_types=("v6e-16",), slice_count=3,
                                    env={"workspace": "/tmp/ws", "env_vars": {"A": "1"}, "setup_scripts": ["echo hi"]}),
    "gpu extra adds NCCL": Spec("gpu", gpu="H100", gpu_count=8, env={"workspace": "/tmp/ws", "extras": ["gpu"]}),
}


def _shape_groups() -> list[list[str]]:
    groups: dict[tuple[int, int], list[str]] = {}
    for t in TPU_TOPOLOGIES:
        groups.setdefault((t.vm_count, t.chips_per_vm), []).append(t.name)
    return list(groups.values())


_SHAPES = _shape_groups()
_placement = st.fixed_dictionaries(
    {},
    optional={
        "preemptible": st.booleans(),
        "regions": st.sampled_from(REGIONS),
        "zone": st.sampled_from(ZONES),
        "target_cluster": st.sampled_from(["cw-east", "CW-West-02a"]),
        "image": st.sampled_from(["ghcr.io/marin/task:1", ""]),
        "container_profile": st.sampled_from(["CONTAINER_PROFILE_PRIVILEGED", "CONTAINER_PROFILE_DEFAULT"]),
    },
)
_host = st.fixed_dictionaries(
    {}, optional={"cpu": st.sampled_from([0.5, 1, 2, 3.7, 8, 0.29, 1.005]), "ram": st.sampled_from(SIZES),
                  "disk": st.sampled_from(SIZES)},
)
_env = st.none() | st.fixed_dictionaries(
    {"workspace": st.just("/tmp/ws")},
    optional={
        "env_vars": st.dictionaries(st.sampled_from(["A", "JAX_PLATFORMS", "HF_DATASETS_TRUST_REMOTE_CODE",
                                                     "IRIS_SLICE_COUNT", "WANDB_MODE"]),
                                    st.sampled_from(["1", "", "tpu", "x y"]), max_size=3),
        "setup_scripts": st.sampled_from([None, [], ["echo setup"], ["echo a", "   ", "echo b"]]),
        "extras": st.sampled_from([[], ["gpu"], ["tpu", "marin:gpu"]]),
        "pip_packages": st.sampled_from([[], ["numpy"]]),
    },
)
_job = st.fixed_dictionaries(
    {},
    optional={
        "replicas": st.integers(1, 12),
        "max_retries_failure": st.integers(0, 3),
        "max_retries_preemption": st.sampled_from([0, 5, 100, 1000]),
        "max_task_failures": st.integers(0, 3),
        "priority": st.integers(0, 3),
    },
)


@st.composite
def tpu_specs(draw: st.DrawFn) -> Spec:
    """TPU jobs: one type or a flexible list (usually one shape, sometimes mixed), 1-4 slices."""
    if draw(st.booleans()):
        types = (draw(st.sampled_from(TPU_TYPES)),)
    else:
        pool = draw(st.sampled_from([s for s in _SHAPES if len(s) > 1])) if draw(st.integers(0, 9)) else TPU_TYPES
        types = tuple(draw(st.lists(st.sampled_from(pool), min_size=2, max_size=3, unique=True)))
    return Spec("tpu", tpu_types=types, slice_count=draw(st.integers(1, 4)),
                resource_kwargs={**draw(_host), **draw(_placement)}, job_kwargs=draw(_job), env=draw(_env),
                timeout_s=draw(st.none() | st.sampled_from([1.5, 3600.0])))


@st.composite
def gpu_specs(draw: st.DrawFn) -> Spec:
    """GPU jobs: model, count, multi-node replicas (NVL72 rack sizes included), alternatives, and
    processes_per_task."""
    resource_kwargs = {**draw(_host), **draw(_placement)}
    resource_kwargs["replicas"] = draw(st.sampled_from([1, 2, 4, 16, 17, 20, 24, 32, 33, 64]))
    if draw(st.booleans()):
        resource_kwargs["device_alternatives"] = draw(st.lists(st.sampled_from(GPU_VARIANTS), min_size=1, max_size=2))
    job_kwargs = draw(_job)
    job_kwargs.pop("replicas", None)
    job_kwargs["processes_per_task"] = draw(st.sampled_from([1, 1, 2, 3, 4]))
    return Spec("gpu", gpu=draw(st.sampled_from(GPU_VARIANTS)), gpu_count=draw(st.sampled_from([1, 2, 4, 8])),
                resource_kwargs=resource_kwargs, job_kwargs=job_kwargs, env=draw(_env))


@st.composite
def cpu_specs(draw: st.DrawFn) -> Spec:
    """CPU jobs with every placement option."""
    return Spec("cpu", resource_kwargs={**draw(_host), **draw(_placement)}, job_kwargs=draw(_job), env=draw(_env),
                argv=draw(st.sampled_from([("echo", "hello"), ("python", "-c", "print(1)"), ("true",)])))


any_spec = st.one_of(tpu_specs(), gpu_specs(), cpu_specs())
