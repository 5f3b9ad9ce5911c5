"""A ``Plan`` as plain text (CLI, ``--dry-run`` in a terminal) and as a JSON document."""

from __future__ import annotations

import json
from typing import Any

from fray_jupyter.planning import Plan
from fray_jupyter.views.format import cores, flops, index_ranges, size


def plan_summary(plan: Plan) -> dict[str, Any]:
    """The figures a preview shows, as plain data (JSON-ready)."""
    return {
        "job_id": plan.job_id,
        "replicas": plan.replicas,
        "per_replica": {"cpu_millicores": plan.cpu_millicores, "memory_bytes": plan.memory_bytes,
                        "disk_bytes": plan.disk_bytes, "chips": plan.chips_per_task},
        "totals": {"chips": plan.total_chips, "hbm_bytes": plan.hbm_bytes, "peak_bf16_flops": plan.peak_flops},
        "coscheduling": {"group_by": plan.group_by,
                         "groups": [{"label": g.label, "tasks": list(g.tasks), "gang": g.gang, "hard": g.hard}
                                    for g in plan.groups]},
        "constraints": {"fray": [str(c) for c in plan.fray_constraints], "wire": [str(c) for c in plan.wire_constraints]},
        "env": [{"name": e.name, "value": e.value, "source": e.source} for e in plan.env],
        "errors": list(plan.errors),
        "warnings": list(plan.warnings),
        "follows": plan.follows,
        "request_size": plan.request_size,
    }


def render_json(plan: Plan) -> str:
    """The summary plus the request in Iris's JSON form."""
    return json.dumps({**plan_summary(plan), "request": json.loads(plan.request_json)}, indent=2)


def _groups(plan: Plan) -> str:
    if plan.group_by is not None:
        return f"{plan.group_by}: one gang of tasks {index_ranges(plan.groups[0].tasks)}"
    if plan.replicas > 1:
        return f"none: {plan.replicas} independent tasks"
    return "none: task 0"


def render_text(plan: Plan) -> str:
    """A terminal-friendly preview: figures, the Marin it follows, groups, constraints, env with sources, errors (never placed),
    warnings, request."""
    device = plan.device
    chips = f" · {plan.chips_per_task} × {device.variant}" if plan.chips_per_task else ""
    rows = [
        ("Job", plan.job_id),
        ("Replicas", str(plan.replicas)),
        ("Per replica", (f"{cores(plan.cpu_millicores)} cores · {size(plan.memory_bytes)} RAM · "
                         f"{size(plan.disk_bytes)} disk{chips}")),
        ("Totals", f"{plan.total_chips} chips · {size(plan.hbm_bytes)} HBM · {flops(plan.peak_flops)} bf16"),
    ]
    lines = [f"{label:<14}{value}" for label, value in rows]
    lines.append(f"{'Marin':<14}{plan.follows}")
    lines.append(f"{'Coscheduling':<14}{_groups(plan)}")
    lines.append(f"{'Constraints':<14}Fray: {', '.join(map(str, plan.fray_constraints)) or '(none)'}")
    lines.append(f"{'':<14}wire: {', '.join(map(str, plan.wire_constraints)) or '(none)'}")
    for i, var in enumerate(plan.env):
        lines.append(f"{'Environment' if i == 0 else '':<14}{var.name}={var.value!r}  ({var.source})")
    for i, error in enumerate(plan.errors):
        lines.append(f"{'Errors' if i == 0 else '':<14}✗ {error}")
    for i, warning in enumerate(plan.warnings):
        lines.append(f"{'Warnings' if i == 0 else '':<14}! {warning}")
    lines.append(f"{'Request':<14}LaunchJobRequest, {plan.request_size} bytes")
    return "\n".join(lines) + "\n\n" + plan.request_text
