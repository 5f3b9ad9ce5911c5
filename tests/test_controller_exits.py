"""A failed attempt's words are Iris's: ``Exit code: N. stderr: <last stderr line>`` for a command,
exactly ``Execution timeout exceeded`` (and no exit code) for a task over its timeout; a failed
job's exit code is 0, as a genuine Iris controller leaves it (``exits``, ``runner``, ``transitions``):
here from real processes; the words alone in ``test_controller_kernel_exits.py``."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from fray_jupyter.controller.kernel.exits import EXECUTION_TIMEOUT, Outcome
from fray_jupyter.controller.runtime.runner import Attempt
from fray_jupyter.iris.proto import job_pb2 as J


def _run(tmp_path: Path, command: str, timeout: float | None = None) -> Outcome:
    attempt = Attempt(steps=[["sh", "-c", command]], workdir=tmp_path, env=dict(os.environ), timeout_s=timeout,
                      sink=lambda source, line: None, on_spawn=lambda pid, token: None)
    return asyncio.run(attempt.run())


def test_a_failed_command_names_its_last_stderr_line(tmp_path: Path) -> None:
    outcome = _run(tmp_path, "echo first >&2; echo out; echo last >&2; echo >&2; echo after; exit 3")
    assert outcome == Outcome(J.TASK_STATE_FAILED, 3, "Exit code: 3. stderr: last")
    assert _run(tmp_path, "exit 4").error == "Exit code: 4"


def test_a_task_over_its_timeout_says_exactly_iris_s_words(tmp_path: Path) -> None:
    outcome = _run(tmp_path, "sleep 30", timeout=0.2)
    assert outcome == Outcome(J.TASK_STATE_FAILED, None, EXECUTION_TIMEOUT, timed_out=True)
