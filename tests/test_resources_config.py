"""``ResourceConfig``: Fray's fields and defaults, builders, ``scale``, chip/FLOPS/HBM figures, and
the rule that every invalid input is one plain ``ValueError`` line naming the bad value."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from fray_jupyter.resources import ANY_REGION, CpuConfig, GpuConfig, ResourceConfig, TpuConfig
from fray_jupyter.resources.config import builder_defaults
from fray_jupyter.resources.tables import TPU_TOPOLOGIES
from tests.assertions import one_line_value_error

GIB = 1024**3
RC = ResourceConfig
FRAY_FIELDS = [
    ("cpu", 1),
    ("ram", "4g"),
    ("disk", "64g"),
    ("device", CpuConfig()),
    ("preemptible", True),
    ("regions", None),
    ("zone", None),
    ("target_cluster", None),
    ("replicas", 1),
    ("device_alternatives", None),
    ("image", None),
    ("container_profile", None),
]




# -- fields and defaults ----------------------------------------------------------------------------


def test_fields_and_defaults_are_frays() -> None:
    """marin-fray 0.2.227: disk defaults to "64g" (the older note said "16g")."""
    rc = RC()
    assert list(RC.model_fields) == [name for name, _ in FRAY_FIELDS]
    assert [(name, getattr(rc, name)) for name, _ in FRAY_FIELDS] == FRAY_FIELDS
    assert rc.disk_bytes() == 68_719_476_736
    assert rc.ram_bytes() == 4 * GIB


def test_positional_construction_follows_frays_field_order() -> None:
    rc = RC(2, "8g", "100g", GpuConfig("H100", count=2), False, ["us-east5"], "us-east5-a", "cw", 3)
    assert (rc.cpu, rc.ram, rc.disk, rc.device.count, rc.preemptible) == (2, "8g", "100g", 2, False)
    assert (rc.regions, rc.zone, rc.target_cluster, rc.replicas) == (["us-east5"], "us-east5-a", "cw", 3)


def test_any_region_is_the_star() -> None:
    assert ANY_REGION == "*"


def test_device_accepts_a_tagged_dict() -> None:
    assert RC(device={"kind": "tpu", "variant": "v4-8"}).device == TpuConfig("v4-8")
    assert RC(device={"kind": "gpu", "variant": "H100", "count": 8}).device == GpuConfig("H100", count=8)


def test_regions_may_be_a_tuple() -> None:
    assert RC(regions=("us-central1", "us-east5")).regions == ["us-central1", "us-east5"]


# -- with_tpu ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tpu", "cpu", "ram"),
    [("v4-8", 120, "200g"), ("v5litepod-4", 56, "96g"), ("v5p-8", 104, "224g"), ("v6e-4", 90, "360g")],
)
def test_with_tpu_host_relative_defaults_per_family(tpu: str, cpu: int, ram: str) -> None:
    rc = RC.with_tpu(tpu)
    assert (rc.cpu, rc.ram, rc.disk) == (cpu, ram, "50g")
    assert rc.device == TpuConfig(tpu)
    assert rc.device_alternatives is None
    assert rc.replicas == 1


@pytest.mark.parametrize("row", TPU_TOPOLOGIES, ids=[t.name for t in TPU_TOPOLOGIES])
@pytest.mark.parametrize("slices", [1, 2, 3])
def test_with_tpu_replicas_are_slices_times_vms(row, slices: int) -> None:
    assert RC.with_tpu(row.name, slice_count=slices).replicas == slices * row.vm_count


def test_with_tpu_kwargs_override_defaults_and_pass_through() -> None:
    rc = RC.with_tpu(
        "v5p-8", cpu=8, ram="32g", disk="10g", regions=["us-east5"], preemptible=False, image="img"
    )
    assert (rc.cpu, rc.ram, rc.disk, rc.regions, rc.preemptible, rc.image) == (
        8,
        "32g",
        "10g",
        ["us-east5"],
        False,
        "img",
    )
    assert RC.with_tpu("v5p-8", ram="1g").cpu == 104  # overriding one keeps the other defaults


@pytest.mark.parametrize("types", [["v4-8", "v5p-8"], ("v4-8", "v5p-8")])
def test_with_tpu_flexible_list(types: Any) -> None:
    rc = RC.with_tpu(types)
    assert rc.device == TpuConfig("v4-8")
    assert rc.device_alternatives == ["v5p-8"]
    assert (rc.cpu, rc.ram) == (120, "200g")  # sized by the first type's family


def test_with_tpu_flexible_multi_vm_and_single_element_list() -> None:
    rc = RC.with_tpu(["v6e-16", "v5litepod-16"], slice_count=2)
    assert (rc.cpu, rc.ram, rc.replicas, rc.device_alternatives) == (90, "360g", 8, ["v5litepod-16"])
    assert RC.with_tpu(["v5p-8"]).device_alternatives is None


@pytest.mark.parametrize(
    ("call", "fragments"),
    [
        (lambda: RC.with_tpu([]), ["tpu_type must be non-empty"]),
        (lambda: RC.with_tpu("v5p-7"), ["'v5p-7'", "did you mean 'v5p-8'?"]),
        (lambda: RC.with_tpu(["v5p-8", "v5p-7"]), ["'v5p-7'"]),
        (lambda: RC.with_tpu("v7-8"), ["'v7-8'"]),
        (lambda: RC.with_tpu(["v6e-4", "v6e-8"]), ["vm_count and chips_per_vm", "v6e-4", "v6e-8"]),
        (lambda: RC.with_tpu(["v4-8", "v4-16"]), ["vm_count and chips_per_vm", "v4-8", "v4-16"]),
        (lambda: RC.with_tpu("v5p-8", slice_count=0), ["slice_count 0"]),
        (lambda: RC.with_tpu("v5p-8", slice_count=-1), ["slice_count -1"]),
        (lambda: RC.with_tpu("v5p-8", slice_count=1.5), ["slice_count 1.5"]),
        (lambda: RC.with_tpu("v5p-8", replicas=2), ["replicas"]),
        (lambda: RC.with_tpu("v5p-8", device=CpuConfig()), ["device"]),
        (lambda: RC.with_tpu("v5p-8", device_alternatives=["v4-8"]), ["device_alternatives"]),
        (lambda: RC.with_tpu("v5p-8", ram="lots"), ["'lots'"]),
    ],
)
def test_with_tpu_errors(call: Callable[[], Any], fragments: list[str]) -> None:
    with pytest.raises(ValueError) as caught:
        call()
    one_line_value_error(caught, *fragments)


def test_direct_tpu_alternatives_must_share_the_vm_shape() -> None:
    with pytest.raises(ValueError) as caught:
        RC(device=TpuConfig("v6e-4"), device_alternatives=["v6e-8"])
    one_line_value_error(caught, "v6e-8")
    with pytest.raises(ValueError) as caught:
        RC(device=TpuConfig("v5p-8"), device_alternatives=["v5p-9"])
    one_line_value_error(caught, "'v5p-9'")


# -- with_gpu / with_cpu ----------------------------------------------------------------------------


def test_with_gpu_has_only_dataclass_defaults() -> None:
    rc = RC.with_gpu("H100", count=8)
    assert rc.device == GpuConfig("H100", count=8)
    assert (rc.cpu, rc.ram, rc.disk, rc.replicas) == (1, "4g", "64g", 1)
    assert RC.with_gpu("A100").device.count == 1
    multi = RC.with_gpu("H100", 8, cpu=32, ram="512g", disk="256g", replicas=2)
    assert (multi.cpu, multi.ram, multi.disk, multi.replicas, multi.device.count) == (
        32,
        "512g",
        "256g",
        2,
        8,
    )


def test_with_cpu() -> None:
    rc = RC.with_cpu(cpu=4, ram="16g")
    assert rc.device == CpuConfig()
    assert (rc.cpu, rc.ram, rc.disk) == (4, "16g", "64g")


# -- scale (Fray's ResourceConfig.scale) -----------------------------------------------------------


def test_scale_all_three() -> None:
    scaled = RC(cpu=1, ram="4g", disk="2g").scale(2)
    assert (scaled.cpu, scaled.ram, scaled.disk) == (2, "8g", "4g")


def test_scale_keyword_factors() -> None:
    assert RC(ram="4g").scale(ram=0.3).ram == "1.2g"
    assert RC(ram="3g").scale(ram=0.1).ram == "307.2m"
    only_cpu = RC(cpu=3, ram="4g", disk="2g").scale(cpu=2)
    assert (only_cpu.cpu, only_cpu.ram, only_cpu.disk) == (6, "4g", "2g")


def test_scale_a_tpu_config_keeps_cpu_a_float_and_everything_else() -> None:
    original = RC.with_tpu(
        ["v5p-8", "v4-8"],
        slice_count=2,
        regions=["us-east5"],
        zone="us-east5-a",
        preemptible=False,
        image="img",
        target_cluster="c",
        container_profile="privileged",
    )
    scaled = original.scale(0.5)
    assert scaled.cpu == 52.0 and isinstance(scaled.cpu, float)
    assert (scaled.ram, scaled.disk) == ("112g", "25g")
    for name in (
        "device",
        "device_alternatives",
        "replicas",
        "regions",
        "zone",
        "preemptible",
        "image",
        "target_cluster",
        "container_profile",
    ):
        assert getattr(scaled, name) == getattr(original, name), name
    assert (original.cpu, original.ram) == (104, "224g")  # the original is untouched
    assert scaled is not original


def test_scale_by_one_keeps_the_size_text() -> None:
    scaled = RC(ram="4GB", disk="16 GiB").scale(1.0)
    assert (scaled.ram, scaled.disk) == ("4GB", "16 GiB")


def test_scale_with_both_a_factor_and_keywords_is_frays_error() -> None:
    with pytest.raises(ValueError) as caught:
        RC().scale(2, cpu=1)
    assert str(caught.value) == "Pass either a single factor or cpu/ram/disk keyword factors, not both."


def test_scale_to_nothing_is_a_value_error() -> None:
    with pytest.raises(ValueError) as caught:
        RC().scale(0)
    one_line_value_error(caught, "cpu 0")


# -- figures ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rc", "chips"),
    [
        (RC(), 0),
        (RC.with_tpu("v5p-8"), 4),
        (RC.with_tpu("v5p-8", slice_count=2), 8),
        (RC.with_tpu("v4-32"), 16),
        (RC.with_tpu("v4-32", slice_count=2), 32),
        (RC.with_gpu("H100", count=8), 8),
        (RC.with_gpu("H100", count=8, replicas=2), 16),
    ],
)
def test_chip_count_is_per_replica_chips_times_replicas(rc: ResourceConfig, chips: int) -> None:
    assert rc.chip_count() == chips


@pytest.mark.parametrize(
    ("rc", "flops"),
    [
        (RC.with_tpu("v5p-8", slice_count=2), 3.672e15),
        (RC.with_tpu("v4-32"), 4.4e15),
        (RC.with_gpu("H100", count=8), 7.916e15),
        (RC(), 1e11),
        (RC(device=CpuConfig(), cpu=64), 1e11),  # Fray's nominal constant, whatever the cores
    ],
)
def test_total_flops_matches_real_fray(rc: ResourceConfig, flops: float) -> None:
    assert rc.total_flops() == flops
    assert rc.total_flops("bf16") == flops


def test_total_flops_dtype_is_normalised() -> None:
    assert RC.with_tpu("v5p-8").total_flops("AMP_BF16") == 459e12 * 4


def test_total_flops_of_gb200_is_an_error() -> None:
    with pytest.raises(ValueError) as caught:
        RC.with_gpu("GB200", count=4, replicas=16).total_flops()
    one_line_value_error(caught, "GB200")


def test_device_flops_delegates() -> None:
    assert RC.with_gpu("H100").device_flops() == 989.5e12
    with pytest.raises(NotImplementedError):
        RC().device_flops()


@pytest.mark.parametrize(
    ("rc", "hbm"),
    [
        (RC.with_tpu("v5p-8"), 408_021_893_120),
        (RC.with_tpu("v4-32"), 549_755_813_888),
        (RC.with_tpu("v4-32", slice_count=2), 2 * 549_755_813_888),
        (RC.with_tpu("v5litepod-16"), 16 * 16 * GIB),
        (RC.with_gpu("H100", count=8), None),
        (RC(), None),
    ],
)
def test_hbm_capacity(rc: ResourceConfig, hbm: int | None) -> None:
    assert rc.hbm_capacity_bytes() == hbm


# -- invalid input: one line, ValueError, names the value ----------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "shown"),
    [
        ({"cpu": 0}, "cpu 0"),
        ({"cpu": -1}, "-1"),
        ({"cpu": math.nan}, "nan"),
        ({"cpu": math.inf}, "inf"),
        ({"cpu": "abc"}, "'abc'"),
        ({"cpu": 0.0005}, "0.0005"),
        ({"ram": "lots"}, "'lots'"),
        ({"ram": "-4g"}, "'-4g'"),
        ({"disk": "9000000000t"}, "'9000000000t'"),
        ({"replicas": 0}, "replicas 0"),
        ({"replicas": -3}, "-3"),
        ({"regions": "us-central1"}, "'us-central1'"),
        ({"regions": ["us-central1", ""]}, "''"),
        ({"device_alternatives": "v5p-8"}, "'v5p-8'"),
        ({"device": {"kind": "xpu"}}, "'xpu'"),
        ({"preemptible": "maybe"}, "'maybe'"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_invalid_fields_raise_one_line_naming_the_value(kwargs: dict, shown: str) -> None:
    with pytest.raises(ValueError) as caught:
        RC(**kwargs)
    one_line_value_error(caught, shown)


def test_several_problems_are_still_one_line() -> None:
    with pytest.raises(ValueError) as caught:
        RC(cpu="abc", ram="lots", replicas=0)
    message = one_line_value_error(caught, "'abc'", "'lots'", "replicas 0")
    assert message.count("ResourceConfig.") == 3


def test_assignment_is_validated_too() -> None:
    rc = RC()
    with pytest.raises(ValueError) as caught:
        rc.ram = "lots"
    one_line_value_error(caught, "'lots'")
    assert rc.ram == "4g"
    rc.cpu = 2
    assert rc.cpu == 2


def test_positional_misuse() -> None:
    with pytest.raises(ValueError) as caught:
        RC(*range(13))
    one_line_value_error(caught, "at most 12 positional")
    with pytest.raises(ValueError) as caught:
        RC(2, cpu=3)
    one_line_value_error(caught, "'cpu'")


def test_builder_defaults_follow_the_device() -> None:
    assert builder_defaults(TpuConfig("v5p-8")) == {"cpu": 104, "ram": "224g", "disk": "50g"}
    assert builder_defaults(ResourceConfig().device) == {"cpu": 1, "ram": "4g", "disk": "64g"}
    assert builder_defaults(GpuConfig("H100", count=8)) == builder_defaults(CpuConfig())  # only TPU hosts differ
