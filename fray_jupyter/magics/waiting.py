"""What a ``%%fray`` cell shows once it has submitted: the live panel, or with ``--wait`` the job's
log lines as they come and its final state.

Rules:

* Without ``--wait``: the live status panel (``widgets.status``), which writes its static snapshot
  beside itself.
* ``--wait`` follows the whole tree's log lines (a line of a job below it named by its path:
  ``[train-step/0]``) until the job ends, then writes the job's final snapshot into the cell
  output (``widgets.snapshot``: its state, the jobs below it, tasks, root causes, last log lines),
  so the saved notebook keeps it. A job that did not succeed fails the cell with ``JobFailed``:
  its summary names the jobs below it that failed, each with its error and exception line.
* Interrupting the wait (the stop button) leaves the job running and says how to stop it.
"""

from __future__ import annotations

import sys
from collections import deque
from typing import TYPE_CHECKING, Final

from IPython.display import display

from fray_jupyter.magics.errors import JobFailed, controller_errors
from fray_jupyter.views.words import state_word
from fray_jupyter.vocabulary import fraction

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient
    from fray_jupyter.client.handle import JobHandle
    from fray_jupyter.iris.proto import job_pb2
    from fray_jupyter.widgets.status import JobStatusPanel

SETTLE_S: Final[float] = 10.0
"""Seconds ``--wait`` gives the jobs below an ended job to end too before writing its snapshot."""


def panel(client: FrayClient, job_id: str) -> JobStatusPanel:
    """The live panel a submission or ``%fray status`` returns (shown as the cell's output)."""
    from fray_jupyter.widgets.status import JobStatusPanel

    return JobStatusPanel(client, job_id)


def wait(handle: JobHandle) -> job_pb2.JobStatus:
    """``--wait`` (see the module rules): the final status of a job that succeeded."""
    from fray_jupyter.iris.proto import job_pb2
    from fray_jupyter.iris.states import job_state_name
    from fray_jupyter.views import job as view
    from fray_jupyter.views.tree import failed_lines
    from fray_jupyter.widgets.snapshot import read_snapshot

    tail: deque[str] = deque(maxlen=view.SUMMARY_LOG_LINES)
    job_id = handle.job_id
    try:
        with controller_errors(f"waiting for {job_id}"):
            for line in handle.follow(include_children=True):
                tail.append(line)
                print(line, flush=True)
            snapshot = read_snapshot(handle.client, job_id, settle=SETTLE_S)
    except KeyboardInterrupt:
        print(f"stopped waiting; {job_id} keeps running (`%fray cancel {job_id}` stops it)", file=sys.stderr)
        raise
    display({"text/html": snapshot.html}, raw=True)  # type: ignore[no-untyped-call]
    status, tasks = snapshot.diagnosis.status, snapshot.diagnosis.tasks
    state = state_word(job_state_name(status.state)).upper()
    if status.state != job_pb2.JOB_STATE_SUCCEEDED:
        below = failed_lines(job_id, snapshot.failed)
        raise JobFailed(job_id, state, view.failure_summary(status, tasks, list(tail), below=below))
    print(f"job {job_id} {state} ({view.elapsed(status)}, {fraction(status.completed_count, status.task_count, 'task')})")
    return status
