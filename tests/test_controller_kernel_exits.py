"""The words a failed attempt ends with (``kernel.exits``), as a genuine Iris worker writes them: an exit
code, a signal by name, the last stderr line, and the timeout's exact words."""

from __future__ import annotations

from fray_jupyter.controller.kernel.exits import EXECUTION_TIMEOUT, exit_error


def test_the_words_for_an_exit_code() -> None:
    assert exit_error(3) == "Exit code: 3"
    assert exit_error(1, "ValueError: boom") == "Exit code: 1. stderr: ValueError: boom"
    assert exit_error(143) == "Exit code 143: killed by SIGTERM"
    assert exit_error(137) == "Exit code 137: killed by SIGKILL (possibly OOM or resource limit)"
    assert exit_error(200) == "Exit code 200: killed by signal 72"


def test_the_timeout_words_are_exactly_iris_s() -> None:
    assert EXECUTION_TIMEOUT == "Execution timeout exceeded"
