"""Errors the magics raise when the controller or the job fails (not the user's typing: that is
``UsageError``, see ``parsers``).

Rule: they define ``_render_traceback_``, so IPython shows exactly their few lines — what failed,
the job id and state, and the last log lines — instead of a traceback, and the cell still fails
(Run All and nbclient stop there). ``str()`` is the first line, for logs and plain Python.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Final

from fray_jupyter.client.errors import FrayError

RED: Final[str] = "\x1b[0;31m"
RESET: Final[str] = "\x1b[0m"


class MagicFailure(Exception):
    """A failure outside the user's typing, shown as ``<Kind>: <first line>`` plus detail lines."""

    kind = "FrayError"

    def __init__(self, lines: Sequence[str]) -> None:
        self.lines = list(lines) or ["(no detail)"]
        super().__init__(self.lines[0])

    def _render_traceback_(self) -> list[str]:
        return [f"{RED}{self.kind}{RESET}: {self.lines[0]}", *self.lines[1:]]


class ControllerError(MagicFailure):
    """The controller could not be reached, refused a call, or does not know the job."""

    def __init__(self, error: FrayError, doing: str) -> None:
        self.kind = type(error).__name__
        self.error = error
        hint = HINTS.get(self.kind)
        super().__init__([str(error), f"while {doing}", *([hint] if hint else [])])


class JobFailed(MagicFailure):
    """A job waited on (``--wait``) ended in a state other than SUCCEEDED."""

    kind = "JobFailed"

    def __init__(self, job_id: str, state: str, summary: Sequence[str]) -> None:
        self.job_id, self.state = job_id, state
        super().__init__(summary)


HINTS: Final[dict[str, str]] = {
    "ControllerUnreachable": "check the URL with `%fray config` (or $FRAY_CONTROLLER_URL); "
                             "unset it to use the embedded controller",
    "ControllerStartFailed": "the embedded controller's log (named above) says why",
    "AuthenticationFailed": "set the token in the variable `%fray config token_env` names",
    "JobNotFound": "`%fray jobs` lists the jobs this controller knows",
}
"""Error class name -> the next thing to try."""


@contextlib.contextmanager
def controller_errors(doing: str) -> Iterator[None]:
    """Turn a ``FrayError`` raised inside into a ``ControllerError`` saying what was being done."""
    try:
        yield
    except FrayError as error:
        raise ControllerError(error, doing) from error
