"""Golden tests: Fray's resource model and the ``LaunchJobRequest`` it becomes, as an explicit table
of inputs -> values on the wire. Numbered cases are worked examples of Fray's resource model and
Iris's conversion; lettered ones (a–h, and i scale, j total_flops, k replicas and errors) are what
Marin's own client (marin-fray / marin-iris 0.2.227) was seen to send, its stub patched to keep the
request (``tests/conformance/test_oracle.py`` checks them against the installed client).

The installed 0.2.227 packages are the reference: the default disk is "64g" (68,719,476,736 B; older
Fray had 16g), multi-slice TPU jobs carry IRIS_SLICE_COUNT / IRIS_TASKS_PER_SLICE, and the multi-GPU
supervisor is ``iris.jax.multigpu_main``. Error texts are fray-jupyter's own where it helps more than
Fray does (a did-you-mean, the value refused).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from fray_jupyter import plan
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.resources import (
    ANY_REGION,
    Entrypoint,
    GpuConfig,
    JobRequest,
    ResourceConfig,
    TpuConfig,
)

RC = ResourceConfig

# Bytes, written out (binary units).
G4, G6, G16, G32 = 4_294_967_296, 6_442_450_944, 17_179_869_184, 34_359_738_368
G50, G64, G96, G200 = 53_687_091_200, 68_719_476_736, 103_079_215_104, 214_748_364_800
G224, G256, G360, G512 = 240_518_168_576, 274_877_906_944, 386_547_056_640, 549_755_813_888

IRIS_DEFAULTS = {"HF_DATASETS_TRUST_REMOTE_CODE": "1", "TOKENIZERS_PARALLELISM": "false"}
CPU_ENV = {"JAX_PLATFORMS": "cpu"}
ACCEL_ENV = {"JAX_PLATFORMS": ""}
V5_ENV = {"JAX_PLATFORMS": "", "LIBTPU_INIT_ARGS": "--xla_tpu_scoped_vmem_limit_kib=50000"}
V6_ENV = {"JAX_PLATFORMS": "", "LIBTPU_INIT_ARGS": "--xla_tpu_scoped_vmem_limit_kib=98304"}


def slices(count: int, per_slice: int) -> dict[str, str]:
    return {"IRIS_SLICE_COUNT": str(count), "IRIS_TASKS_PER_SLICE": str(per_slice)}


def job(resources: ResourceConfig, **kwargs: Any) -> JobRequest:
    entrypoint = kwargs.pop("entrypoint", Entrypoint.from_binary("echo", ["hello"]))
    return JobRequest(name=kwargs.pop("name", "j"), entrypoint=entrypoint, resources=resources, **kwargs)


def c(key: str, op: str, *values: str) -> tuple[str, str, tuple[str, ...], str]:
    return (key, op, values, "REQUIRED")


@dataclass(frozen=True)
class Golden:
    make: Callable[[], JobRequest]
    replicas: int
    cpu_mc: int
    memory: int
    disk: int
    device: tuple[str, str, int] | None
    env: dict[str, str]  # Fray-level env; Iris's defaults are added on the wire
    constraints: tuple[tuple[str, str, tuple[str, ...], str], ...] = ()
    group_by: str | None = None
    fray_constraints: tuple[tuple[str, str, tuple[str, ...], str], ...] | None = None  # when they differ
    argv: tuple[str, ...] = ("echo", "hello")


FLEX4 = ["v5litepod-4", "v4-8", "v5p-8", "v6e-4"]

# fmt: off
GOLDEN: dict[str, Golden] = {
    "1 ResourceConfig()": Golden(lambda: job(RC()), 1, 1000, G4, G64, None, CPU_ENV),
    "2 with_cpu(cpu=4, ram=16g)": Golden(lambda: job(RC.with_cpu(cpu=4, ram="16g")), 1, 4000, G16, G64, None, CPU_ENV),
    "3 with_tpu(v5p-8)": Golden(lambda: job(RC.with_tpu("v5p-8")), 1, 104_000, G224, G50, ("tpu", "v5p-8", 4), V5_ENV),
    "4/a v5p-8 x2 slices": Golden(lambda: job(RC.with_tpu("v5p-8", slice_count=2)), 2, 104_000, G224, G50,
                                  ("tpu", "v5p-8", 4), {**V5_ENV, **slices(2, 1)}),
    "5/b with_tpu(v4-32)": Golden(lambda: job(RC.with_tpu("v4-32")), 4, 120_000, G200, G50, ("tpu", "v4-32", 4),
                                  ACCEL_ENV, group_by="tpu-name"),
    "6 v4-32 x2 slices": Golden(lambda: job(RC.with_tpu("v4-32", slice_count=2)), 8, 120_000, G200, G50,
                                ("tpu", "v4-32", 4), {**ACCEL_ENV, **slices(2, 4)}, group_by="tpu-name"),
    "7 with_tpu(v5litepod-16)": Golden(lambda: job(RC.with_tpu("v5litepod-16")), 4, 56_000, G96, G50,
                                       ("tpu", "v5litepod-16", 4), V5_ENV, group_by="tpu-name"),
    "9 with_tpu([v4-8, v5p-8])": Golden(lambda: job(RC.with_tpu(["v4-8", "v5p-8"])), 1, 120_000, G200, G50,
                                        ("tpu", "v4-8", 4), ACCEL_ENV, (c("device-variant", "IN", "v4-8", "v5p-8"),)),
    "c with_tpu([v6e-16, v5litepod-16])": Golden(
        lambda: job(RC.with_tpu(["v6e-16", "v5litepod-16"])), 4, 90_000, G360, G50, ("tpu", "v6e-16", 4), V6_ENV,
        (c("device-variant", "IN", "v6e-16", "v5litepod-16"),), group_by="tpu-name"),
    "d/24 four-type flexible, ANY region": Golden(
        lambda: job(RC.with_tpu(FLEX4, ram="96g", regions=[ANY_REGION])), 1, 56_000, G96, G50,
        ("tpu", "v5litepod-4", 4), V5_ENV, (c("device-variant", "IN", *FLEX4),),
        fray_constraints=(c("region", "EXISTS"), c("device-variant", "IN", *FLEX4))),
    "12 with_gpu(H100, count=8): cpu floored": Golden(lambda: job(RC.with_gpu("H100", count=8)), 1, 4000, G4, G64,
                                                      ("gpu", "H100", 8), ACCEL_ENV),
    "13/e H100x8 x2": Golden(lambda: job(RC.with_gpu("H100", count=8, cpu=32, ram="512g", disk="256g", replicas=2)),
                             2, 32_000, G512, G256, ("gpu", "H100", 8), ACCEL_ENV, group_by="leafgroup"),
    "14a GB200x4 x16": Golden(lambda: job(RC.with_gpu("GB200", count=4, replicas=16)), 16, 4000, G4, G64,
                              ("gpu", "GB200", 4), ACCEL_ENV, group_by="nvlink.domain"),
    "14b GB200x4 x32": Golden(lambda: job(RC.with_gpu("GB200", count=4, replicas=32)), 32, 4000, G4, G64,
                              ("gpu", "GB200", 4), ACCEL_ENV, group_by="nvlink.domain.sliced"),
    "14c GB200x4 x64": Golden(lambda: job(RC.with_gpu("GB200", count=4, replicas=64)), 64, 4000, G4, G64,
                              ("gpu", "GB200", 4), ACCEL_ENV, group_by="nvlink.domain.sliced"),
    "16/f' GpuConfig(GB200, count=4) alt GB300 x32": Golden(
        lambda: job(RC(device=GpuConfig("GB200", count=4), device_alternatives=["GB300"], replicas=32)), 32, 4000, G4,
        G64, ("gpu", "GB200", 4), ACCEL_ENV, (c("device-variant", "IN", "gb200", "gb300"),),
        group_by="nvlink.domain.sliced"),
    "f' GpuConfig(GB200, count=4) x16": Golden(
        lambda: job(RC(device=GpuConfig("GB200", count=4), replicas=16)), 16, 4000, G4, G64, ("gpu", "GB200", 4),
        ACCEL_ENV, group_by="nvlink.domain"),
    "18 one region": Golden(lambda: job(RC(regions=["us-central1"])), 1, 1000, G4, G64, None, CPU_ENV,
                            (c("region", "EQ", "us-central1"),)),
    "19 two regions": Golden(lambda: job(RC(regions=["us-central1", "us-central2"])), 1, 1000, G4, G64, None, CPU_ENV,
                             (c("region", "IN", "us-central1", "us-central2"),)),
    "21 non-preemptible": Golden(lambda: job(RC(preemptible=False)), 1, 1000, G4, G64, None, CPU_ENV,
                                 (c("preemptible", "EQ", "false"),)),
    "22 zone": Golden(lambda: job(RC(zone="us-east1-d")), 1, 1000, G4, G64, None, CPU_ENV,
                      (c("zone", "EQ", "us-east1-d"),)),
    "23 target cluster": Golden(lambda: job(RC(target_cluster="cw-us-east-02a")), 1, 1000, G4, G64, None, CPU_ENV,
                                (c("cluster", "EQ", "cw-us-east-02a"),)),
    "27 with_tpu(v5p-8, cpu=8, ram=32g)": Golden(lambda: job(RC.with_tpu("v5p-8", cpu=8, ram="32g")), 1, 8000, G32,
                                                 G50, ("tpu", "v5p-8", 4), V5_ENV),
    "28 processes_per_task=4": Golden(
        lambda: job(RC.with_gpu("H100", count=8), processes_per_task=4,
                    entrypoint=Entrypoint.from_binary("python", ["train.py"])),
        1, 4000, G4, G64, ("gpu", "H100", 8), ACCEL_ENV,
        argv=("python", "-m", "iris.jax.multigpu_main", "--nproc", "4", "--devices-per-proc", "2", "--",
              "python", "train.py")),
    "g with_cpu(0.5, 6g, 16g, ANY, non-preemptible)": Golden(
        lambda: job(RC.with_cpu(cpu=0.5, ram="6g", disk="16g", regions=[ANY_REGION], preemptible=False)),
        1, 500, G6, G16, None, CPU_ENV, (c("preemptible", "EQ", "false"),),
        fray_constraints=(c("preemptible", "EQ", "false"), c("region", "EXISTS"))),
    "h regions + zone + target_cluster": Golden(
        lambda: job(RC(regions=["us-central1", "us-central2"], zone="us-central1-a", target_cluster="cw-east")),
        1, 1000, G4, G64, None, CPU_ENV,
        (c("region", "IN", "us-central1", "us-central2"), c("zone", "EQ", "us-central1-a"), c("cluster", "EQ", "cw-east"))),
    "k v4-32 with replicas=8 is accepted": Golden(lambda: job(RC.with_tpu("v4-32"), replicas=8), 8, 120_000, G200, G50,
                                                  ("tpu", "v4-32", 4), {**ACCEL_ENV, **slices(2, 4)}, group_by="tpu-name"),
    "k direct TpuConfig(v4-32): Iris raises 1 -> 4": Golden(
        lambda: job(RC(device=TpuConfig("v4-32"))), 4, 4000, G4, G64, ("tpu", "v4-32", 4), ACCEL_ENV),
}
# fmt: on


def wire_constraints(request) -> tuple[tuple[str, str, tuple[str, ...], str], ...]:
    out = []
    for proto in request.constraints:
        if proto.values:
            values = tuple(v.string_value for v in proto.values)
        elif proto.HasField("value"):
            values = (proto.value.string_value,)
        else:
            values = ()
        out.append(
            (
                proto.key,
                job_pb2.ConstraintOp.Name(proto.op).removeprefix("CONSTRAINT_OP_"),
                values,
                job_pb2.ConstraintMode.Name(proto.mode).removeprefix("CONSTRAINT_MODE_"),
            )
        )
    return tuple(out)


def wire_device(request) -> tuple[str, str, int] | None:
    if not request.resources.HasField("device"):
        return None
    kind = request.resources.device.WhichOneof("device")
    device = getattr(request.resources.device, kind)
    return (kind, device.variant, device.count)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IRIS_REVISION_DATE", raising=False)


@pytest.mark.parametrize("golden", GOLDEN.values(), ids=GOLDEN.keys())
def test_worked_example(golden: Golden) -> None:
    p = plan(golden.make(), user="alice")
    request = p.request
    assert request.name == "/alice/j"
    assert request.replicas == p.replicas == golden.replicas
    resources = request.resources
    assert (resources.cpu_millicores, resources.memory_bytes, resources.disk_bytes) == (
        golden.cpu_mc,
        golden.memory,
        golden.disk,
    )
    assert (p.cpu_millicores, p.memory_bytes, p.disk_bytes) == (golden.cpu_mc, golden.memory, golden.disk)
    assert wire_device(request) == golden.device
    if golden.device is not None and golden.device[0] == "tpu":
        assert request.resources.device.tpu.topology == ""
    assert wire_constraints(request) == golden.constraints
    expected_fray = golden.constraints if golden.fray_constraints is None else golden.fray_constraints
    assert tuple((k.key, k.op, k.values, k.mode) for k in p.fray_constraints) == expected_fray
    assert p.group_by == golden.group_by
    assert (request.coscheduling.group_by if request.HasField("coscheduling") else None) == golden.group_by
    assert dict(request.environment.env_vars) == {**IRIS_DEFAULTS, **golden.env}
    assert tuple(request.entrypoint.run_command.argv) == golden.argv
    # Fray's defaults for everything else the Fray path sets
    assert (request.max_retries_failure, request.max_retries_preemption, request.max_task_failures) == (
        0,
        100,
        0,
    )
    assert request.existing_job_policy == job_pb2.EXISTING_JOB_POLICY_KEEP
    assert request.priority_band == job_pb2.PRIORITY_BAND_INHERIT
    assert request.container_profile == job_pb2.CONTAINER_PROFILE_UNSPECIFIED
    assert request.client_revision_date == "2026-10-24"
    assert request.task_image == ""


# fmt: off
ERRORS: dict[str, tuple[Callable[[], Any], str]] = {
    "10a with_tpu([v6e-4, v6e-8]): chips per VM differ": (
        lambda: job(RC.with_tpu(["v6e-4", "v6e-8"])),
        r"(?i)all TPU types in a flexible request must share both vm_count and chips_per_vm.*v6e-4.*v6e-8"),
    "10b with_tpu([v4-8, v4-16]): VM counts differ": (
        lambda: job(RC.with_tpu(["v4-8", "v4-16"])), r"(?i)must share both vm_count and chips_per_vm.*v4-8.*v4-16"),
    "10c/k with_tpu([])": (lambda: job(RC.with_tpu([])), r"^tpu_type must be non-empty$"),
    "10d with_tpu(v7-8)": (lambda: job(RC.with_tpu("v7-8")), r"unknown TPU type 'v7-8'"),
    "k with_tpu(v5p-7)": (lambda: job(RC.with_tpu("v5p-7")), r"^unknown TPU type 'v5p-7'; did you mean 'v5p-8'\?$"),
    "15a GB200x1 x32: sub-node pods": (
        lambda: job(RC.with_gpu("GB200", count=1, replicas=32)),
        r"^sliced multi-rack placement requires node-saturating NVL72 pods \(4 GPUs each\); got 1$"),
    "15b GB200x4 x17: uneven rack split": (
        lambda: job(RC.with_gpu("GB200", count=4, replicas=17)), r"^17 nodes do not divide evenly across 2 racks"),
    "17/f' GB200 alt H100 x32": (
        lambda: job(RC(device=GpuConfig("GB200", count=4), device_alternatives=["H100"], replicas=32)),
        r"^GPU alternatives must share one coscheduling topology; got GB200=nvlink\.domain\.sliced, H100=leafgroup$"),
    "f literal GpuConfig(GB200, 4): 4 is Fray's kind": (
        lambda: job(RC(device=GpuConfig("GB200", 4), device_alternatives=["GB300"], replicas=32)),  # type: ignore[arg-type]
        r"second positional argument is kind.*GpuConfig\('GB200', count=4\)"),
    "20/k ANY_REGION with a region": (
        lambda: job(RC(regions=[ANY_REGION, "us-central1"])),
        "^" + re.escape("ANY_REGION cannot be combined with specific regions; got ['*', 'us-central1']") + "$"),
    "25 v4-32 with JobRequest(replicas=3)": (
        lambda: job(RC.with_tpu("v4-32"), replicas=3),
        "^" + re.escape("TPU type 'v4-32' requires 4 VMs per slice, so replicas must be a multiple of 4 (got replicas=3)")),
    "k v4-32 with replicas=6": (
        lambda: job(RC.with_tpu("v4-32"), replicas=6),
        "^" + re.escape("TPU type 'v4-32' requires 4 VMs per slice, so replicas must be a multiple of 4 (got replicas=6)")),
    "28b processes_per_task=3": (
        lambda: job(RC.with_gpu("H100", count=8), processes_per_task=3),
        "^" + re.escape("processes_per_task (3) must divide the GPU count (8)") + "$"),
    "30 JobRequest(name='my job')": (lambda: job(RC(), name="my job"), r"Job name must not contain spaces.*'my job'"),
    "i scale(2, cpu=1)": (lambda: job(RC().scale(2, cpu=1)),
                          "^" + re.escape("Pass either a single factor or cpu/ram/disk keyword factors, not both.") + "$"),
}
# fmt: on


@pytest.mark.parametrize(("make", "pattern"), ERRORS.values(), ids=ERRORS.keys())
def test_error_case(make: Callable[[], Any], pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern) as caught:
        plan(make(), user="alice")
    assert "\n" not in str(caught.value)


# -- i: scale, as Marin's client computes it -------------------------------------------------------

SCALE: dict[str, tuple[Callable[[], ResourceConfig], tuple[float, str, str]]] = {
    "ResourceConfig(cpu=1, ram=4g, disk=2g).scale(2)": (
        lambda: RC(cpu=1, ram="4g", disk="2g").scale(2),
        (2, "8g", "4g"),
    ),
    "ResourceConfig(ram=4g).scale(ram=0.3)": (lambda: RC(ram="4g").scale(ram=0.3), (1, "1.2g", "64g")),
    "ResourceConfig(ram=3g).scale(ram=0.1)": (lambda: RC(ram="3g").scale(ram=0.1), (1, "307.2m", "64g")),
    "with_tpu(v5p-8).scale(0.5)": (lambda: RC.with_tpu("v5p-8").scale(0.5), (52.0, "112g", "25g")),
    "ResourceConfig(ram=4GB).scale(1.0)": (lambda: RC(ram="4GB").scale(1.0), (1, "4GB", "64g")),
}


@pytest.mark.parametrize(("make", "expected"), SCALE.values(), ids=SCALE.keys())
def test_scale_golden(make: Callable[[], ResourceConfig], expected: tuple[float, str, str]) -> None:
    scaled = make()
    assert (scaled.cpu, scaled.ram, scaled.disk) == expected


def test_scaled_tpu_cpu_is_a_float() -> None:
    assert isinstance(RC.with_tpu("v5p-8").scale(0.5).cpu, float)


# -- j: total_flops (bf16), as Marin's client computes it -------------------------------------------

FLOPS: dict[str, tuple[Callable[[], ResourceConfig], float]] = {
    "with_tpu(v5p-8, slice_count=2)": (lambda: RC.with_tpu("v5p-8", slice_count=2), 3.672e15),
    "with_tpu(v4-32)": (lambda: RC.with_tpu("v4-32"), 4.4e15),
    "with_gpu(H100, count=8)": (lambda: RC.with_gpu("H100", count=8), 7.916e15),
    "ResourceConfig()": (lambda: RC(), 1e11),
}


@pytest.mark.parametrize(("make", "flops"), FLOPS.values(), ids=FLOPS.keys())
def test_total_flops_golden(make: Callable[[], ResourceConfig], flops: float) -> None:
    assert make().total_flops() == flops


# -- HBM: chips x Fray's TPU_HBM_BYTES_PER_CHIP (v4 32 GiB, v5p 95 GiB) ------------------------------


@pytest.mark.parametrize(("tpu", "hbm"), [("v5p-8", 408_021_893_120), ("v4-32", 549_755_813_888)])
def test_hbm_golden(tpu: str, hbm: int) -> None:
    assert RC.with_tpu(tpu).hbm_capacity_bytes() == hbm
    assert plan(job(RC.with_tpu(tpu)), user="alice").hbm_bytes == hbm
