"""What Iris 0.2.227 does with a ``LaunchJobRequest``: the gangs it attempts, which scale groups can
ever host them, and the reasons it gives when none can. Pure functions over the request (wire form)
and a ``ClusterProfile``; the preview, the embedded controller and ``fit()`` all call these, so the
picture, the emulation and the verdict cannot disagree. Rules (read from Iris's controller, autoscaler
routing and scheduler; the gang rule measured on the genuine Iris local cluster, ``tests/twin.py``):

* **Gangs.** A coscheduled job (``coscheduling.group_by`` set) is ONE gang: all its tasks land at once
  on workers sharing one value of ``group_by``, task i on the worker with the i-th ``tpu-worker-id``.
  Any other job's tasks are placed one by one. The autoscaler scales a group up for a gang only if the
  group's ``num_vms`` equals the gang's size; a TPU slice of one variant always has ``vm_count`` VMs,
  so a ``tpu-name`` gang of any other size is never placed (``gang_error``), whatever the cluster.
* **Constraints.** The device gives ``device-type EQ`` (not for CPU) and ``device-variant EQ`` (unless
  "auto"); an explicit constraint on a canonical key (device-type, device-variant, preemptible, region,
  zone) replaces the derived one. Only REQUIRED constraints on those keys route to groups (CPU
  ``device-type`` is dropped: a CPU job fits any group); other keys only filter workers.
* **LaunchJob** (``launch_refusal``): a TPU chip count that is not the variant's chips per VM, or
  alternatives of different VM shapes, is INVALID_ARGUMENT; a ``cluster`` pin is INVALID_ARGUMENT (no
  federation peers); no group matching the routing constraints, a coscheduled size no matching group's
  ``num_vms`` divides, or no matching group with the per-VM cpu/memory/disk/chips is FAILED_PRECONDITION
  "Job <id> is unschedulable: <reason> (constraints: …)".
* **Routing** (``route``): the groups the autoscaler could scale up for one gang (``num_vms`` = gang
  size) or one task, or its reason (``coschedule_mismatch: …``). An accepted job no group and no warm
  workers can hold stays PENDING (``placement_workers``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, TypeVar

from fray_jupyter.cluster.profile import ClusterProfile, ScaleGroup
from fray_jupyter.iris.marin_versions import FOLLOWED
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.resources.tables import TPU_TOPOLOGIES, TPU_TOPOLOGY_BY_NAME

LaunchJobRequest = controller_pb2.Controller.LaunchJobRequest
IRIS_VERSION: Final[str] = FOLLOWED
"""The Iris release whose placement these rules follow: the Marin release the translation follows."""
TPU_NAME: Final[str] = "tpu-name"
AUTO_VARIANT: Final[str] = "auto"
CANONICAL_KEYS: Final[frozenset[str]] = frozenset({"device-type", "device-variant", "preemptible", "region", "zone"})
"""Keys on which a later list of constraints replaces an earlier one whole when they are merged
(Iris's canonical keys: a job's own region replaces the region it would inherit)."""
ROUTING_KEYS: Final[frozenset[str]] = CANONICAL_KEYS
AVAILABILITY_PREFIX: Final[str] = "availability:"
CLUSTER_KEY: Final[str] = "cluster"
OP_NAMES: Final[dict[int, str]] = {v: k.removeprefix("CONSTRAINT_OP_") for k, v in job_pb2.ConstraintOp.items()}
"""``ConstraintOp`` number → operator name (``CONSTRAINT_OP_IN`` → ``"IN"``)."""
_GLYPHS: Final[dict[str, str]] = {"EQ": "==", "NE": "!=", "GT": ">", "GE": ">=", "LT": "<", "LE": "<="}
_ZONE: Final = re.compile(r".+-[a-z]$")
Value = str | int | float


# -- constraints -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """One constraint as Iris evaluates it: strings stripped and lowercased, ints and floats as sent."""

    key: str
    op: str
    values: tuple[Value, ...] = ()
    soft: bool = False

    @classmethod
    def from_proto(cls, proto: job_pb2.Constraint) -> Rule:
        """Iris's ``Constraint.from_proto`` (``wire_operands``), each value as Iris compares it."""
        op, raw = wire_operands(proto)
        return cls(proto.key, op, tuple(_value(v) for v in raw), proto.mode == job_pb2.CONSTRAINT_MODE_PREFERRED)

    def matches(self, attribute: Value | None) -> bool:
        """Iris's ``evaluate_constraint`` (ordered ops compare numbers only)."""
        if self.op == "EXISTS":
            return attribute is not None
        if self.op == "NOT_EXISTS":
            return attribute is None
        if attribute is None:
            return False
        if self.op == "IN":
            return attribute in self.values
        target = self.values[0]
        if self.op in ("EQ", "NE"):
            return (attribute == target) == (self.op == "EQ")
        if isinstance(attribute, str) or isinstance(target, str):
            return False
        return {"GT": attribute > target, "GE": attribute >= target,
                "LT": attribute < target, "LE": attribute <= target}[self.op]

    def __str__(self) -> str:
        if self.op == "EXISTS":
            return f"{self.key} exists"
        if self.op == "NOT_EXISTS":
            return f"{self.key} absent"
        if self.op == "IN":
            return f"{self.key} in {{{', '.join(str(v) for v in self.values)}}}"
        return f"{self.key}{_GLYPHS[self.op]}{self.values[0]}"


def wire_operands(proto: job_pb2.Constraint) -> tuple[str, Sequence[job_pb2.AttributeValue]]:
    """A wire constraint's operator name and the values Iris's ``Constraint.from_proto`` reads for
    it: none for EXISTS/NOT_EXISTS, ``values`` for IN, the single ``value`` for any other op (an
    op number it does not know reads as EQ)."""
    op = OP_NAMES.get(proto.op, "EQ")
    if op in ("EXISTS", "NOT_EXISTS"):
        return op, ()
    return op, proto.values if op == "IN" else (proto.value,)


def _value(proto: job_pb2.AttributeValue) -> Value:
    if proto.HasField("int_value"):
        return proto.int_value
    if proto.HasField("float_value"):
        return proto.float_value
    return proto.string_value.strip().lower()


class Keyed(Protocol):
    """Anything with a constraint key (a ``Constraint``, a placement ``Rule``)."""

    @property
    def key(self) -> str: ...


KeyedT = TypeVar("KeyedT", bound=Keyed)


def merge_constraints(earlier: Sequence[KeyedT], later: Sequence[KeyedT]) -> list[KeyedT]:
    """Iris's ``merge_constraints``: ``earlier`` grouped by key; on a ``CANONICAL_KEYS`` key that
    ``later`` has, ``later``'s constraints replace ``earlier``'s; every other constraint of ``later``
    is added to its key's group unless an equal one is there. Groups keep the order their key first
    appeared in (a canonical key new in ``later`` comes after ``earlier``'s keys, in sorted order)."""
    by_key: dict[str, list[KeyedT]] = {}
    for constraint in earlier:
        by_key.setdefault(constraint.key, []).append(constraint)
    for key in sorted(CANONICAL_KEYS):
        own = [constraint for constraint in later if constraint.key == key]
        if own:
            by_key[key] = own
    for constraint in later:
        if constraint.key not in CANONICAL_KEYS and constraint not in by_key.setdefault(constraint.key, []):
            by_key[constraint.key].append(constraint)
    return [constraint for group in by_key.values() for constraint in group]


def device_kind(request: LaunchJobRequest) -> tuple[str, str]:
    """(device type, variant as sent): ``("tpu", "v5p-16")``, ``("gpu", "H100")``, ``("cpu", "")``."""
    device = request.resources.device
    if device.HasField("tpu"):
        return "tpu", device.tpu.variant
    if device.HasField("gpu"):
        return "gpu", device.gpu.variant
    return "cpu", ""


def device_text(resources: job_pb2.ResourceSpecProto) -> str:
    """The accelerator per task as a user names it: ``"v5p-8"``, ``"H100 ×8"``, or ``"cpu"``."""
    device = resources.device
    if device.HasField("tpu"):
        return device.tpu.variant
    if device.HasField("gpu"):
        return f"{device.gpu.variant} ×{device.gpu.count}" if device.gpu.count > 1 else device.gpu.variant
    return "cpu"


def effective_rules(request: LaunchJobRequest) -> list[Rule]:
    """The job's constraints as Iris stores them: derived device rules merged with the explicit ones
    (an explicit rule on a canonical key replaces the derived rules on that key)."""
    kind, variant = device_kind(request)
    derived: list[Rule] = []
    if request.resources.HasField("device") and kind != "cpu":
        derived.append(Rule("device-type", "EQ", (kind,)))
        if variant and variant != AUTO_VARIANT:
            derived.append(Rule("device-variant", "EQ", (variant.strip().lower(),)))
    return merge_constraints(derived, [Rule.from_proto(c) for c in request.constraints])


def routing_rules(rules: Iterable[Rule]) -> list[Rule]:
    """The REQUIRED rules that route to scale groups (CPU device-type dropped)."""
    return [r for r in rules if not r.soft and not (r.key == "device-type" and r.op == "EQ" and r.values == ("cpu",))
            and (r.key in ROUTING_KEYS or r.key.startswith(AVAILABILITY_PREFIX))]


def _group_attributes(group: ScaleGroup) -> dict[str, Value]:
    attrs: dict[str, Value] = dict(group.routing_attributes())
    if group.device_variant:  # LaunchJob treats availability:<variant> as satisfiable by a configured group
        attrs[AVAILABILITY_PREFIX + group.device_variant.strip().lower()] = "true"
    return attrs


def group_matches(group: ScaleGroup, rules: Iterable[Rule]) -> bool:
    """Whether ``group`` passes every routing rule."""
    attrs = _group_attributes(group)
    return all(rule.matches(attrs.get(rule.key)) for rule in rules)


# -- gangs (no cluster needed) -------------------------------------------------------------------------
@dataclass(frozen=True)
class Gang:
    """Tasks Iris places together: all at once on one ``group_by`` value (``group_by`` None: one task alone)."""

    tasks: tuple[int, ...]
    group_by: str | None


def gangs(request: LaunchJobRequest) -> tuple[Gang, ...]:
    """The units Iris attempts: one gang of every task for a coscheduled job, else one per task."""
    replicas = max(request.replicas, 1)
    if request.HasField("coscheduling") and request.coscheduling.group_by:
        return (Gang(tuple(range(replicas)), request.coscheduling.group_by),)
    return tuple(Gang((i,), None) for i in range(replicas))


def _same_family_with_vms(variant: str, vms: int) -> str | None:
    family = variant.rsplit("-", 1)[0]
    return next((t.name for t in TPU_TOPOLOGIES if t.name.rsplit("-", 1)[0] == family and t.vm_count == vms), None)


def gang_error(request: LaunchJobRequest) -> str | None:
    """Why a TPU gang can never be placed on any cluster (its size is not its slice's VM count), with
    what to do instead; None when the slice size allows it (or is unknown)."""
    kind, variant = device_kind(request)
    if kind != "tpu" or not request.HasField("coscheduling") or request.coscheduling.group_by != TPU_NAME:
        return None
    topology = TPU_TOPOLOGY_BY_NAME.get(variant)
    replicas = request.replicas
    if topology is None or replicas == topology.vm_count:
        return None
    message = (f"a {variant} slice has {topology.vm_count} VMs: this {replicas}-task gang can never be placed by "
               f"Iris {IRIS_VERSION} (a coscheduled job is one gang on one {TPU_NAME}, and the autoscaler only "
               f"scales a group whose slices have exactly {replicas} VMs)")
    bigger = _same_family_with_vms(variant, replicas)
    instead = [f"one bigger slice ({bigger}, {replicas} VMs)" if bigger else None]
    if replicas % topology.vm_count == 0:
        instead.append(f"{replicas // topology.vm_count} separate {variant} jobs (slices without a shared gang)")
    options = " or ".join(o for o in instead if o)
    return f"{message}; use {options} instead" if options else message


# -- groups (a cluster profile) ------------------------------------------------------------------------
def _resource_fit(group: ScaleGroup, resources: job_pb2.ResourceSpecProto) -> str | None:
    """Iris's per-VM check: cpu, memory, disk, then chips against the group's device_count (0 = unlimited)."""
    device = resources.device
    chips = (device.gpu.count if device.HasField("gpu") else 0) + (device.tpu.count if device.HasField("tpu") else 0)
    for name, need, available in (("cpu", resources.cpu_millicores, group.cpu_millicores),
                                  ("memory", resources.memory_bytes, group.memory_bytes),
                                  ("disk", resources.disk_bytes, group.disk_bytes),
                                  ("gpu", chips, group.device_count)):
        if need > 0 and available and need > available:
            return f"{name}: need {need}, available {available}"
    return None


def resource_fit(group: ScaleGroup, request: LaunchJobRequest) -> str | None:
    """Why one task's cpu/memory/disk/chips do not fit one VM of ``group`` (None: they fit)."""
    return _resource_fit(group, request.resources)


def _requirement(rules: Sequence[Rule], key: str) -> frozenset[str] | None:
    values = {str(v) for r in rules if r.key == key and r.op in ("EQ", "IN") for v in r.values}
    return frozenset(values) if values else None


def _locality(kind: str, other: str, requested: frozenset[str], same: set[str], others: set[str]) -> str:
    parts = [f"no groups in {kind} {', '.join(sorted(requested))}"]
    for value in sorted(requested):
        confused = (not _ZONE.fullmatch(value)) if kind == "zone" else bool(_ZONE.fullmatch(value))
        if confused and value in others:
            parts.append(f"'{value}' looks like a {other}, not a {kind}; use a {other} constraint instead")
        elif close := difflib.get_close_matches(value, same, n=1, cutoff=0.7):
            parts.append(f"did you mean {close[0]}?")
    return "; ".join(parts)


def diagnose(rules: Sequence[Rule], groups: Sequence[ScaleGroup]) -> str:
    """Why no group matches: device, then preemptible, zone, region (Iris's ``_diagnose``)."""
    kinds = _requirement(rules, "device-type")
    kind = next(iter(kinds)) if kinds else "cpu"
    variants = _requirement(rules, "device-variant")
    shown = ",".join(sorted(variants)) if variants else "*"
    matching = [g for g in groups if kind == "cpu" or (
        g.device_type == kind and (variants is None or g.device_variant.lower() in variants))]
    if not matching:
        return f"no scaling group provides device {kind}:{shown} (available: {', '.join(g.name for g in groups)})"
    preemptible = _requirement(rules, "preemptible")
    if preemptible and len(preemptible) == 1:
        want = next(iter(preemptible)) == "true"
        matching = [g for g in matching if g.preemptible == want]
        if not matching:
            return f"no {'preemptible' if want else 'non-preemptible'} group provides device {kind}:{shown}"
    zones = {g.zone for g in matching if g.zone}
    regions = {g.region for g in matching if g.region}
    if required := _requirement(rules, "zone"):
        return _locality("zone", "region", required, zones, regions)
    if required := _requirement(rules, "region"):
        return _locality("region", "zone", required, regions, zones)
    return f"no scaling group matches constraints (available: {', '.join(g.name for g in groups)})"


@dataclass(frozen=True)
class Verdict:
    """Groups that can host the job (best first) and, when there are none, Iris's reason."""

    groups: tuple[ScaleGroup, ...]
    reason: str | None = None


def feasibility(request: LaunchJobRequest, profile: ClusterProfile) -> Verdict:
    """LaunchJob's gate (Iris's ``job_feasibility``): can any group EVER host this job shape?"""
    if not profile.groups:
        return Verdict(())
    rules = routing_rules(effective_rules(request))
    matching = [g for g in profile.groups if group_matches(g, rules)]
    if not matching:
        return Verdict((), diagnose(rules, profile.groups))
    if request.HasField("coscheduling"):
        sized = [g for g in matching if request.replicas % g.num_vms == 0]
        if not sized:
            sizes = ", ".join(f"'{g.name}': {g.num_vms}" for g in matching)
            return Verdict((), f"job requires {request.replicas} coscheduled replicas but no matching scaling group "
                               "has a compatible size (replicas must be an exact multiple of num_vms); "
                               f"matching group sizes: {{{sizes}}}")
        matching = sized
    misfits = {g.name: resource_fit(g, request) for g in matching}
    fitting = [g for g in matching if misfits[g.name] is None]
    if not fitting:
        details = "; ".join(f"{name} ({why})" for name, why in misfits.items())
        return Verdict((), f"no matching scaling group has enough per-VM capacity: {details}")
    return Verdict(tuple(fitting))


def route(request: LaunchJobRequest, profile: ClusterProfile) -> Verdict:
    """The autoscaler's static answer for one unit of demand (a gang, or one task): the groups it could
    scale up for it, in routing order, or its ``unmet`` reason (budgets in use are ``fit()``'s concern)."""
    rules = routing_rules(effective_rules(request))
    ordered = profile.by_priority
    matching = [g for g in ordered if group_matches(g, rules)]
    if not matching:
        return Verdict((), f"no_matching_group: {diagnose(rules, ordered)}")
    size = len(gangs(request)[0].tasks)
    if request.HasField("coscheduling") and not any(g.num_vms == size for g in matching):
        detail = ", ".join(f"{g.name}={g.num_vms}" for g in matching)
        return Verdict((), f"coschedule_mismatch: job needs {size} tasks coscheduled but no matching group has "
                           f"num_vms={size} ({detail})")
    misfits = [resource_fit(g, request) for g in matching]
    if all(misfits):
        return Verdict((), f"insufficient_resources: {'; '.join(str(m) for m in misfits)}")
    hosts = [g for g, misfit in zip(matching, misfits, strict=True) if misfit is None
             and (not request.HasField("coscheduling") or g.num_vms == size)]
    if not any(g.max_slices > 0 for g in hosts):
        return Verdict((), f"no_capacity: {', '.join(f'{g.name}=at_max_slices' for g in hosts)}")
    return Verdict(tuple(g for g in hosts if g.max_slices > 0))


# -- LaunchJob -----------------------------------------------------------------------------------------
def tpu_request_error(request: LaunchJobRequest) -> str | None:
    """Iris's ``validate_tpu_request``: every candidate variant (the device-variant constraint, else the
    device's) must have the requested chips per VM, and candidates must share one VM shape."""
    kind, variant = device_kind(request)
    if kind != "tpu" or not variant or variant == AUTO_VARIANT:
        return None
    candidates = [variant]
    for rule in (Rule.from_proto(c) for c in request.constraints):
        if rule.key == "device-variant" and rule.op in ("IN", "EQ") and rule.values:
            candidates = [str(v) for v in rule.values if v]
            break
    known = {v: TPU_TOPOLOGY_BY_NAME[v] for v in candidates if v in TPU_TOPOLOGY_BY_NAME}
    chips = request.resources.device.tpu.count
    mismatched = {v: t.chips_per_vm for v, t in known.items() if chips and chips != t.chips_per_vm}
    if mismatched:
        return (f"TPU chip count mismatch: requested {chips} chips per replica, but candidate variants have "
                f"chips_per_vm={mismatched}. A TPU VM is indivisible; the per-replica chip count must equal every "
                "candidate variant's chips_per_vm.")
    if len({(t.vm_count, t.chips_per_vm) for t in known.values()}) > 1:
        shapes = {v: {"vm_count": t.vm_count, "chips_per_vm": t.chips_per_vm} for v, t in known.items()}
        return (f"TPU variant alternatives have incompatible VM shapes: {shapes}. All candidates must share "
                "vm_count and chips_per_vm.")
    return None


@dataclass(frozen=True)
class Refusal:
    """A LaunchJob refusal: the Connect/gRPC code name and Iris's message."""

    code: str  # "invalid_argument" | "failed_precondition"
    message: str


def launch_refusal(request: LaunchJobRequest, profile: ClusterProfile) -> Refusal | None:
    """Whether Iris's LaunchJob refuses ``request`` on a cluster of ``profile`` (no federation peers)."""
    if request.HasField("coscheduling") and not request.coscheduling.group_by:
        return Refusal("invalid_argument", "coscheduling requires a non-empty group_by (the topology level to gang on)")
    if error := tpu_request_error(request):
        return Refusal("invalid_argument", error)
    rules = effective_rules(request)
    pin = next((r for r in rules if r.key == CLUSTER_KEY and r.op == "EQ"), None)
    if pin is not None:
        return Refusal("invalid_argument", f"Job {request.name} pins cluster {str(pin.values[0])!r}, which is not a "
                                           "configured federation peer.")
    verdict = feasibility(request, profile)
    if verdict.reason is None:
        return None
    shown = ", ".join(str(r) for r in rules)
    return Refusal("failed_precondition", f"Job {request.name} is unschedulable: {verdict.reason} (constraints: [{shown}])")
