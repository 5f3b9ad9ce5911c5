"""The embedded controller's change feed: a cheap long-poll "which jobs changed since revision N",
so a watcher (the Jupyter server's one per controller) learns of a change at once instead of
listing every job on a timer. It is fray-jupyter's own service, not part of Iris's
``ControllerService``.

Rules:

* Every write the store makes to a job, its tasks or its log lines bumps ``revision`` by one and
  records the job id at that revision (the newest ``HISTORY`` job ids are kept).
* ``POST /fray.jupyter.ChangeFeed/WaitForChanges`` (``iris.wire.CHANGE_FEED_PATH``; Connect JSON,
  the controller's bearer token) with ``{"after": N, "epoch": E, "timeoutMs": T}`` answers as soon
  as the revision passes ``N``, or after ``T`` ms (at most ``MAX_WAIT_S`` s) with no job ids:
  ``{"epoch", "revision", "jobIds", "reset"}``. ``reset`` is true when the caller must re-read everything: it named
  another epoch (the controller restarted: revisions start again) or a revision older than the
  kept history.
* Runs on the controller's event loop, like the store.
"""

from __future__ import annotations

import asyncio
import secrets
from collections import OrderedDict
from typing import Any, Final

MAX_WAIT_S: Final[float] = 30.0
HISTORY: Final[int] = 2000


class ChangeFeed:
    """Revisions of job changes, and waiting for the next one (see the module rules)."""

    def __init__(self) -> None:
        self.epoch = secrets.token_hex(8)
        self.revision = 0
        self._changed: OrderedDict[str, int] = OrderedDict()  # job id -> revision of its last change
        self._oldest = 0  # changes at or before this revision were forgotten
        self._event: asyncio.Event | None = None

    def touch(self, job_id: str) -> None:
        """Record a change of ``job_id`` and wake the waiters."""
        self.revision += 1
        self._changed.pop(job_id, None)
        self._changed[job_id] = self.revision
        while len(self._changed) > HISTORY:
            _, self._oldest = self._changed.popitem(last=False)
        if self._event is not None:
            self._event.set()
            self._event = None

    def release(self) -> None:
        """Answer every waiting long poll now (no job ids): the controller is stopping, and an
        open long poll would otherwise hold its shutdown for up to ``MAX_WAIT_S``."""
        if self._event is not None:
            self._event.set()
            self._event = None

    def since(self, after: int, epoch: str) -> dict[str, Any]:
        """The answer for a caller that has seen revision ``after`` of ``epoch``."""
        reset = epoch != self.epoch or after < self._oldest or after > self.revision
        job_ids = [] if reset else [job_id for job_id, revision in self._changed.items() if revision > after]
        return {"epoch": self.epoch, "revision": self.revision, "jobIds": job_ids, "reset": reset}

    async def wait(self, after: int, epoch: str, timeout_s: float) -> dict[str, Any]:
        """``since(after, epoch)`` once something changed after ``after``, or after ``timeout_s``."""
        if epoch == self.epoch and after == self.revision:
            if self._event is None:
                self._event = asyncio.Event()
            event = self._event
            try:
                await asyncio.wait_for(event.wait(), min(max(timeout_s, 0.0), MAX_WAIT_S))
            except TimeoutError:
                pass
        return self.since(after, epoch)


class BadWaitRequest(ValueError):
    """A WaitForChanges body whose field is missing its shape (wrong type or out of range): the
    request is invalid, whichever of the two it is, so one error the server maps to
    INVALID_ARGUMENT."""


def parse_wait_request(body: dict[str, Any]) -> tuple[int, str, float]:
    """``(after, epoch, timeout seconds)`` from a WaitForChanges JSON body; ``BadWaitRequest`` (a
    ``ValueError``) naming the field that is not what it must be."""
    after, epoch, timeout_ms = body.get("after", 0), body.get("epoch", ""), body.get("timeoutMs", 0)
    if isinstance(after, str) and after.isdigit():
        after = int(after)
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        raise BadWaitRequest(f"after must be a revision (a whole number >= 0), got {after!r}")
    if not isinstance(epoch, str):
        raise BadWaitRequest(f"epoch must be a string, got {epoch!r}")
    if not isinstance(timeout_ms, (int, float)) or isinstance(timeout_ms, bool) or timeout_ms < 0:
        raise BadWaitRequest(f"timeoutMs must be a number of milliseconds >= 0, got {timeout_ms!r}")
    return after, epoch, timeout_ms / 1000
