"""Errors the magics raise when the controller or the job fails (not the user's typing: that is
``UsageError``, see ``parsers``).

Rule: they define ``_render_traceback_``, so IPython shows exactly their few lines — what failed,
the job id and state, and the last log lines — instead of a traceback, and the cell still fails
(Run All and nbclient stop there). ``str()`` is the first line, for logs and plain Python.

While a magic's call to the controller is being resent (``client.retry``), its cell shows one line
saying so — "still retrying (attempt 3, 1.2 s)" — updated in place and removed once the call ends;
a call that gave up says so under its error.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from IPython.display import display

from fray_jupyter.client import retry
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

    def __init__(self, error: FrayError, doing: str, retried: str = "") -> None:
        self.kind = type(error).__name__
        self.error = error
        hint = HINTS.get(self.kind)
        super().__init__([str(error), f"while {doing}" + (f" ({retried})" if retried else ""),
                          *([hint] if hint else [])])


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


class RetryNotice:
    """The cell's one line about a call being resent (``client.retry``'s watcher):
    shown at the first resend, updated at each, emptied when the call ends; ``gave_up`` keeps the
    words of a call that gave up. ``show`` puts a line out and returns how to replace it."""

    def __init__(self, show: Callable[[str], Callable[[str], None]] | None = None) -> None:
        self._show = show or _display_line
        self._update: Callable[[str], None] | None = None
        self.gave_up = ""

    def __call__(self, event: retry.Retrying) -> None:
        """Show ``event`` (a resend, or the end of a call that was resent)."""
        if event.phase == "gave up":
            self.gave_up = event.words()
        text = event.line() if event.phase == "retrying" else ""
        if self._update is None:
            if text:
                self._update = self._show(text)
        else:
            self._update(text)


def _display_line(text: str) -> Callable[[str], None]:
    """Show ``text`` as the cell's plain-text output and return how to replace it (IPython's display handle)."""
    handle: Any = display({"text/plain": text}, raw=True, display_id=True)  # type: ignore[no-untyped-call]
    return lambda new: handle.update({"text/plain": new}, raw=True)


@contextlib.contextmanager
def controller_errors(doing: str, notice: RetryNotice | None = None) -> Iterator[None]:
    """Turn a ``FrayError`` raised inside into a ``ControllerError`` saying what was being done (and,
    for a call that was resent until it gave up, for how long); while a call inside is resent, show
    ``notice`` (``RetryNotice``: the cell's one line)."""
    notice = notice or RetryNotice()
    try:
        with retry.watching_here(notice):
            yield
    except FrayError as error:
        raise ControllerError(error, doing, notice.gave_up) from error
