"""A job's task history as one timeline, newest first: the events the controller recorded
(``iris.task_event``, read by ``client.usage.task_events``) joined with the state changes every
controller reports in ``TaskStatus`` — what the status panel and the sidebar show.

Rules:

* State changes, each a ``TaskEvent`` of source ``STATE_SOURCE``: the task's ``submitted_at``
  (reason ``Submitted``), each attempt's ``started_at`` (``AttemptStarted``, on its worker) and, once
  it ended, its ``finished_at`` (``Attempt`` and its end state's word in CamelCase, e.g.
  ``AttemptFailed``, with its exit code and error). An attempt that ended in any state but
  SUCCEEDED is a ``Warning``, the rest ``Normal``. Times of 0 (not reached yet) are left out.
* Entries are sorted newest first; at one time the controller's own events come before state
  changes, then by task id; at most ``limit`` (the newest).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import TERMINAL_TASK_STATES, task_state_name
from fray_jupyter.iris.usage import TaskEvent
from fray_jupyter.vocabulary import state_word

STATE_SOURCE: Final[str] = "task state"
"""The ``source`` of a timeline entry made from a task's state changes (not an ``iris.task_event``)."""
MAX_ENTRIES: Final[int] = 200


def _camel(word: str) -> str:
    return "".join(part.capitalize() for part in word.split())


def state_changes(task: job_pb2.TaskStatus) -> list[TaskEvent]:
    """The state changes a ``TaskStatus`` tells (see the module rules), oldest first."""
    found = []
    if task.submitted_at.epoch_ms:
        found.append(TaskEvent(task.task_id, 0, task.submitted_at.epoch_ms, "Normal", "Submitted",
                               "task submitted", STATE_SOURCE, 1))
    for attempt in task.attempts:
        if attempt.started_at.epoch_ms:
            where = f" on worker {attempt.worker_id}" if attempt.worker_id else ""
            found.append(TaskEvent(task.task_id, attempt.attempt_id, attempt.started_at.epoch_ms, "Normal",
                                   "AttemptStarted", f"attempt {attempt.attempt_id} started{where}", STATE_SOURCE, 1))
        if attempt.finished_at.epoch_ms and attempt.state in TERMINAL_TASK_STATES:
            word = state_word(task_state_name(attempt.state))
            code = f", exit code {attempt.exit_code}" if attempt.exit_code else ""
            error = f": {attempt.error}" if attempt.error else ""
            kind = "Normal" if attempt.state == job_pb2.TASK_STATE_SUCCEEDED else "Warning"
            found.append(TaskEvent(task.task_id, attempt.attempt_id, attempt.finished_at.epoch_ms, kind,
                                   f"Attempt{_camel(word)}", f"attempt {attempt.attempt_id} ended {word}{code}{error}",
                                   STATE_SOURCE, 1))
    return found


def timeline(tasks: Iterable[job_pb2.TaskStatus], events: Sequence[TaskEvent],
             limit: int = MAX_ENTRIES) -> list[TaskEvent]:
    """The controller's ``events`` and the ``tasks``' state changes, newest first (module rules)."""
    joined = [*events, *(change for task in tasks for change in state_changes(task))]
    joined.sort(key=lambda entry: (-entry.ts_ms, entry.source == STATE_SOURCE, entry.task_id))
    return joined[:limit]
