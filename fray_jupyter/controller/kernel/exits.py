"""How a task attempt ended (``Outcome``), and the words a failed one ends with, as a genuine Iris
worker writes them (marin-iris 0.2.227).

* A main command that exits non-zero: ``Exit code: <n>``; above 128 (a shell's or container's "killed
  by signal n - 128") ``Exit code <n>: killed by <SIGNAME>`` (``(possibly OOM or resource limit)``
  after SIGKILL); then ``. stderr: <line>`` with the last non-empty line the command wrote to stderr,
  if any. The task's ``exit_code`` is the process's.
* A task over its ``timeout``: exactly ``EXECUTION_TIMEOUT`` (no limit in the text: the job's
  request holds it) and no exit code (Iris stops it from the controller: the attempt's is 0).
* Setup commands keep the embedded controller's own words (``runtime.task_setup.setup_failure``): an Iris worker
  runs them in a build phase of its own.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Final

EXECUTION_TIMEOUT: Final[str] = "Execution timeout exceeded"
"""The error of a task stopped for running past its job's ``timeout`` (Iris's words, exactly)."""
_SIGNAL_BASE: Final[int] = 128


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def exit_error(code: int, stderr_line: str = "") -> str:
    """The error of a main command that exited with ``code`` (non-zero), its last stderr line
    ``stderr_line`` ("" when it wrote none): the module docstring's first rule."""
    if code > _SIGNAL_BASE:
        number = code - _SIGNAL_BASE
        text = f"Exit code {code}: killed by {_signal_name(number)}"
        if number == signal.SIGKILL:
            text += " (possibly OOM or resource limit)"
    else:
        text = f"Exit code: {code}"
    return f"{text}. stderr: {stderr_line}" if stderr_line else text


@dataclass
class Outcome:
    """How an attempt ended: ``state`` is SUCCEEDED, FAILED or KILLED (stopped on request); a
    failure's ``error`` and ``exit_code`` in Iris's words (the rules above)."""

    state: int
    exit_code: int | None = None
    error: str = ""
    timed_out: bool = False
