"""fray-jupyter's hardware tables and per-device rules equal the installed marin-fray / marin-iris
0.2.227: TPU topologies (Fray's and Iris's copies), host sizes, HBM, FLOPS (exact floats), device
env defaults, the Fray dataclasses' fields and defaults, and the small Iris rules that use them."""

from __future__ import annotations

import dataclasses
import itertools

import fray.device_flops as real_flops
import fray.types as real
import iris.cluster.platforms.k8s.coreweave_topology as real_coreweave
import iris.cluster.runtime.env as real_env
import iris.cluster.tpu_topology as real_iris_topology
import iris.cluster.types as real_iris_types
import pytest
from iris.jax.multigpu import build_multigpu_hook
from iris.rpc import job_pb2 as real_job_pb2

import fray_jupyter.resources as ours
from fray_jupyter.iris import convert as our_convert
from fray_jupyter.iris import coscheduling as our_cosched
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.resources import tables
from fray_jupyter.resources.devices import device_flops, tpu_family, tpu_hbm_capacity_bytes

TPU_NAMES = [t.name for t in real.TPU_TOPOLOGIES]
ROW = ("name", "chip_count", "host_count", "vm_count", "chips_per_vm")


def rows(table) -> list[tuple]:
    return [tuple(getattr(t, f) for f in ROW) for t in table]


def test_tpu_topologies_equal_frays_in_order() -> None:
    assert rows(tables.TPU_TOPOLOGIES) == rows(real.TPU_TOPOLOGIES)


def test_tpu_topologies_equal_iris_copy_in_order() -> None:
    assert rows(tables.TPU_TOPOLOGIES) == rows(real_iris_topology.TPU_TOPOLOGIES)


def test_tpu_host_resources_and_fraction() -> None:
    assert {k: (v.cpu, v.ram_gb) for k, v in tables.TPU_HOST_RESOURCES.items()} == {
        k: (v.cpu, v.ram_gb) for k, v in real.TPU_HOST_RESOURCES.items()
    }
    assert tables.DEFAULT_TPU_HOST_FRACTION == real.DEFAULT_TPU_HOST_FRACTION


def test_hbm_per_chip() -> None:
    assert dict(tables.TPU_HBM_BYTES_PER_CHIP) == dict(real.TPU_HBM_BYTES_PER_CHIP)


@pytest.mark.parametrize("name", TPU_NAMES)
def test_hbm_capacity_and_family_per_type(name: str) -> None:
    assert tpu_hbm_capacity_bytes(name) == real.tpu_hbm_capacity_bytes(name)
    assert tpu_family(name) == real.tpu_family(name)


def test_device_flops_table_is_exactly_frays() -> None:
    ours_table = {device: dict(per_dtype) for device, per_dtype in tables.DEVICE_FLOPS.items()}
    assert list(ours_table) == list(real_flops.DEVICE_FLOPS)
    for device, per_dtype in real_flops.DEVICE_FLOPS.items():
        assert ours_table[device] == per_dtype, device  # float ==, no tolerance


NAMES = [
    *real_flops.DEVICE_FLOPS,
    *TPU_NAMES,
    "H100",
    "A100-80G",
    "V4-8",
    "v100-sxm",
    "GB200",
    "gb300",
    "nonsense",
]
DTYPES = [
    "bf16",
    "BF16",
    "amp_bf16",
    "AMP_BF16",
    "fp16",
    "fp32",
    "fp64",
    "tf32",
    "fp8",
    "int8",
    "int4",
    "fp4",
    "x",
]


def test_device_flops_lookup_matches_fray_for_every_name_and_dtype() -> None:
    for name, dtype in itertools.product(NAMES, DTYPES):
        assert device_flops(name, dtype) == real_flops.device_flops(name, dtype), (name, dtype)


def test_any_region() -> None:
    assert ours.ANY_REGION == real.ANY_REGION == "*"


@pytest.mark.parametrize("name", TPU_NAMES)
def test_tpu_default_env_vars(name: str) -> None:
    assert ours.TpuConfig(name).default_env_vars() == real.TpuConfig(name).default_env_vars()
    assert ours.TpuConfig(name).chip_count() == real.TpuConfig(name).chip_count()
    assert ours.TpuConfig(name).vm_count() == real.TpuConfig(name).vm_count()


def test_gpu_and_cpu_default_env_vars() -> None:
    assert ours.GpuConfig("H100").default_env_vars() == real.GpuConfig("H100").default_env_vars()
    assert ours.CpuConfig().default_env_vars() == real.CpuConfig().default_env_vars()


@pytest.mark.parametrize("name", TPU_NAMES)
@pytest.mark.parametrize("slices", [1, 3])
def test_with_tpu_defaults(name: str, slices: int) -> None:
    mine, theirs = (
        ours.ResourceConfig.with_tpu(name, slice_count=slices),
        real.ResourceConfig.with_tpu(name, slice_count=slices),
    )
    assert (mine.cpu, mine.ram, mine.disk, mine.replicas) == (
        theirs.cpu,
        theirs.ram,
        theirs.disk,
        theirs.replicas,
    )


@pytest.mark.parametrize(
    ("our_model", "their_class"),
    [
        (ours.ResourceConfig, real.ResourceConfig),
        (ours.JobRequest, real.JobRequest),
        (ours.EnvironmentConfig, real.EnvironmentConfig),
        (ours.GpuConfig, real.GpuConfig),
        (ours.TpuConfig, real.TpuConfig),
        (ours.CpuConfig, real.CpuConfig),
        (ours.CallableEntrypoint, real.CallableEntrypoint),
        (ours.BinaryEntrypoint, real.BinaryEntrypoint),
    ],
    ids=lambda v: getattr(v, "__module__", "").split(".")[0] + "." + getattr(v, "__name__", ""),
)
def test_model_fields_and_defaults_match_frays_dataclasses(our_model, their_class) -> None:
    """Same field names in the same (positional) order, and the same simple defaults."""
    theirs = dataclasses.fields(their_class)
    assert list(our_model.model_fields)[: len(theirs)] == [f.name for f in theirs]
    assert list(our_model._positional)[: len(theirs)] == [f.name for f in theirs]
    for their_field in theirs:
        if their_field.default is dataclasses.MISSING or not isinstance(
            their_field.default, (int, float, str, type(None))
        ):
            continue
        assert our_model.model_fields[their_field.name].default == their_field.default, their_field.name


def test_entrypoint_fields_extend_frays() -> None:
    assert list(ours.Entrypoint.model_fields)[:2] == [f.name for f in dataclasses.fields(real.Entrypoint)]


# -- Iris rules that use the tables -----------------------------------------------------------------


@pytest.mark.parametrize("name", TPU_NAMES)
def test_adjust_tpu_replicas_matches_iris(name: str) -> None:
    for replicas in range(1, 10):
        try:
            expected = real_iris_types.adjust_tpu_replicas(real_iris_types.tpu_device(name), replicas)
        except ValueError:
            with pytest.raises(ValueError):
                our_convert.adjust_tpu_replicas(ours.TpuConfig(name), replicas)
        else:
            assert our_convert.adjust_tpu_replicas(ours.TpuConfig(name), replicas) == expected


@pytest.mark.parametrize("name", TPU_NAMES)
def test_slice_topology_env_matches_iris(name: str) -> None:
    vms = real.TpuConfig(name).vm_count()
    resources = real_job_pb2.ResourceSpecProto(device=real_iris_types.tpu_device(name))
    for tasks in (vms, 2 * vms, 5 * vms):
        assert our_convert.slice_topology_env(ours.TpuConfig(name), tasks) == real_env.slice_topology_env(
            resources, tasks
        )


def test_tpu_device_count_matches_iris() -> None:
    for name in TPU_NAMES:
        ours_device = our_convert.convert_device(ours.TpuConfig(name))
        assert ours_device.SerializeToString() == real_iris_types.tpu_device(name).SerializeToString()


def test_gpu_gang_levels_match_iris() -> None:
    for variant, count, replicas in itertools.product(
        ["H100", "GB200", "gb300", "B200", "auto"], [1, 2, 4, 8], range(1, 71)
    ):
        try:
            expected = real_coreweave.gpu_gang_coscheduling_level(variant, count, replicas)
        except ValueError:
            with pytest.raises(ValueError):
                our_cosched.gpu_gang_coscheduling_level(variant, count, replicas)
        else:
            assert our_cosched.gpu_gang_coscheduling_level(variant, count, replicas) == expected, (
                variant,
                count,
                replicas,
            )


def test_rack_slice_sizes_match_iris() -> None:
    for replicas in range(17, 129):
        try:
            expected = real_coreweave.gpu_gang_rack_slice_size(4, replicas)
        except ValueError:
            with pytest.raises(ValueError):
                our_cosched.rack_slice_size(4, replicas)
        else:
            assert our_cosched.rack_slice_size(4, replicas) == expected


def test_cpu_floor_and_multigpu_wrap_match_iris() -> None:
    assert (
        our_convert.MIN_ACCELERATOR_CPU_MILLICORES
        == real_iris_types.ResourceSpec.MIN_ACCELERATOR_CPU_MILLICORES
    )
    real_spec = real_iris_types.ResourceSpec(
        cpu=1, memory="4g", disk="64g", device=real_iris_types.gpu_device("H100", 8)
    )
    ours_spec = our_convert.convert_resources(ours.ResourceConfig.with_gpu("H100", count=8))
    assert ours_spec.to_proto().SerializeToString() == real_spec.to_proto().SerializeToString()
    command = ["python", "train.py"]
    wrapped = our_convert.wrap_multiprocess(our_convert.IrisEntrypoint(tuple(command)), ours_spec, 4)
    assert list(wrapped.command) == build_multigpu_hook(real_spec, 4).wrap(command)


def test_enum_names_match_iris() -> None:
    for enum in ("PriorityBand", "ExistingJobPolicy", "ContainerProfile", "ConstraintOp", "ConstraintMode"):
        assert dict(getattr(job_pb2, enum).items()) == dict(getattr(real_job_pb2, enum).items()), enum
    assert {f"PRIORITY_BAND_{k.upper()}": v for k, v in tables.PRIORITY_BANDS.items()} == dict(
        real_job_pb2.PriorityBand.items()
    )
    assert (
        controller_pb2.Controller.LaunchJobRequest.DESCRIPTOR.full_name
        == "iris.cluster.Controller.LaunchJobRequest"
    )
