"""Placement constraints (Fray's ``convert_constraints``, then ``IrisClient.submit``): Fray's order,
Iris's encoding (lowercasing, EQ vs IN, EXISTS), the ANY-region marker and its stripping."""

from __future__ import annotations

import pytest

from fray_jupyter.iris.constraints import Constraint, convert_constraints, strip_any_region
from fray_jupyter.iris.placement import Rule
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.resources import ANY_REGION, CpuConfig, GpuConfig, ResourceConfig, TpuConfig

RC = ResourceConfig


def shape(constraints) -> list[tuple[str, str, tuple[str, ...], str]]:
    return [(c.key, c.op, c.values, c.mode) for c in constraints]


def test_order_is_preemptible_region_zone_cluster_device_variant() -> None:
    rc = RC.with_gpu(
        "H100",
        count=8,
        preemptible=False,
        regions=["us-east5", "us-central1"],
        zone="us-east5-a",
        target_cluster="cw-east",
        device_alternatives=["A100"],
    )
    assert shape(convert_constraints(rc)) == [
        ("preemptible", "EQ", ("false",), "REQUIRED"),
        ("region", "IN", ("us-east5", "us-central1"), "REQUIRED"),
        ("zone", "EQ", ("us-east5-a",), "REQUIRED"),
        ("cluster", "EQ", ("cw-east",), "REQUIRED"),
        ("device-variant", "IN", ("h100", "a100"), "REQUIRED"),
    ]


def test_defaults_emit_nothing() -> None:
    assert convert_constraints(RC()) == []
    assert convert_constraints(RC(preemptible=True, regions=None, zone=None, target_cluster=None)) == []
    assert convert_constraints(RC(regions=[], zone="", target_cluster="")) == []  # empty means unset


def test_non_preemptible_is_a_required_eq_false() -> None:
    assert shape(convert_constraints(RC(preemptible=False))) == [
        ("preemptible", "EQ", ("false",), "REQUIRED")
    ]


def test_one_region_is_eq_several_are_in_in_order() -> None:
    assert shape(convert_constraints(RC(regions=["us-central1"]))) == [
        ("region", "EQ", ("us-central1",), "REQUIRED")
    ]
    assert shape(convert_constraints(RC(regions=["us-central2", "us-central1", "europe-west4"]))) == [
        ("region", "IN", ("us-central2", "us-central1", "europe-west4"), "REQUIRED")
    ]


def test_values_are_stripped_and_lowercased_keys_are_not() -> None:
    rc = RC(regions=[" US-Central1 "], zone="US-EAST1-D", target_cluster="CW-East")
    assert shape(convert_constraints(rc)) == [
        ("region", "EQ", ("us-central1",), "REQUIRED"),
        ("zone", "EQ", ("us-east1-d",), "REQUIRED"),
        ("cluster", "EQ", ("cw-east",), "REQUIRED"),
    ]
    assert Constraint("Device-Variant", "IN", ("H100", "GB200")).values == ("h100", "gb200")
    assert Constraint("Device-Variant", "IN", ("H100",)).key == "Device-Variant"


def test_any_region_alone_is_the_exists_marker() -> None:
    fray = convert_constraints(RC(regions=[ANY_REGION]))
    assert shape(fray) == [("region", "EXISTS", (), "REQUIRED")]
    assert fray[0].is_any_region_marker
    assert strip_any_region(fray) == []


@pytest.mark.parametrize(
    "regions", [[ANY_REGION, "us-central1"], ["us-central1", ANY_REGION], [ANY_REGION, ANY_REGION]]
)
def test_any_region_combined_is_an_error(regions: list[str]) -> None:
    with pytest.raises(ValueError) as caught:
        convert_constraints(RC(regions=regions))
    assert str(caught.value) == f"ANY_REGION cannot be combined with specific regions; got {regions!r}"


def test_strip_keeps_everything_but_the_any_marker() -> None:
    kept = [
        Constraint("region", "EQ", ("us-central1",)),
        Constraint("zone", "EXISTS"),
        Constraint("region", "NOT_EXISTS"),
        Constraint("preemptible", "EQ", ("false",)),
    ]
    assert strip_any_region([Constraint("region", "EXISTS"), *kept]) == kept


@pytest.mark.parametrize(
    ("rc", "expected"),
    [
        (RC.with_tpu(["v4-8", "v5p-8"]), ("v4-8", "v5p-8")),
        (RC.with_tpu(["v6e-16", "v5litepod-16"]), ("v6e-16", "v5litepod-16")),
        (RC.with_gpu("GB200", count=4, device_alternatives=["GB300"]), ("gb200", "gb300")),
        (RC(device=TpuConfig("v5p-8"), device_alternatives=["v4-8"]), ("v5p-8", "v4-8")),
    ],
)
def test_alternatives_become_device_variant_in(rc: ResourceConfig, expected: tuple[str, ...]) -> None:
    assert shape(convert_constraints(rc)) == [("device-variant", "IN", expected, "REQUIRED")]


def test_alternatives_are_ignored_for_cpu() -> None:
    assert convert_constraints(RC(device=CpuConfig(), device_alternatives=["H100"])) == []


def test_no_alternatives_no_device_variant() -> None:
    """The controller derives device-type/device-variant itself; Fray sends none for one model."""
    assert convert_constraints(RC.with_gpu("H100", count=8)) == []
    assert convert_constraints(RC.with_tpu("v4-32")) == []


# -- encoding ---------------------------------------------------------------------------------------


def test_eq_writes_the_singular_value() -> None:
    proto = Constraint("zone", "EQ", ("us-east1-d",)).to_proto()
    assert (proto.key, proto.op, proto.mode) == (
        "zone",
        job_pb2.CONSTRAINT_OP_EQ,
        job_pb2.CONSTRAINT_MODE_REQUIRED,
    )
    assert proto.HasField("value") and proto.value.string_value == "us-east1-d"
    assert len(proto.values) == 0


def test_in_writes_the_repeated_values() -> None:
    proto = Constraint("region", "IN", ("a", "b")).to_proto()
    assert proto.op == job_pb2.CONSTRAINT_OP_IN
    assert [v.string_value for v in proto.values] == ["a", "b"]
    assert not proto.HasField("value")


def test_exists_writes_no_value() -> None:
    proto = Constraint("region", "EXISTS").to_proto()
    assert proto.op == job_pb2.CONSTRAINT_OP_EXISTS
    assert not proto.HasField("value") and len(proto.values) == 0


def test_preferred_mode_and_other_ops() -> None:
    proto = Constraint("tpu-vm-count", "GE", ("4",), mode="PREFERRED").to_proto()
    assert (proto.op, proto.mode) == (job_pb2.CONSTRAINT_OP_GE, job_pb2.CONSTRAINT_MODE_PREFERRED)
    assert str(Constraint("tpu-vm-count", "GE", ("4",), mode="PREFERRED")) == "tpu-vm-count GE 4 (preferred)"


def test_text_form() -> None:
    assert str(Constraint("region", "IN", ("a", "b"))) == "region IN [a, b]"
    assert str(Constraint("region", "IN", ("a",))) == "region IN [a]"
    assert str(Constraint("zone", "EQ", ("z",))) == "zone EQ z"
    assert str(Constraint("region", "EXISTS")) == "region EXISTS"


@pytest.mark.parametrize(
    ("op", "values"),
    [("EQ", ()), ("EQ", ("a", "b")), ("IN", ()), ("EXISTS", ("a",)), ("NOT_EXISTS", ("a",)), ("GT", ())],
)
def test_arity_is_checked(op: str, values: tuple[str, ...]) -> None:
    with pytest.raises(ValueError) as caught:
        Constraint("k", op, values)
    assert op in str(caught.value)


def test_exists_arity_message_says_no_values() -> None:
    with pytest.raises(ValueError) as caught:
        Constraint("region", "EXISTS", ("a",))
    assert "0..n" not in str(caught.value)


def test_unknown_op_is_a_value_error_naming_it() -> None:
    with pytest.raises(ValueError, match="LIKE"):
        Constraint("region", "LIKE", ("us",))


def test_device_variant_uses_the_primary_variant_as_written() -> None:
    rc = RC(device=GpuConfig("h100", count=2), device_alternatives=["H200"])
    assert convert_constraints(rc)[0].values == ("h100", "h200")


@pytest.mark.parametrize("constraint", [
    Constraint("region", "EQ", ("us-east5",)), Constraint("device-variant", "IN", ("v5p-8", "v5p-16")),
    Constraint("region", "EXISTS"), Constraint("zone", "NOT_EXISTS", mode="PREFERRED"), Constraint("tier", "GE", ("2",)),
])
def test_a_wire_constraint_reads_back_as_iris_reads_it(constraint: Constraint) -> None:
    """``from_proto`` undoes ``to_proto`` and reads the same operator and values the placement rules do."""
    proto = constraint.to_proto()
    assert Constraint.from_proto(proto) == constraint
    rule = Rule.from_proto(proto)
    assert (rule.op, rule.values, rule.soft) == (constraint.op, constraint.values, constraint.mode == "PREFERRED")
