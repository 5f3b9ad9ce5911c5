"""Pure renderings of the jobs below a job (``iris.tree.JobTree``): the status panel's tree table,
its text form, and the lines that say which child failed and why.

Rules:

* One row per listed job below the root, depth first (a parent before its children), indented by
  depth and labelled by its own name (the last part of its id); a job with children of its own is
  marked ``▸``. Each row: state badge, tasks finished/total, a bar of its tasks by state (Iris's
  ``task_state_counts``), how long it waited or ran, and why it waits or how it failed.
* A parent with more children than were listed gets one row saying how many more there are.
* Everything the controller or the jobs wrote is escaped; state names are Iris's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Final

from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import job_state_name
from fray_jupyter.iris.tree import FailedChild, JobTree
from fray_jupyter.views.format import counted
from fray_jupyter.views.job import BADGE_COLORS, OTHER_COLOR, badge_html, cut, elapsed
from fray_jupyter.views.jobs import PARENT_MARK, reason
from fray_jupyter.views.logtail import shown_text
from fray_jupyter.vocabulary import bar_segments, fraction, state_word

J = job_pb2

INDENT_EM: Final[float] = 1.2


def leaf(job_id: str) -> str:
    """A job's own name: the last part of its id (``/alice/coord/train`` → ``train``)."""
    return job_id.rsplit("/", 1)[-1]


def relative(root_id: str, job_id: str) -> str:
    """A job's path below ``root_id`` (``train/eval``), or its id when it is not below it."""
    return job_id[len(root_id) + 1:] if job_id.startswith(root_id + "/") else job_id


def task_bar_html(counts: Mapping[str, int], total: int) -> str:
    """A compact bar of a job's tasks by state, each segment as wide as its share, coloured as the
    state's badge, named in the tooltip; an empty grey bar when there are no tasks yet."""
    parts = bar_segments(counts, total)  # the vocabulary's order, the rest waiting
    whole = max(total, sum(count for _, count in parts), 1)
    segments = "".join(
        f'<span class="fray-bar-{escape(name)}" style="width:{100 * count / whole:.2f}%;'
        f'background:{BADGE_COLORS.get(name, OTHER_COLOR)}"></span>' for name, count in parts)
    title = ", ".join(f"{count} {state_word(name)}" for name, count in parts) or "no tasks yet"
    return f'<span class="fray-bar" title="{escape(title)}">{segments}</span>'


def _note(status: J.JobStatus) -> str:
    return reason(status) or cut(status.status_message)


def tree_html(tree: JobTree, now: int | None = None) -> str:
    """The jobs below the root as an indented table (see the module rules); "" when there are none."""
    rows = []
    for depth, job in tree.walk():
        mark = f" {PARENT_MARK}" if job.has_children else ""
        rows.append(
            f'<tr class="fray-tree-row" data-job-id="{escape(job.job_id, quote=True)}" data-depth="{depth}">'
            f'<td style="padding-left:{(depth - 1) * INDENT_EM:g}em"><code>{escape(leaf(job.job_id))}</code>{mark}</td>'
            f"<td>{badge_html(job_state_name(job.state))}</td><td>{job.completed_count}/{job.task_count}</td>"
            f"<td>{task_bar_html(job.task_state_counts, job.task_count)}</td>"
            f'<td class="fray-dim">{escape(elapsed(job, now))}</td><td class="fray-dim">{escape(_note(job))}</td></tr>')
        rows += _more_html(tree, job.job_id, depth + 1)
    rows += _more_html(tree, tree.root.job_id, 1)
    if not rows:
        return ""
    return ('<table class="fray-status fray-tree"><tr><th>below this job</th><th>state</th><th>tasks</th>'
            f'<th></th><th></th><th></th></tr>{"".join(rows)}</table>')


def _more_html(tree: JobTree, parent: str, depth: int) -> list[str]:
    more = tree.unlisted(parent)
    if not more:
        return []
    return [(f'<tr class="fray-tree-more"><td colspan="6" class="fray-dim" style="padding-left:'
            f'{(depth - 1) * INDENT_EM:g}em">… {counted(more, "more child job")} of '
            f"{escape(leaf(parent))} not listed</td></tr>")]


def tree_lines(tree: JobTree, now: int | None = None) -> list[str]:
    """The jobs below the root as indented text lines: name, state, tasks, time, reason."""
    lines = []
    for depth, job in tree.walk():
        note = _note(job)
        lines.append(f"{'  ' * depth}{leaf(job.job_id)}{' ' + PARENT_MARK if job.has_children else ''}  "
                     f"{state_word(job_state_name(job.state)).upper()}  {fraction(job.completed_count, job.task_count, 'task')}  "
                     f"{elapsed(job, now)}{'  ' + note if note else ''}")
        if more := tree.unlisted(job.job_id):
            lines.append(f"{'  ' * (depth + 1)}… {more} more not listed")
    if more := tree.unlisted(tree.root.job_id):
        lines.append(f"  … {more} more not listed")
    return lines


def failed_lines(root_id: str, failed: Sequence[FailedChild]) -> list[str]:
    """Which jobs below ``root_id`` failed and why: ``child train-step FAILED: <error>``, then its
    likely root cause's last line (the exception line)."""
    lines = []
    for child in failed:
        error = f": {cut(child.status.error, 300)}" if child.status.error else ""
        lines.append(f"child {relative(root_id, child.status.job_id)} "
                     f"{state_word(job_state_name(child.status.state)).upper()}{error}")
        if child.root_cause:
            lines.append(f"  likely root cause: {cut(shown_text(child.root_cause[-1]), 300)}")
    return lines


def failed_html(root_id: str, failed: Sequence[FailedChild]) -> str:
    """``failed_lines`` as the panel's failure block; "" when no job below failed."""
    lines = failed_lines(root_id, failed)
    if not lines:
        return ""
    return (f'<div class="fray-status fray-failure fray-tree-failure"><b>failed below this job</b>'
            f'<pre>{escape(chr(10).join(lines))}</pre></div>')
