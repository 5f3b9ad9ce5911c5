"""The server's way to the controller: the same one the kernels reach, found the same way.

Rule: every request resolves the controller afresh with the client's own discovery rule
(``client.discovery.resolve``: ``$FRAY_CONTROLLER_URL``, else the runtime file of a live embedded
controller, else a newly started embedded controller — only when the link allows starting one AND
the request asked for it — shared with the kernels through the runtime file and its lock). So the
server follows a controller that restarted on a new port, and never keeps job state of its own. The ``FrayClient`` is reused while the
``(url, token)`` pair stays the same; a replaced one is left to the garbage collector rather than
closed, because a request in another thread may still be using it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from fray_jupyter.client import FrayClient, FrayError
from fray_jupyter.client.discovery import resolve

RETRY_FOR: float = 1.0
"""Seconds one verb may retry a controller that answered ``unavailable``: a sidebar poll should
report trouble quickly, not hang."""


@dataclass(frozen=True)
class LinkStatus:
    """What ``GET /fray/status`` reports: the controller's URL (``""`` when none is configured or
    running), whether it answered, and the client's one-line error when it did not."""

    url: str
    reachable: bool
    error: str | None


class ControllerLink:
    """Thread-safe source of ``FrayClient``s for request handlers (see the module rule).
    ``start``: whether requests may start the embedded controller; ``timeout``: seconds per RPC."""

    def __init__(self, *, start: bool = True, timeout: float = 10.0) -> None:
        self.start = start
        self.timeout = timeout
        self._lock = threading.Lock()
        self._client: FrayClient | None = None
        self._key: tuple[str, str | None] | None = None

    def client(self, *, start: bool = False) -> FrayClient:
        """The client for the controller the kernels would use now, starting the embedded one if
        there is none and both ``start`` and ``self.start`` allow it; ``ControllerUnreachable``
        when there is none (or starting one failed)."""
        with self._lock:
            key = resolve(start=start and self.start)
            if self._client is None or key != self._key:
                self._client = FrayClient(*key, timeout=self.timeout, retry_for=RETRY_FOR)
                self._key = key
            return self._client

    def status(self, *, start: bool = False) -> LinkStatus:
        """Resolve the controller (``start`` as in ``client``) and ask it for one job: reachable,
        or the reason it is not."""
        try:
            client = self.client(start=start)
        except FrayError as error:  # none configured or running, or the one started did not come up
            return LinkStatus("", False, str(error))
        try:
            client.list(limit=1)
        except FrayError as error:
            return LinkStatus(client.url, False, str(error))
        return LinkStatus(client.url, True, None)

    def close(self) -> None:
        """Close the current client (at server shutdown)."""
        with self._lock:
            if self._client is not None:
                self._client.close()
            self._client, self._key = None, None
