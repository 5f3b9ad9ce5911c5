"""Waiting in tests: one helper, ``until``, for every test that waits for something to become true in
another process (a controller, a genuine Iris cluster, a session's hosts).

``until(condition, what, feed=client)`` returns ``condition()``'s first true value. Between checks it
waits on the product's own signal where there is one: given ``feed`` (a ``FrayClient`` of an
embedded controller over Connect) it long-polls that controller's change feed (``WaitForChanges``,
``controller/transport/changes.py``), so it checks again as soon as a job, a task or a log line changes, and at
least every ``FEED_WAIT_S`` for a condition on anything else. Without a feed (a genuine Iris, a
session host, a controller reached over gRPC) it checks again every ``POLL_S``. It fails naming
``what`` and the last value seen after ``HANG_GUARD_S``: a guard against a hang, never a measure of
how fast the product is. ``gives_up(call)`` is the same guard for a call that must end in an
error rather than hang, and ``await arrives(awaitable, what)`` for a coroutine on an event loop
that waits for what the product pushes (a stream's next line, a queue's next event). (In this
process, ``tests/service_core.py``'s ``Core.until`` waits on the same feed directly.)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Final, TypeVar

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient

T = TypeVar("T")
HANG_GUARD_S: Final[float] = 120.0
POLL_S: Final[float] = 0.05
FEED_WAIT_S: Final[float] = 1.0


def until(condition: Callable[[], T | None], what: str, *, feed: FrayClient | None = None,
          hang_guard: float = HANG_GUARD_S) -> T:
    """``condition()``'s first true value, checked again on each signal (module rule)."""
    from fray_jupyter.client.errors import FrayError

    give_up = time.monotonic() + hang_guard
    revision, epoch = 0, ""
    while not (value := condition()):
        left = give_up - time.monotonic()
        if left <= 0:
            raise AssertionError(f"never happened: {what} (last: {value!r})")
        if feed is not None:
            try:
                changes = feed.changes(revision, epoch, wait=min(FEED_WAIT_S, left))
            except FrayError as error:
                if error.code != "unimplemented":
                    raise
                feed = None  # no change feed there: check again on the clock
            else:
                revision, epoch = changes.revision, changes.epoch
                continue
        time.sleep(min(POLL_S, left))
    return value


def gives_up(call: Callable[[], object], *, hang_guard: float = HANG_GUARD_S) -> BaseException | None:
    """The exception ``call`` ends with (None if it returns), run on a thread: a call that never gives
    up fails the test after ``hang_guard`` seconds instead of hanging the run (a guard, not a speed bound)."""
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(call).exception(timeout=hang_guard)
    finally:
        pool.shutdown(wait=False)


async def arrives(awaitable: Awaitable[T], what: str, *, hang_guard: float = HANG_GUARD_S) -> T:
    """What ``awaitable`` gives once it comes (module rule); it fails naming ``what`` after
    ``hang_guard`` seconds instead of hanging the event loop's test."""
    try:
        return await asyncio.wait_for(awaitable, hang_guard)
    except TimeoutError:
        raise AssertionError(f"never happened: {what}") from None
