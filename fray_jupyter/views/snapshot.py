"""The static snapshot a status panel writes beside itself into the cell output: plain, inert HTML of
the job's last known state — header, why it waits or failed, the jobs below it, its tasks and the
last log lines — so a notebook reopened without its kernel, nbviewer, GitHub and a frontend
without ipywidgets show that instead of a widget whose model is gone.

Rules:

* Self-contained: it carries its own style sheet (the panel's, plus the two rules below) and needs
  no script; everything the job or controller wrote is escaped (``views.job``, ``views.tree``,
  ``views.logtail``).
* Beside a live panel in JupyterLab or Notebook 7 (the same cell's output area holds a rendered
  ``.fray-status-panel``) the snapshot is hidden: the panel shows the same, live.
* Without one (the kernel is gone), the snapshot hides what ipywidgets draws in the same output
  area for a widget whose model is gone ("Error displaying widget: model not found": ipywidgets
  marks that output node itself ``jupyter-widgets``, where a live widget's node only holds its
  view), so the cell shows the job's last state alone. (``:has()`` cannot nest, so the rules
  test classes only.)
* It says when it was taken and whether the job had ended then (``final``) or may have gone on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from html import escape
from typing import Final

from fray_jupyter.iris.attempts import RetryLimits
from fray_jupyter.iris.proto import job_pb2, logging_pb2
from fray_jupyter.iris.states import job_state_name
from fray_jupyter.iris.tree import FailedChild, JobTree
from fray_jupyter.iris.usage import TaskUsage
from fray_jupyter.views import job as view
from fray_jupyter.views.logtail import ShownLine, log_tail_html
from fray_jupyter.views.tree import failed_html, tree_html
from fray_jupyter.views.usage import STYLE as USAGE_STYLE
from fray_jupyter.views.usage import warnings_html

SNAPSHOT_LOG_ROWS: Final[int] = 40
"""Log rows a snapshot keeps (the newest)."""
SNAPSHOT_CSS: Final[str] = """<style>
.jp-OutputArea:has(.fray-status-panel) .jp-OutputArea-child:has(.fray-snapshot){display:none}
.jp-OutputArea:has(.fray-snapshot):not(:has(.fray-status-panel))
 .jp-OutputArea-child:has(> .jp-OutputArea-output.jupyter-widgets){display:none}
</style>"""
"""The two visibility rules of the module docstring, for JupyterLab's and Notebook 7's output areas."""
LIVE_NOTE: Final[str] = " (a snapshot: the live panel replaces it while the kernel runs)"


def snapshot_html(tree: JobTree, tasks: Sequence[job_pb2.TaskStatus], rows: Sequence[ShownLine],
                  label: Callable[[logging_pb2.LogEntry], str], *, limits: RetryLimits | None = None,
                  root_causes: Mapping[str, Sequence[str]] | None = None,
                  status_texts: Mapping[str, str] | None = None, failed: Sequence[FailedChild] = (),
                  taken_ms: int | None = None, beside_panel: bool = True,
                  usage: Mapping[str, TaskUsage] | None = None) -> str:
    """The snapshot of ``tree.root`` (see the module rules): its ``tasks`` (with ``usage``, their
    MEM / PEAK MEM / CPU and any peak over the request: ``views.usage``), the newest
    ``SNAPSHOT_LOG_ROWS`` of ``rows`` (lines as a reader sees them: ``views.logtail.collapse``; each
    labelled by ``label`` of the row that wrote it), and what explains it; ``beside_panel``: written beside a live panel
    (its caption says the panel replaces it), else alone (``%%fray --wait``'s result)."""
    status = tree.root
    taken = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime((taken_ms or view.now_ms()) / 1000))
    final = view.is_terminal(status) and tree.settled
    when = "final state" if final else "last known state"
    lines = [f"{label(line.entry)} {line.text}" for line in rows[-view.SUMMARY_LOG_LINES:]]
    parts = [
        (f'<div class="fray-dim fray-snapshot-caption">{when} of {escape(status.job_id)} at {escape(taken)}'
         f'{LIVE_NOTE if beside_panel else ""}</div>'),
        view.header_html(status, taken_ms),
        view.pending_html(status, tasks),
        view.failure_html(status, tasks, lines),
        failed_html(status.job_id, failed),
        view.diagnosis_html(status, tasks, limits, root_causes or {}, status_texts or {}) if limits else "",
        tree_html(tree, taken_ms),
        view.tasks_html(tasks, usage),
        warnings_html(usage or {}, [task.task_id for task in tasks]),
        f'<div class="fray-log-box">{log_tail_html(rows[-SNAPSHOT_LOG_ROWS:], label)}</div>',
    ]
    return (f'{view.STYLE}{SNAPSHOT_CSS}{USAGE_STYLE if usage else ""}<div class="fray-snapshot" data-job-id="{escape(status.job_id, quote=True)}" '
            f'data-state="{escape(job_state_name(status.state))}" data-final="{str(final).lower()}">'
            f'{"".join(parts)}</div>')
