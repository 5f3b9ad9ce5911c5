"""One listener of the controller's change feed per client in a kernel, shared by every status
panel on that client, so a panel refreshes when its job changes instead of polling on a timer.

Rules:

* ``watch(client, job_id, wake)`` subscribes a panel's ``wake`` event (and sets it once); the returned ``Feed`` (or
  None) says whether the feed serves it. None when the client has no ``changes`` verb, or its
  controller answered that it has no feed (a real Iris, a gRPC URL): the panel polls as before.
* The listener thread long-polls ``client.changes`` (``FEED_WAIT`` s per request while nothing
  happens) and sets the wake of every subscriber whose job or a job below it changed (a panel
  shows its job's whole tree; the controller reports a child's change under the child's id and
  its parent's); all of them on a reset (the
  controller restarted), once right after it took its starting revision (a change just before it
  could otherwise be missed), and when it stops.
* It stops when a long poll fails (the panels then poll, counting failures, and subscribe again
  once the controller answers), or when it answers with nobody subscribed: a closed panel leaves
  at most one idle long poll of ``FEED_WAIT`` s behind, never a busy thread.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Final

from fray_jupyter.client.errors import FrayError

FEED_WAIT: Final[float] = 25.0
_NO_FEED: Final[frozenset[str]] = frozenset({"unimplemented", "not_found"})
_LOG = logging.getLogger(__name__)


class Feed:
    """The listener of one client's change feed (see the module rules)."""

    def __init__(self, client: Any) -> None:
        self._client = weakref.ref(client)  # the panels keep it alive; this registry must not
        self.supported = True
        self._lock = threading.Lock()
        self._subscribers: dict[threading.Event, str] = {}
        self._thread: threading.Thread | None = None

    @property
    def listening(self) -> bool:
        """Whether the listener thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def subscribe(self, job_id: str, wake: threading.Event) -> None:
        """Set ``wake`` whenever ``job_id`` or a job below it changes (starts the listener if none runs), and once
        now: a change between the subscriber's last look and this call is not missed."""
        wake.set()
        with self._lock:
            self._subscribers[wake] = job_id
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._listen, name="fray-feed", daemon=True)
                self._thread.start()

    def unsubscribe(self, wake: threading.Event) -> None:
        """Forget ``wake``; the listener stops after its current long poll if nobody is left."""
        with self._lock:
            self._subscribers.pop(wake, None)

    def _wake(self, job_ids: set[str] | None) -> None:
        """Set the wakes of the subscribers of ``job_ids`` or of a job above one of them (None: of all)."""
        with self._lock:
            wakes = [wake for wake, job_id in self._subscribers.items()
                     if job_ids is None or any(changed == job_id or changed.startswith(job_id + "/")
                                               for changed in job_ids)]
        for wake in wakes:
            wake.set()

    def _listen(self) -> None:
        client = self._client()
        try:
            if client is None:
                return
            changes = client.changes(0, "", wait=0)
            self._wake(None)
            while True:
                with self._lock:
                    if not self._subscribers:
                        self._thread = None  # under the lock: a new subscriber starts a new listener
                        return
                changes = client.changes(changes.revision, changes.epoch, wait=FEED_WAIT)
                self._wake(None if changes.reset else set(changes.job_ids))
        except FrayError as error:
            if error.code in _NO_FEED and error.method == "WaitForChanges":
                self.supported = False
        except Exception:  # noqa: BLE001 - a listener never dies with a traceback; the panels poll
            _LOG.debug("change feed listener stopped", exc_info=True)
        finally:
            with self._lock:
                if self._thread is threading.current_thread():
                    self._thread = None
            self._wake(None)


_FEEDS: dict[int, Feed] = {}
"""The feed of each live client, by ``id`` (clients need not be hashable); dropped with the client."""
_FEEDS_LOCK = threading.Lock()


def watch(client: Any, job_id: str, wake: threading.Event) -> Feed | None:
    """Subscribe ``wake`` to ``job_id``'s changes on ``client``'s feed; None when there is none
    (the caller polls)."""
    if not callable(getattr(client, "changes", None)):
        return None
    with _FEEDS_LOCK:
        feed = _FEEDS.get(id(client))
        if feed is None:
            feed = _FEEDS[id(client)] = Feed(client)
            weakref.finalize(client, _FEEDS.pop, id(client), None)
    if not feed.supported:
        return None
    feed.subscribe(job_id, wake)
    return feed
