"""The coscheduling diagram: what Iris attempts (one gang, or independent tasks) -> tasks -> chips, as one SVG.

Rules: one row, as Iris 0.2.227 places the job: a coscheduled job is ONE gang (all-or-nothing, on
one ``group_by`` value), drawn solid in ``PALETTE[0]``; any other job's tasks are placed
independently and share one dashed grey row. A gang Iris can never place (``Plan.errors``) is drawn in
``NEVER`` with "never placed by Iris" in its title. Past ``MAX_TASKS`` tasks the row shows the first
``HEAD_TASKS``, an "… N more" box and the last. Each task box is labelled with its index and draws up to ``MAX_CHIPS`` chips ("+N" for the rest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

from fray_jupyter.iris.coscheduling import TaskGroup
from fray_jupyter.planning import Plan
from fray_jupyter.resources.devices import CpuConfig, TpuConfig, tpu_family
from fray_jupyter.views.format import cores, index_ranges

PALETTE: Final = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1", "#edc948", "#9c755f")
INDEPENDENT: Final = "#8c8c8c"
NEVER: Final = "#d32f2f"
MAX_TASKS, HEAD_TASKS = 6, 4
CHIP_COLUMNS, MAX_CHIPS = 4, 8

# geometry (px)
PAD, ROW_PAD, HEADER = 8, 6, 16
TASK_W, TASK_H, TASK_GAP = 66, 48, 6
CHIP, CHIP_GAP = 9, 3
INSET, CHIPS_TOP = 5, 19  # inside a task box: text/chip left edge, top of the first chip row
TITLE_CHAR = 6.4  # width of one title character, for sizing group boxes
LEGEND_ROW = 18
WIDTH: Final = 2 * PAD + 2 * ROW_PAD + MAX_TASKS * (TASK_W + TASK_GAP) - TASK_GAP


def core_count(millicores: int) -> str:
    """Cores with their noun: 1 core, 104 cores, 0.5 cores."""
    shown = cores(millicores)
    return f"{shown} core{'' if shown == '1' else 's'}"


@dataclass(frozen=True)
class _Row:
    """One drawn row: a group (or the shared independent row) and the task slots it shows."""

    title: str
    slots: tuple[int | str, ...]  # a task index, or the text of a collapsed run
    colour: str
    gang: bool


def _slots(tasks: Sequence[int]) -> tuple[int | str, ...]:
    if len(tasks) <= MAX_TASKS:
        return tuple(tasks)
    return (*tasks[:HEAD_TASKS], f"… {len(tasks) - HEAD_TASKS - 1} more", tasks[-1])


def _group_title(group: TaskGroup, group_by: str | None, never: bool) -> str:
    how = f"one gang on one {group_by}" if group.gang else "independent"
    noun = "task" if len(group.tasks) == 1 else "tasks"
    label = "" if group.label == group_by else f"{group.label} · "
    return f"{label}{noun} {index_ranges(group.tasks)} · {how}{' · never placed by Iris' if never else ''}"


def _row(plan: Plan) -> _Row:
    """The one row Iris's placement makes: the gang (a coscheduled job is one gang), or every task
    placed independently."""
    group = plan.groups[0]
    if not group.gang:
        what = "slice" if isinstance(plan.device, TpuConfig) else "task"
        count = len(plan.groups)
        title = (f"{count} independent {what}s · each placed on its own" if count > 1
                 else f"1 {what} · task 0")
        return _Row(title, _slots([g.tasks[0] for g in plan.groups]), INDEPENDENT, False)
    never = bool(plan.errors)
    return _Row(_group_title(group, plan.group_by, never), _slots(group.tasks), NEVER if never else PALETTE[0], True)


def _chip_noun(plan: Plan) -> str:
    device = plan.device
    if isinstance(device, TpuConfig):
        return f"TPU chip ({tpu_family(device.variant)})"
    return f"GPU ({device.variant})"


def _task(x: int, y: int, slot: int | str, row: _Row, plan: Plan) -> str:
    dash = "" if row.gang else ' stroke-dasharray="4 3"'
    box = (f'<rect x="{x}" y="{y}" width="{TASK_W}" height="{TASK_H}" rx="4" stroke="{row.colour}"{dash} '
           f'style="fill:var(--jp-layout-color0,#fff)"/>')
    if isinstance(slot, str):
        return (f'<g class="fray-more">{box}<text x="{x + TASK_W / 2}" y="{y + TASK_H / 2 + 4}" '
                f'text-anchor="middle">{escape(slot)}</text></g>')
    parts = [f'<g class="fray-task" data-task="{slot}">', box,
             f'<text x="{x + INSET}" y="{y + 13}">task {slot}</text>']
    chips = plan.chips_per_task
    if not chips:
        parts.append(f'<text x="{x + INSET}" y="{y + 30}" class="fray-dim">{core_count(plan.cpu_millicores)}</text>')
    drawn = chips if chips <= MAX_CHIPS else MAX_CHIPS - 1
    for chip in range(drawn):
        cx = x + INSET + (chip % CHIP_COLUMNS) * (CHIP + CHIP_GAP)
        cy = y + CHIPS_TOP + (chip // CHIP_COLUMNS) * (CHIP + CHIP_GAP)
        parts.append(f'<rect class="fray-chip" x="{cx}" y="{cy}" width="{CHIP}" height="{CHIP}" rx="1.5" '
                     f'fill="{row.colour}"/>')
    if drawn < chips:
        cx = x + INSET + (drawn % CHIP_COLUMNS) * (CHIP + CHIP_GAP)
        parts.append(f'<text x="{cx}" y="{y + CHIPS_TOP + 2 * CHIP + CHIP_GAP - 1}" class="fray-dim">'
                     f'+{chips - drawn}</text>')
    parts.append("</g>")
    return "".join(parts)


def _legend(y: int, plan: Plan) -> tuple[str, int]:
    if plan.groups[0].gang:
        colour = NEVER if plan.errors else PALETTE[0]
        swatches = f'<rect x="{PAD}" y="{y}" width="10" height="10" fill="{colour}"/>'
        text = f"one gang: all its tasks start together on workers sharing one {plan.group_by}"
    else:
        swatches = (f'<rect x="{PAD}" y="{y}" width="30" height="10" fill="none" stroke="{INDEPENDENT}" '
                    f'stroke-dasharray="4 3"/>')
        text = "no gang: each task is placed independently"
    lines = [f'<g class="fray-legend">{swatches}<text x="{PAD + 40}" y="{y + 9}">{escape(text)}</text></g>']
    if not plan.chips_per_task:
        return "".join(lines), LEGEND_ROW
    row_y = y + LEGEND_ROW
    lines.append(f'<g class="fray-legend"><rect x="{PAD}" y="{row_y}" width="{CHIP}" height="{CHIP}" '
                 f'fill="{INDEPENDENT}"/><text x="{PAD + 40}" y="{row_y + 9}">'
                 f'one {escape(_chip_noun(plan))}; a box is one task</text></g>')
    return "".join(lines), 2 * LEGEND_ROW


def render_diagram_svg(plan: Plan) -> str:
    """The plan's placement as an SVG (see the module docstring for the layout rules)."""
    row = _row(plan)
    y = PAD
    tasks_width = 2 * ROW_PAD + len(row.slots) * (TASK_W + TASK_GAP) - TASK_GAP
    width = min(WIDTH - 2 * PAD, max(tasks_width, 2 * ROW_PAD + round(TITLE_CHAR * len(row.title))))
    height = HEADER + TASK_H + 2 * ROW_PAD
    dash = "" if row.gang else ' stroke-dasharray="5 4"'
    body = [(f'<g class="fray-group" data-gang="{str(row.gang).lower()}">'
             f'<rect x="{PAD}" y="{y}" width="{width}" height="{height}" rx="6" fill="{row.colour}" '
             f'fill-opacity="0.12" stroke="{row.colour}"{dash}/>'
             f'<text x="{PAD + ROW_PAD}" y="{y + 14}" font-weight="600">{escape(row.title)}</text>')]
    body += [_task(PAD + ROW_PAD + i * (TASK_W + TASK_GAP), y + HEADER + ROW_PAD, slot, row, plan)
             for i, slot in enumerate(row.slots)]
    body.append("</g>")
    y += height + ROW_PAD
    legend, legend_height = _legend(y + 4, plan)
    height = y + 4 + legend_height + PAD
    kind = "CPU" if isinstance(plan.device, CpuConfig) else plan.device.variant
    label = f"{plan.replicas} tasks of {kind} in {len(plan.groups)} groups"
    never = ' data-never="true"' if plan.errors else ""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="fray-diagram"{never} width="{WIDTH}" height="{height}" '
            f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(label)}" '
            f'data-groups="{len(plan.groups)}" data-replicas="{plan.replicas}" '
            f'style="max-width:100%;height:auto;font:11px var(--jp-ui-font-family,sans-serif);fill:currentColor">'
            f'<title>{escape(label)}</title>{"".join(body)}{legend}</svg>')
