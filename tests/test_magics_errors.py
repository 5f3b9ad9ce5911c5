"""magics.errors: a controller failure is a few lines naming what was being done; while a call of
the magic's own thread is resent, its cell shows ``client.retry``'s one word, updated in place and
emptied at the end; a call that gave up says so under its error."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from fray_jupyter.client import retry
from fray_jupyter.client.errors import ControllerUnreachable, error_for
from fray_jupyter.magics.errors import ControllerError, RetryNotice, controller_errors
from tests.instant_clock import InstantClock

URL = "http://127.0.0.1:1"
POLICY = retry.RetryPolicy(first_ms=100, most_ms=100, factor=1.0, jitter=0.0, budget_ms=250, max_attempts=10)


class Cell:
    """A cell's output: lines put out, each replaced in place."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def show(self, text: str) -> Callable[[str], None]:
        self.lines.append(text)
        index = len(self.lines) - 1

        def update(new: str) -> None:
            self.lines[index] = new
        return update


def unreachable() -> str:
    raise error_for("unavailable", "connection refused", url=URL, method="ListJobs")


def test_a_call_resent_until_it_gives_up_shows_the_word_then_says_so_under_its_error() -> None:
    cell, seen = Cell(), []
    notice = RetryNotice(cell.show)

    def watched() -> str:
        seen.append(list(cell.lines))
        return unreachable()
    with pytest.raises(ControllerError) as raised, controller_errors("listing jobs", notice):
        retry.send(watched, POLICY, idempotent=True, url=URL, method="ListJobs", clock=InstantClock())
    assert seen[0] == [] and seen[1][0].endswith("still retrying (attempt 2, 100 ms)")
    assert seen[2][0].startswith(f"cannot reach the Fray controller at {URL}: connection refused; still retrying")
    assert cell.lines == [""]  # one line, updated in place, emptied at the end
    assert isinstance(raised.value.error, ControllerUnreachable)
    assert raised.value.lines[1] == "while listing jobs (gave up after 3 attempts, 200 ms)"


def test_another_threads_retries_are_not_this_cells() -> None:
    cell, gave_up = Cell(), []

    def poller() -> None:
        try:
            retry.send(unreachable, POLICY, idempotent=True, url=URL, clock=InstantClock())
        except ControllerUnreachable as error:
            gave_up.append(error)
    with controller_errors("listing jobs", RetryNotice(cell.show)):
        elsewhere = threading.Thread(target=poller)
        elsewhere.start()
        elsewhere.join()
    assert len(gave_up) == 1 and cell.lines == []


def test_an_error_without_retries_names_only_what_was_being_done() -> None:
    with pytest.raises(ControllerError) as raised, controller_errors("looking up /u/j", RetryNotice(Cell().show)):
        raise error_for("not_found", "no such job", url=URL, method="GetJobStatus")
    assert raised.value.lines[1] == "while looking up /u/j"
