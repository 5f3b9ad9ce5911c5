"""Pure renderings of how a job's tasks use what they asked for, and what happened to them: the
task table's MEM / PEAK MEM / CPU cells and memory bar (Iris's job page's columns), the warnings of
a peak over the request, the tree's totals, and the task event timeline — HTML for the status
panel and the snapshot, from ``client.usage``, ``client.timeline`` and ``client.liveness`` data.

Rules:

* Every number is the display vocabulary's (``vocabulary``): sizes ``byte_size``, CPU ``cores``,
  times ``duration_ms``, ages ``ago_ms`` / ``age_ms``; a task without a sample reads ``—``.
* The memory bar is drawn against the request: the peak's part (the warning colour once over the
  request, where it is cut at the bar's end) under the part held now (the warning colour too while
  over it); a task with no memory request has no bar.
* A warning line per task whose peak passed its request (``TaskUsage.memory_warning``), in task order.
* The timeline is newest first (as ``client.timeline`` gives it), the newest ``TIMELINE_ROWS``, each
  row its age, task (and attempt), type, reason, message and source; a Warning row in the warning
  colour.
* Everything from the job or the controller (task ids, reasons, messages, sources) is HTML-escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Final

from fray_jupyter.iris.states import task_label
from fray_jupyter.iris.usage import MIB, TaskEvent, TaskUsage, Totals
from fray_jupyter.vocabulary import TONE_COLORS, age_ms, ago_ms, byte_size, cores, counted, duration_ms

NONE: Final[str] = "—"
TIMELINE_ROWS: Final[int] = 50
BAR_WIDTH_PX: Final[int] = 80
USAGE_HEADINGS: Final[tuple[str, ...]] = ("MEM", "PEAK MEM", "CPU", "memory / requested")
"""The task table's usage columns, in order (``usage_cells`` fills them)."""
WARNING_COLOR: Final[str] = TONE_COLORS["warning"]
STYLE: Final[str] = (
    "<style>\n.fray-mem-bar{position:relative;display:inline-block;width:" + str(BAR_WIDTH_PX) + "px;height:8px;"
    "border-radius:4px;overflow:hidden;vertical-align:middle;background:var(--jp-layout-color3,#ddd)}\n"
    ".fray-mem-bar>span{position:absolute;left:0;top:0;height:100%}\n"
    ".fray-usage-warning{color:" + WARNING_COLOR + "}\n"
    ".fray-timeline td{white-space:nowrap}.fray-timeline td.fray-message{white-space:normal}\n</style>")


def _mib(value: int) -> str:
    return byte_size(value * MIB)


def memory_bar_html(usage: TaskUsage) -> str:
    """The bar of now and peak memory against the request ("" without a request or a sample)."""
    now = usage.now
    if not usage.requested_memory_mb or now is None:
        return ""
    asked = usage.requested_memory_mb
    peak_pct, now_pct = (min(100.0, 100.0 * value / asked) for value in (usage.peak_memory_mb, now.memory_mb))
    peak_tone = "warning" if usage.over_request else "neutral"
    now_tone = "warning" if now.memory_mb > asked else "active"
    title = f"now {_mib(now.memory_mb)}, peak {_mib(usage.peak_memory_mb)} of {_mib(asked)} requested"
    return (f'<span class="fray-mem-bar" title="{escape(title)}">'
            f'<span class="fray-mem-peak" style="width:{peak_pct:.1f}%;background:{TONE_COLORS[peak_tone]};opacity:.45">'
            f'</span><span class="fray-mem-now" style="width:{now_pct:.1f}%;background:{TONE_COLORS[now_tone]}">'
            "</span></span>")


def usage_cells(usage: TaskUsage | None) -> list[str]:
    """The task row's ``USAGE_HEADINGS`` cells (``<td>`` HTML): memory now, peak, CPU now, the bar."""
    now = usage.now if usage is not None else None
    if usage is None or now is None:
        return [f'<td class="fray-dim">{NONE}</td>'] * 3 + ["<td></td>"]
    return [f'<td class="fray-mem">{escape(_mib(now.memory_mb))}</td>',
            f'<td class="fray-peak">{escape(_mib(usage.peak_memory_mb))}</td>',
            f'<td class="fray-cpu">{escape(cores(now.cpu_millicores))}</td>',
            f"<td>{memory_bar_html(usage)}</td>"]


def silence_words(quiet_ms: int) -> str:
    """``no output for 12 min``."""
    return f"no output for {age_ms(quiet_ms)}"


def reported_words(ts_ms: int, now_ms: int) -> str:
    """``reported 4 min ago`` ("" when the time is unknown)."""
    return f"reported {ago_ms(max(0, now_ms - ts_ms))}" if ts_ms else ""


def warnings_html(usage: Mapping[str, TaskUsage], task_ids: Sequence[str]) -> str:
    """One warning line per task of ``task_ids`` whose peak passed its request ("" when none did)."""
    lines = [f'<div class="fray-usage-warning">⚠ task {escape(task_label(task_id))}: {escape(found.memory_warning())}'
             "</div>" for task_id in task_ids if (found := usage.get(task_id)) is not None and found.over_request]
    return f'<div class="fray-status fray-usage-warnings">{"".join(lines)}</div>' if lines else ""


def totals_words(totals: Totals) -> str:
    """``CPU 1m 05s, wall 2m 00s, peak 312 MiB over 3 tasks``."""
    return (f"CPU {duration_ms(totals.cpu_hours * 3_600_000)}, wall {duration_ms(totals.wall_hours * 3_600_000)}, "
            f"peak {_mib(totals.peak_memory_mb) if totals.peak_memory_mb else NONE} "
            f"over {counted(totals.tasks, 'task')}")


def totals_html(totals: Totals | None, *, tree: bool) -> str:
    """The job's (``tree``: its tree's) totals line ("" before any task ran)."""
    if totals is None or not totals.tasks:
        return ""
    label = "job tree" if tree else "job"
    return f'<div class="fray-status fray-usage-totals"><span class="fray-dim">{label} used:</span> ' \
           f"{escape(totals_words(totals))}</div>"


def timeline_html(entries: Sequence[TaskEvent], now_ms: int, limit: int = TIMELINE_ROWS) -> str:
    """The task event timeline, newest first (see the module rules); "" without entries."""
    if not entries:
        return ""
    rows = []
    for entry in entries[:limit]:
        tone = f' style="color:{WARNING_COLOR}"' if entry.type == "Warning" else ""
        count = f" (×{entry.count})" if entry.count > 1 else ""
        rows.append(f'<tr class="fray-event"{tone}><td class="fray-dim">{escape(ago_ms(max(0, now_ms - entry.ts_ms)))}'
                    f"</td><td>{escape(task_label(entry.task_id))}:{entry.attempt_id}</td><td>{escape(entry.type)}</td>"
                    f"<td>{escape(entry.reason)}</td><td class=\"fray-message\">{escape(entry.message)}{count}</td>"
                    f'<td class="fray-dim">{escape(entry.source)}</td></tr>')
    more = len(entries) - limit
    tail = f'<div class="fray-dim">and {counted(more, "older event")}</div>' if more > 0 else ""
    return (f'<details class="fray-status fray-timeline" open><summary>events ({len(entries)}, newest first)</summary>'
            "<table><tr><th>when</th><th>task:attempt</th><th>type</th><th>reason</th><th>message</th><th>source</th>"
            f'</tr>{"".join(rows)}</table>{tail}</details>')
