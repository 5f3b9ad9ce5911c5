"""The static snapshot beside a status panel (``views.snapshot``): written into the cell output as
plain ``text/html`` with a ``display_id``, and rewritten through that id, so the saved notebook
keeps the job's last known state where the widget's model is gone.

Rules:

* A panel shown through IPython's display machinery (a cell's result, ``display(panel)``) writes
  its widget view, then its snapshot, as two outputs of the cell. The snapshot's bundle has
  ``text/html`` only: a frontend without widgets shows it, a terminal prints nothing twice.
* The panel rewrites it when the job's or a child's state changes and once its tree has settled
  (``iris.tree``), with the last log rows; an unchanged snapshot is not sent again.
* ``read_snapshot`` builds the same snapshot in one go for a job that has ended (``%%fray --wait``):
  its diagnosis, its tree (once settled, or after ``settle`` s), the failed jobs below it and its
  tree's newest log rows.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fray_jupyter.client.diagnostics import Diagnosis, diagnose
from fray_jupyter.client.logs import log_prefix
from fray_jupyter.client.retry import backoff
from fray_jupyter.client.tree import failed_children, fetch_tree
from fray_jupyter.iris.proto.logging_pb2 import LogEntry
from fray_jupyter.iris.states import is_job_finished
from fray_jupyter.iris.tree import FailedChild, JobTree
from fray_jupyter.iris.usage import TaskUsage
from fray_jupyter.views.logtail import ShownLine, collapse
from fray_jupyter.views.snapshot import snapshot_html
from fray_jupyter.widgets.logbox import TAIL_ROWS

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient


class SnapshotOutput:
    """One snapshot output of a cell, rewritten in place (see the module rules)."""

    def __init__(self) -> None:
        self._handle: Any = None
        self.html = ""

    @property
    def shown(self) -> bool:
        """Whether the snapshot has been written into an output."""
        return self._handle is not None

    def show(self, html: str) -> None:
        """Write the snapshot as a new output of the running cell (shown again, under the same
        display id: every copy is rewritten together)."""
        from IPython.display import display  # only when shown: the widgets load without IPython

        self.html = html
        if self._handle is not None:
            self._handle.display({"text/html": html}, raw=True)
        else:
            self._handle = display({"text/html": html}, raw=True, display_id=True)  # type: ignore[no-untyped-call]

    def update(self, html: str) -> None:
        """Rewrite the snapshot's output (nothing if it was never shown or is unchanged)."""
        if self._handle is not None and html != self.html:
            self.html = html
            self._handle.update({"text/html": html}, raw=True)


@dataclass(frozen=True)
class JobSnapshot:
    """A job read in one go: what explains it, its tree, the failed jobs below it, and the HTML."""

    diagnosis: Diagnosis
    tree: JobTree
    failed: list[FailedChild]
    html: str


def read_snapshot(client: FrayClient, job_id: str, *, settle: float = 0.0) -> JobSnapshot:
    """The snapshot of ``job_id`` as it is now (see the module rules), written alone (not beside a
    panel); ``settle``: wait up to that many seconds for the jobs below an ended job to end too
    (a cascade takes a moment; under PRESERVE_CHILDREN they may run on)."""
    diagnosis = diagnose(client, job_id)
    tree = fetch_tree(client, diagnosis.status)
    deadline, delays = time.monotonic() + settle, backoff()
    while is_job_finished(diagnosis.status.state) and not tree.settled and time.monotonic() < deadline:
        time.sleep(next(delays))
        tree = fetch_tree(client, diagnosis.status, tree)
    failed = failed_children(client, tree)
    rows = collapse(client.logs(job_id, tail=True, max_lines=TAIL_ROWS, include_children=True).entries)
    html = diagnosed_html(tree, diagnosis, rows, lambda row: log_prefix(row, job_id), failed, beside_panel=False)
    return JobSnapshot(diagnosis, tree, failed, html)


def diagnosed_html(tree: JobTree, diagnosis: Diagnosis | None, rows: Sequence[ShownLine],
                   label: Callable[[LogEntry], str], failed: Sequence[FailedChild], *,
                   taken_ms: int | None = None, beside_panel: bool = True,
                   usage: Mapping[str, TaskUsage] | None = None) -> str:
    """``views.snapshot.snapshot_html`` of ``tree`` with what ``diagnosis`` explains of its root (its
    tasks, retry limits, root causes and status texts; None: not read yet, so none of them) and its
    tasks' ``usage``, as read at ``taken_ms`` (None: now)."""
    if diagnosis is None:
        return snapshot_html(tree, (), rows, label, failed=failed, taken_ms=taken_ms, beside_panel=beside_panel)
    return snapshot_html(tree, diagnosis.tasks, rows, label, limits=diagnosis.limits, root_causes=diagnosis.root_causes,
                         status_texts=diagnosis.details, failed=failed, taken_ms=taken_ms, beside_panel=beside_panel,
                         usage=usage)
