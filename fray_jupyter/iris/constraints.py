"""Placement constraints: Fray's ``convert_constraints`` and Iris's constraint encoding rules."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, cast

from fray_jupyter.iris.placement import wire_operands
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.resources.config import ANY_REGION, ResourceConfig
from fray_jupyter.resources.devices import CpuConfig
from fray_jupyter.resources.suggest import unknown_choice

# Operator -> (fewest, most) values it takes; None is unbounded.
CONSTRAINT_ARITY: Final[Mapping[str, tuple[int, int | None]]] = {
    "EQ": (1, 1), "NE": (1, 1), "GT": (1, 1), "GE": (1, 1), "LT": (1, 1), "LE": (1, 1),
    "IN": (1, None), "EXISTS": (0, 0), "NOT_EXISTS": (0, 0),
}
REGION, ZONE, PREEMPTIBLE, DEVICE_VARIANT, CLUSTER = "region", "zone", "preemptible", "device-variant", "cluster"
_MODES: Final[dict[int, str]] = {v: k.removeprefix("CONSTRAINT_MODE_") for k, v in job_pb2.ConstraintMode.items()}


@dataclass(frozen=True)
class Constraint:
    """One attribute test a worker must pass (REQUIRED) or should pass (PREFERRED).

    Values are stripped and lowercased on construction, as Iris does, so "H100" is sent as "h100".
    """

    key: str
    op: str
    values: tuple[str, ...] = ()
    mode: str = "REQUIRED"

    def __post_init__(self) -> None:
        if self.op not in CONSTRAINT_ARITY:
            raise ValueError(unknown_choice("constraint operator", self.op, CONSTRAINT_ARITY))
        fewest, most = CONSTRAINT_ARITY[self.op]
        if not (fewest <= len(self.values) and (most is None or len(self.values) <= most)):
            wanted = "no values" if most == 0 else "one value" if most == 1 else "one or more values"
            raise ValueError(f"constraint {self.key} {self.op} takes {wanted}, got {list(self.values)}")
        object.__setattr__(self, "values", tuple(v.strip().lower() for v in self.values))

    @property
    def is_any_region_marker(self) -> bool:
        """``region EXISTS``: Fray's ANY marker, which only stops inheritance and is never sent."""
        return self.key == REGION and self.op == "EXISTS"

    @classmethod
    def from_proto(cls, proto: job_pb2.Constraint) -> Constraint:
        """A wire constraint with string values (the only kind Fray sends and a task passes on),
        its values read as Iris reads them (``placement.wire_operands``)."""
        op, values = wire_operands(proto)
        return cls(proto.key, op, tuple(v.string_value for v in values), _MODES.get(proto.mode, "REQUIRED"))

    def to_proto(self) -> job_pb2.Constraint:
        """Wire form: IN fills ``values``, EXISTS/NOT_EXISTS neither, other ops the single ``value``."""
        proto = job_pb2.Constraint(
            key=self.key, op=cast(job_pb2.ConstraintOp, job_pb2.ConstraintOp.Value(f"CONSTRAINT_OP_{self.op}")),
            mode=cast(job_pb2.ConstraintMode, job_pb2.ConstraintMode.Value(f"CONSTRAINT_MODE_{self.mode}")),
        )
        if self.op == "IN":
            proto.values.extend(job_pb2.AttributeValue(string_value=v) for v in self.values)
        elif self.values:
            proto.value.string_value = self.values[0]
        return proto

    def __str__(self) -> str:
        shown = "" if not self.values else (
            " " + self.values[0] if len(self.values) == 1 and self.op != "IN" else " [" + ", ".join(self.values) + "]"
        )
        soft = " (preferred)" if self.mode == "PREFERRED" else ""
        return f"{self.key} {self.op}{shown}{soft}"


def _in_or_eq(key: str, values: list[str]) -> Constraint:
    return Constraint(key, "EQ", (values[0],)) if len(values) == 1 else Constraint(key, "IN", tuple(values))


def convert_constraints(resources: ResourceConfig) -> list[Constraint]:
    """Fray's constraints for a ``ResourceConfig``, in Fray's order:

    non-preemptible -> ``preemptible EQ false`` (REQUIRED; preemptible emits nothing);
    ``[ANY_REGION]`` -> ``region EXISTS`` (ANY with other regions is an error); one region -> EQ,
    several -> IN (order kept), None or [] -> nothing (inherit); zone -> ``zone EQ``;
    target_cluster -> ``cluster EQ``; TPU/GPU alternatives -> ``device-variant IN [primary, *alts]``
    (ignored on a CPU device).
    """
    constraints: list[Constraint] = []
    if not resources.preemptible:
        constraints.append(Constraint(PREEMPTIBLE, "EQ", ("false",)))
    regions = resources.regions
    if regions and ANY_REGION in regions:
        if len(regions) > 1:
            raise ValueError(f"ANY_REGION cannot be combined with specific regions; got {list(regions)}")
        constraints.append(Constraint(REGION, "EXISTS"))
    elif regions:
        constraints.append(_in_or_eq(REGION, list(regions)))
    if resources.zone:
        constraints.append(Constraint(ZONE, "EQ", (resources.zone,)))
    if resources.target_cluster:
        constraints.append(Constraint(CLUSTER, "EQ", (resources.target_cluster,)))
    if resources.device_alternatives and not isinstance(resources.device, CpuConfig):
        constraints.append(_in_or_eq(DEVICE_VARIANT, [resources.device.variant, *resources.device_alternatives]))
    return constraints


def strip_any_region(constraints: Iterable[Constraint]) -> list[Constraint]:
    """What Iris sends: every constraint except the ANY-region marker."""
    return [c for c in constraints if not c.is_any_region_marker]
