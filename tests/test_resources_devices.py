"""Device configs (CPU/GPU/TPU), the TPU topology/HBM/FLOPS lookups, and the did-you-mean helper."""

from __future__ import annotations

import pytest

from fray_jupyter.resources.devices import (
    CpuConfig,
    GpuConfig,
    TpuConfig,
    device_flops,
    flops_key,
    get_tpu_topology,
    tpu_family,
    tpu_hbm_bytes_per_chip,
    tpu_hbm_capacity_bytes,
)
from fray_jupyter.resources.suggest import unknown_choice
from fray_jupyter.resources.tables import DEVICE_FLOPS, TPU_TOPOLOGIES, TPU_TOPOLOGY_BY_NAME
from tests.assertions import one_line_value_error

GIB = 1024**3
TPU_NAMES = [t.name for t in TPU_TOPOLOGIES]




# -- the TPU table --------------------------------------------------------------------------------


def test_tpu_table_has_every_type_of_the_reference_once() -> None:
    assert len(TPU_TOPOLOGIES) == 39
    assert len(set(TPU_NAMES)) == len(TPU_NAMES)
    assert TPU_NAMES[0] == "v4-8" and TPU_NAMES[-1] == "v6e-256"
    assert set(TPU_TOPOLOGY_BY_NAME) == set(TPU_NAMES)
    assert "v5litepod-2" in TPU_NAMES and "v5e-4" not in TPU_NAMES


@pytest.mark.parametrize("row", TPU_TOPOLOGIES, ids=TPU_NAMES)
def test_every_tpu_row_is_consistent(row) -> None:
    assert row.chip_count == row.vm_count * row.chips_per_vm
    assert row.host_count <= row.vm_count
    assert get_tpu_topology(row.name) is row


@pytest.mark.parametrize(
    ("name", "chips", "hosts", "vms", "per_vm"),
    [
        ("v4-8", 4, 1, 1, 4),
        ("v4-32", 16, 4, 4, 4),
        ("v4-4096", 2048, 512, 512, 4),
        ("v5litepod-2", 2, 1, 1, 2),
        ("v5litepod-8", 8, 1, 1, 8),
        ("v5litepod-16", 16, 2, 4, 4),  # 2 hosts but 4 VMs
        ("v5litepod-256", 256, 32, 64, 4),
        ("v5p-8", 4, 1, 1, 4),
        ("v5p-12288", 6144, 1536, 1536, 4),
        ("v6e-1", 1, 1, 1, 1),
        ("v6e-8", 8, 1, 1, 8),
        ("v6e-16", 16, 4, 4, 4),
    ],
)
def test_selected_tpu_rows(name: str, chips: int, hosts: int, vms: int, per_vm: int) -> None:
    row = get_tpu_topology(name)
    assert (row.name, row.chip_count, row.host_count, row.vm_count, row.chips_per_vm) == (
        name,
        chips,
        hosts,
        vms,
        per_vm,
    )


@pytest.mark.parametrize(
    ("bad", "hint"),
    [("v5p-7", "did you mean 'v5p-8'?"), ("v4-33", "did you mean 'v4-32'?"), ("v6e-12", "did you mean")],
)
def test_unknown_tpu_type_suggests_the_nearest(bad: str, hint: str) -> None:
    with pytest.raises(ValueError) as caught:
        get_tpu_topology(bad)
    one_line_value_error(caught, f"unknown TPU type {bad!r}", hint)


@pytest.mark.parametrize("bad", [None, 8, ""])
def test_non_string_tpu_type_is_a_value_error(bad: object) -> None:
    with pytest.raises(ValueError) as caught:
        get_tpu_topology(bad)  # type: ignore[arg-type]
    one_line_value_error(caught, repr(bad))


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("v4-8", "v4"),
        ("v4-4096", "v4"),
        ("v5litepod-16", "v5e"),
        ("v5e-4", "v5e"),
        ("v5p-8", "v5p"),
        ("v6e-256", "v6e"),
    ],
)
def test_tpu_family_by_prefix(name: str, family: str) -> None:
    assert tpu_family(name) == family


@pytest.mark.parametrize("bad", ["v7-8", "v5-8", "tpu-v4-8", "v5pod-8"])
def test_tpu_family_of_an_unknown_prefix_names_it(bad: str) -> None:
    with pytest.raises(ValueError) as caught:
        tpu_family(bad)
    one_line_value_error(caught, repr(bad))


def test_hbm_per_chip_by_family() -> None:
    assert {f: tpu_hbm_bytes_per_chip(f) for f in ("v4", "v5e", "v5p", "v6e")} == {
        "v4": 32 * GIB,
        "v5e": 16 * GIB,
        "v5p": 95 * GIB,
        "v6e": 32 * GIB,
    }
    with pytest.raises(ValueError) as caught:
        tpu_hbm_bytes_per_chip("v7")
    one_line_value_error(caught, "'v7'")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("v5p-8", 408_021_893_120),
        ("v4-32", 549_755_813_888),
        ("v5litepod-16", 16 * 16 * GIB),
        ("v6e-8", 8 * 32 * GIB),
    ],
)
def test_hbm_capacity_of_a_slice(name: str, expected: int) -> None:
    assert tpu_hbm_capacity_bytes(name) == expected


# -- FLOPS ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("device", "key"),
    [
        ("v5p-8", "v5p"),
        ("v5litepod-16", "v5litepod"),
        ("V4-32", "v4"),
        ("H100", "h100"),
        ("A100-80G", "a100-80g"),
        ("v100", "v100"),
        ("v100-sxm", "v100"),
    ],  # Fray's rule: a name starting with 'v' keeps only its prefix
)
def test_flops_key(device: str, key: str) -> None:
    assert flops_key(device) == key


@pytest.mark.parametrize(
    ("device", "dtype", "expected"),
    [
        ("H100", "bf16", 989.5e12),
        ("h100", "BF16", 989.5e12),
        ("H100", "fp8", 1.979e15),
        ("A100-80G", "bf16", 312e12),
        ("auto", "bf16", 989.5e12),
        ("B200", "bf16", 2.5e15),
        ("v5p-8", "AMP_BF16", 459e12),
        ("v5p-8", "amp_bf16", 459e12),
        ("v4-32", "bf16", 275e12),
        ("v5litepod-16", "bf16", 197e12),
        ("v5litepod-16", "int8", 393e12),
        ("v6e-8", "bf16", 918e12),
    ],
)
def test_device_flops(device: str, dtype: str, expected: float) -> None:
    assert device_flops(device, dtype) == expected


@pytest.mark.parametrize(
    ("device", "dtype"),
    [("GB200", "bf16"), ("gb300", "bf16"), ("H100", "fp4"), ("v4-8", "fp32"), ("nonsense", "bf16")],
)
def test_device_flops_is_none_when_unknown(device: str, dtype: str) -> None:
    assert device_flops(device, dtype) is None


def test_gb200_is_deliberately_absent_from_the_flops_table() -> None:
    assert "gb200" not in DEVICE_FLOPS and "gb300" not in DEVICE_FLOPS and "b200" in DEVICE_FLOPS


# -- CpuConfig --------------------------------------------------------------------------------------


def test_cpu_config_fields_and_behaviour() -> None:
    cpu = CpuConfig()
    assert (cpu.kind, cpu.variant) == ("cpu", "cpu")
    assert list(CpuConfig.model_fields) == ["kind", "variant"]
    assert cpu.chip_count() == 0
    assert cpu.default_env_vars() == {"JAX_PLATFORMS": "cpu"}
    with pytest.raises(NotImplementedError):
        cpu.device_flops()
    assert CpuConfig("cpu", "cpu") == cpu


# -- GpuConfig --------------------------------------------------------------------------------------


def test_gpu_config_fields_defaults_and_positional_order() -> None:
    assert list(GpuConfig.model_fields) == ["variant", "kind", "count"]
    gpu = GpuConfig("H100")
    assert (gpu.variant, gpu.kind, gpu.count) == ("H100", "gpu", 1)
    assert GpuConfig("H100", "gpu", 8) == GpuConfig(variant="H100", count=8)
    assert GpuConfig("H100", "gpu", 8).count == 8


def test_gpu_config_with_count_in_kinds_place_explains_fray_order() -> None:
    with pytest.raises(ValueError) as caught:
        GpuConfig("GB200", 4)  # type: ignore[arg-type]
    one_line_value_error(caught, "kind", "GpuConfig('GB200', count=4)")


def test_gpu_config_behaviour() -> None:
    gpu = GpuConfig("H100", count=8)
    assert gpu.chip_count() == 8
    assert gpu.default_env_vars() == {"JAX_PLATFORMS": ""}
    assert gpu.device_flops() == 989.5e12
    assert gpu.device_flops("AMP_BF16") == 989.5e12
    assert gpu.total_flops() == 7.916e15
    assert GpuConfig("h100", count=2).variant == "h100"  # case is kept


def test_gb200_flops_is_an_error_naming_the_model() -> None:
    with pytest.raises(ValueError) as caught:
        GpuConfig("GB200", count=4).device_flops()
    one_line_value_error(caught, "'GB200'")


def test_unknown_dtype_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError) as caught:
        GpuConfig("H100").device_flops("fp3")
    one_line_value_error(caught, "'fp3'")


@pytest.mark.parametrize(
    ("kwargs", "shown"),
    [
        ({"variant": "H100", "count": 0}, "0"),
        ({"variant": "H100", "count": -2}, "-2"),
        ({"variant": "H 100"}, "'H 100'"),
        ({"variant": ""}, "''"),
        ({"variant": "H100", "kind": "tpu"}, "'tpu'"),
        ({"variant": "H100", "count": "eight"}, "'eight'"),
        ({"variant": "H100", "colour": "green"}, "colour"),
    ],
)
def test_invalid_gpu_config_is_one_line_naming_the_value(kwargs: dict, shown: str) -> None:
    with pytest.raises(ValueError) as caught:
        GpuConfig(**kwargs)
    one_line_value_error(caught, shown)


def test_positional_misuse_is_a_value_error() -> None:
    with pytest.raises(ValueError) as caught:
        GpuConfig("H100", "gpu", 8, "extra")  # type: ignore[call-arg]
    one_line_value_error(caught, "at most 3 positional")
    with pytest.raises(ValueError) as caught:
        GpuConfig("H100", variant="A100")
    one_line_value_error(caught, "'variant'", "both")


def test_devices_are_frozen() -> None:
    gpu = GpuConfig("H100", count=8)
    with pytest.raises(ValueError) as caught:
        gpu.count = 4  # type: ignore[misc]
    one_line_value_error(caught, "count")
    assert gpu.count == 8


# -- TpuConfig --------------------------------------------------------------------------------------


def test_tpu_config_fields_and_positional_order() -> None:
    assert list(TpuConfig.model_fields) == ["variant", "kind", "topology"]
    tpu = TpuConfig("v4-8", "tpu", "2x2x1")
    assert (tpu.variant, tpu.kind, tpu.topology) == ("v4-8", "tpu", "2x2x1")
    assert TpuConfig("v4-8").topology is None


@pytest.mark.parametrize("name", TPU_NAMES)
def test_tpu_config_counts_per_vm(name: str) -> None:
    row = get_tpu_topology(name)
    tpu = TpuConfig(name)
    assert tpu.chip_count() == row.chips_per_vm
    assert tpu.vm_count() == row.vm_count


def _expected_tpu_env(name: str) -> dict[str, str]:
    if name.startswith(("v5litepod-", "v5p-")):
        return {"JAX_PLATFORMS": "", "LIBTPU_INIT_ARGS": "--xla_tpu_scoped_vmem_limit_kib=50000"}
    if name.startswith("v6e-"):
        return {"JAX_PLATFORMS": "", "LIBTPU_INIT_ARGS": "--xla_tpu_scoped_vmem_limit_kib=98304"}
    return {"JAX_PLATFORMS": ""}


@pytest.mark.parametrize("name", TPU_NAMES)
def test_tpu_default_env_vars_by_family(name: str) -> None:
    assert TpuConfig(name).default_env_vars() == _expected_tpu_env(name)


def test_tpu_flops_per_vm() -> None:
    assert TpuConfig("v5p-8").device_flops() == 459e12
    assert TpuConfig("v5p-8").total_flops() == 459e12 * 4
    assert TpuConfig("v6e-8").total_flops() == 918e12 * 8
    assert TpuConfig("v4-32").total_flops() == 275e12 * 4  # one VM's chips


def test_unknown_tpu_variant_is_rejected_at_construction() -> None:
    with pytest.raises(ValueError) as caught:
        TpuConfig("v5p-7")
    one_line_value_error(caught, "'v5p-7'", "did you mean 'v5p-8'?")


# -- did-you-mean -----------------------------------------------------------------------------------


def test_unknown_choice_messages() -> None:
    assert unknown_choice("TPU type", "v5p-7", TPU_NAMES) == "unknown TPU type 'v5p-7'; did you mean 'v5p-8'?"
    assert (
        unknown_choice("colour", "zzz", ["red", "blue"])
        == "unknown colour 'zzz'; expected one of 'red', 'blue'"
    )
    many = [f"item{i:02d}" for i in range(20)]
    long = unknown_choice("thing", "qqqqqqq", many, list_limit=3)
    assert long == "unknown thing 'qqqqqqq'; expected one of 'item00', 'item01', 'item02', …"
