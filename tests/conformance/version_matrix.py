"""Comparing fray-jupyter with one Marin release's answers (``matrix_probe``), difference by difference.

For each case, the differences ``fray_jupyter.iris.marin_versions.DIFFERENCES`` lists are looked for
and taken out of Marin's answer, one ``RECONCILE`` entry per row; what is left must then equal ours
(after ``differences.normalize``, the release-independent differences). The result names the rows seen
and what is left over, so a test can require the seen rows to be exactly those that apply to the
release and the job (a row that stops showing fails), and nothing to be left over (an unlisted
difference fails).
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import text_format

import fray_jupyter.resources as our_types
from fray_jupyter.cluster.profile import load_profile
from fray_jupyter.iris import placement
from fray_jupyter.iris.marin_versions import DIFFERENCES, differences_for
from fray_jupyter.planning import plan
from tests.conformance.differences import LaunchJobRequest, normalize
from tests.conformance.matrix_probe import USER, placement_requests
from tests.conformance.oracle import canonical_bytes
from tests.conformance.specs import Spec, build


@dataclass
class Seen:
    """What one case showed: the listed differences found (``rows``), the ones that apply (``expected``),
    and a description of anything else that differs (``leftover``, empty when nothing does)."""

    rows: set[str] = field(default_factory=set)
    expected: set[str] = field(default_factory=set)
    leftover: str = ""


Reconcile = Callable[[LaunchJobRequest, LaunchJobRequest], bool]


def _revision_date(ours: LaunchJobRequest, theirs: LaunchJobRequest) -> bool:
    if theirs.client_revision_date == ours.client_revision_date:
        return False
    theirs.client_revision_date = ours.client_revision_date
    return True


def _nccl_debug(ours: LaunchJobRequest, theirs: LaunchJobRequest) -> bool:
    env = theirs.environment.env_vars
    if env.get("NCCL_DEBUG") != "INFO" or ours.environment.env_vars.get("NCCL_DEBUG") != "WARN":
        return False
    env["NCCL_DEBUG"] = "WARN"
    env.pop("NCCL_DEBUG_SUBSYS", None)
    return True


def _secrets(ours: LaunchJobRequest, theirs: LaunchJobRequest) -> bool:
    if not ours.environment.secrets or theirs.environment.secrets:
        return False
    theirs.environment.secrets.update(ours.environment.secrets)
    return True


RECONCILE: dict[str, Reconcile | None] = {
    "client_revision_date": _revision_date,
    "nccl_debug": _nccl_debug,
    "secrets": _secrets,  # also seen when the release's fray.types cannot express the job (``compare``)
    "soft_region_no_capacity": None,  # a placement difference (``compare_placement``)
}
"""How each listed difference is found in (and taken out of) a release's request."""


def _ours(spec: Spec) -> tuple[str, Any]:
    try:
        return "ok", plan(build(our_types, spec), user=USER, marin=None).request
    except ValueError as error:
        return "error", error


def compare(spec: Spec, answer: list[str], release: str) -> Seen:
    """Compare our request for ``spec`` with one release's ``answer`` (a ``matrix_probe`` entry)."""
    (our_kind, ours), (their_kind, payload) = _ours(spec), answer
    if our_kind == "error" or their_kind != "ok":
        seen = Seen()
        if their_kind == "unbuildable" and our_kind == "ok":
            seen.expected = {row.name for row in differences_for(ours, release) if row.name == "secrets"}
            seen.rows = {"secrets"} if ours.environment.secrets else set()
            seen.leftover = "" if seen.rows else f"Marin cannot express the job: {payload}"
        elif (our_kind == "error") != (their_kind in ("error", "unbuildable")):
            seen.leftover = f"fray-jupyter: {our_kind} {ours}; Marin: {their_kind} {payload}"
        return seen
    default_setup = spec.env is None or spec.env.get("setup_scripts") is None
    theirs = normalize(LaunchJobRequest.FromString(base64.b64decode(payload)), default_setup=default_setup)
    seen = Seen(expected={row.name for row in differences_for(ours, release)})
    for name, reconcile in RECONCILE.items():
        if reconcile is not None and reconcile(ours, theirs):
            seen.rows.add(name)
    if canonical_bytes(ours.SerializeToString()) != canonical_bytes(theirs.SerializeToString()):
        seen.leftover = (f"--- fray-jupyter\n{text_format.MessageToString(ours)}--- Marin (listed differences "
                         f"taken out)\n{text_format.MessageToString(theirs)}")
    return seen


def compare_placement(name: str, answer: list[str | None], release: str) -> Seen:
    """Compare our LaunchJob gate and route for placement case ``name`` with one release's ``answer``."""
    request = placement_requests()[name]
    ours_profile = load_profile("default")
    refusal = placement.launch_refusal(request, ours_profile)
    our_route = None if refusal is not None else placement.route(request, ours_profile).reason
    their_launch, their_route = answer
    seen = Seen(expected={row.name for row in differences_for(request, release)
                          if RECONCILE.get(row.name, False) is None})
    if refusal is None and their_launch is None and our_route is None and str(their_route).startswith("no_capacity"):
        seen.rows.add("soft_region_no_capacity")
    elif (refusal is None) != (their_launch is None) or our_route != their_route:
        seen.leftover = f"fray-jupyter: refusal {refusal}, route {our_route}; Marin: {their_launch}, {their_route}"
    return seen


def unreconciled_rows() -> list[str]:
    """Rows of ``DIFFERENCES`` with no ``RECONCILE`` entry (each row must be checked by the matrix)."""
    return [row.name for row in DIFFERENCES if row.name not in RECONCILE]
