"""Whether a running task has gone quiet: a job that says RUNNING while its run is dead shows no
log line and no status report for a long time — the status panel and the sidebar say "no output
for 12 min".

Rules:

* A task is silent only while RUNNING; it has been silent since the newest of its last log line,
  its last status report (``iris.task_status``) and its current attempt's start (0s, unknown, are
  ignored), and it is said to be silent once that is at least ``silence_after_ms()`` ago.
* ``silence_after_ms()`` is ``$FRAY_SILENCE_AFTER`` seconds (a positive number; tests and a busy
  user set it short), else ``DEFAULT_SILENCE_S``; a value that is not a positive number is
  ``ValueError`` naming it.
"""

from __future__ import annotations

import os
from typing import Final

from fray_jupyter.iris.proto import job_pb2

SILENCE_ENV: Final[str] = "FRAY_SILENCE_AFTER"
DEFAULT_SILENCE_S: Final[float] = 600.0


def silence_after_ms() -> int:
    """How long a running task may be quiet before it is said to be silent, in ms (module rules)."""
    given = os.environ.get(SILENCE_ENV, "").strip()
    if not given:
        return int(DEFAULT_SILENCE_S * 1000)
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"${SILENCE_ENV} must be a positive number of seconds, got {given!r}")
    return int(seconds * 1000)


def quiet_since_ms(task: job_pb2.TaskStatus, last_line_ms: int = 0, last_report_ms: int = 0) -> int:
    """When the task last showed life: its last log line, status report or attempt start (0: never)."""
    started = next((attempt.started_at.epoch_ms for attempt in task.attempts
                    if attempt.attempt_id == task.current_attempt_id), 0) or task.started_at.epoch_ms
    return max(last_line_ms, last_report_ms, started)


def silent_ms(task: job_pb2.TaskStatus, now_ms: int, *, last_line_ms: int = 0, last_report_ms: int = 0,
              after_ms: int | None = None) -> int | None:
    """How long a RUNNING task has been silent, in ms, once that is at least ``after_ms`` (default
    ``silence_after_ms()``); None for a task that is not, or not running."""
    if task.state != job_pb2.TASK_STATE_RUNNING:
        return None
    since = quiet_since_ms(task, last_line_ms, last_report_ms)
    if not since:
        return None
    quiet = now_ms - since
    return quiet if quiet >= (silence_after_ms() if after_ms is None else after_ms) else None
