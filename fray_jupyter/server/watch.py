"""One watcher of the controller for every browser tab: it learns that jobs changed and pushes a
small event to each subscriber (the ``/fray/events`` stream), so the sidebar moves when a job
moves instead of polling on a timer.

Rules:

* The watcher runs only while at least one tab subscribes; the last one leaving stops it.
* Against the embedded controller it long-polls the change feed (``FrayClient.changes``): one
  request per ``FEED_WAIT`` seconds while nothing happens, an answer as soon as a job changes.
* Against a controller without the feed (a real Iris, a gRPC URL) it lists the newest
  ``POLL_JOBS`` jobs, every ``POLL_MIN`` s after a change, backing off to ``POLL_MAX`` s while
  nothing changes, and pushes when what the list shows changed; a job that changed is pushed with
  its parent, as the embedded controller's feed reports a parent when a child comes, goes or
  changes state.
* Events (``contract.PushEvent``, every field always present): "hello" with ``source`` "feed",
  "poll" or "" (until the controller answered) on subscribing and when it changes; "changed" with
  ``jobIds`` (empty: re-read everything); "error" with ``message``, once, when the controller
  stops answering.
  Bursts (a chatty job's log lines) are coalesced: at most one event per ``COALESCE`` s.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from fray_jupyter.client import FrayClient, FrayError
from fray_jupyter.server.contract import PushEvent
from fray_jupyter.server.link import ControllerLink

FEED_WAIT: Final[float] = 25.0
POLL_MIN: Final[float] = 0.5
POLL_MAX: Final[float] = 2.5
POLL_JOBS: Final[int] = 100
COALESCE: Final[float] = 0.1
RETRY: Final[float] = 2.0
_NO_FEED: Final[frozenset[str]] = frozenset({"unimplemented", "not_found"})



def event(kind: str, source: str = "", job_ids: list[str] | None = None, message: str = "") -> PushEvent:
    """A stream event with every field of the contract."""
    return PushEvent(kind=kind, source=source, jobIds=job_ids or [], message=message)


def list_fingerprint(client: FrayClient) -> tuple[tuple[Any, ...], ...]:
    """What the sidebar shows of the newest ``POLL_JOBS`` jobs, to tell whether any changed: each
    row starts with the job's id and its parent's ("" for a root job)."""
    page = client.list(user=None, scope="all", limit=POLL_JOBS)  # every user's, children too
    return tuple((job.job_id, job.parent_job_id, job.state, job.has_children, job.completed_count, job.failure_count,
                  job.preemption_count, tuple(sorted(job.task_state_counts.items()))) for job in page.jobs)


class ChangeHub:
    """Subscribers' queues and the one watcher task serving them (see the module rules)."""

    def __init__(self, link: ControllerLink) -> None:
        self.link = link
        self.source = ""
        self._queues: set[asyncio.Queue[PushEvent]] = set()
        self._task: asyncio.Task[None] | None = None
        self._no_feed: set[str] = set()  # controller URLs that answered without the feed

    @property
    def watching(self) -> bool:
        """Whether the watcher task runs."""
        return self._task is not None and not self._task.done()

    def subscribe(self) -> asyncio.Queue[PushEvent]:
        """A new subscriber's queue (starts the watcher if it is the first)."""
        queue: asyncio.Queue[PushEvent] = asyncio.Queue(maxsize=100)
        self._queues.add(queue)
        queue.put_nowait(event("hello", self.source))
        if not self.watching:
            self._task = asyncio.ensure_future(self._run())
        return queue

    def unsubscribe(self, queue: asyncio.Queue[PushEvent]) -> None:
        """Forget a subscriber; the watcher stops with the last one."""
        self._queues.discard(queue)
        if not self._queues and self._task is not None:
            self._task.cancel()
            self._task = None

    def stop(self) -> None:
        """Stop the watcher and forget every subscriber (server shutdown)."""
        self._queues.clear()
        if self._task is not None:
            self._task.cancel()
            self._task = None

    def _broadcast(self, message: PushEvent) -> None:
        for queue in self._queues:
            if queue.full():  # a stalled tab: keep only "re-read everything"
                while not queue.empty():
                    queue.get_nowait()
                message = event("changed", self.source)
            queue.put_nowait(message)

    async def _run(self) -> None:
        failing = False
        while self._queues:
            try:
                client = await asyncio.to_thread(self.link.client)
                if client.url in self._no_feed:
                    await self._poll(client)
                else:
                    await self._follow_feed(client)
                failing = False
            except FrayError as error:
                if error.code in _NO_FEED and error.method == "WaitForChanges":
                    self._no_feed.add(error.url)
                    continue
                if not failing:
                    self._broadcast(event("error", message=str(error)))
                failing = True
                await asyncio.sleep(RETRY)

    async def _follow_feed(self, client: FrayClient) -> None:
        changes = await asyncio.to_thread(client.changes, 0, "", wait=0)
        self._set_source("feed")
        while self._queues and await asyncio.to_thread(self.link.client) is client:
            changes = await asyncio.to_thread(client.changes, changes.revision, changes.epoch, wait=FEED_WAIT)
            if changes.reset or changes.job_ids:
                self._broadcast(event("changed", self.source, [] if changes.reset else list(changes.job_ids)))
                await asyncio.sleep(COALESCE)

    async def _poll(self, client: FrayClient) -> None:
        seen = await asyncio.to_thread(list_fingerprint, client)
        self._set_source("poll")
        interval = POLL_MIN
        while self._queues:
            await asyncio.sleep(interval)
            now = await asyncio.to_thread(self._fingerprint_if_current, client)
            if now is None:
                return  # the server now follows another controller
            if now != seen:
                moved = set(now) ^ set(seen)
                changed = {row[0] for row in moved} | {row[1] for row in moved if row[1]}
                self._broadcast(event("changed", self.source, sorted(changed)))
                seen, interval = now, POLL_MIN
            else:
                interval = min(interval * 1.5, POLL_MAX)

    def _fingerprint_if_current(self, client: FrayClient) -> tuple[tuple[Any, ...], ...] | None:
        """``list_fingerprint(client)``, or None when the link no longer leads to ``client`` (one
        thread hop per poll: what an idle poll costs is what the watched server pays)."""
        return list_fingerprint(client) if self.link.client() is client else None

    def _set_source(self, source: str) -> None:
        if source != self.source:
            self.source = source
            self._broadcast(event("hello", source))
