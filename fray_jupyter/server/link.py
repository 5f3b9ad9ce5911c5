"""The server's way to the controller: the same one the kernels reach, found the same way.

Rule: every request resolves the controller afresh with the client's own discovery rule
(``client.discovery.resolve``: ``$FRAY_CONTROLLER_URL``, else the runtime file of a live embedded
controller, else a newly started embedded controller — only when the link allows starting one AND
the request asked for it — shared with the kernels through the runtime file and its lock). So the
server follows a controller that restarted on a new port, and never keeps job state of its own. The ``FrayClient`` is reused while the
``(url, token)`` pair stays the same; a replaced one is left to the garbage collector rather than
closed, because a request in another thread may still be using it.

Named clusters: the link is on the cluster ``selected`` by the sidebar's switcher, else the one the
settings choose (``c.FrayServer.cluster``, else ``$FRAY_CLUSTER`` / ``$MARIN_CLUSTER`` when no
``$FRAY_CONTROLLER_URL`` is set: ``client.clusters.chosen_cluster``). Each cluster is resolved once
per server and its client kept (``client.clusters``); a cluster that stops answering is dropped so
that the next request resolves it again. Selecting ``""`` means the embedded controller (or
``$FRAY_CONTROLLER_URL``), whatever the settings say.

Retries: a request resends a call for ``RETRY_FOR`` seconds at most (``client.retry``'s curve), so
the sidebar hears of trouble quickly; a status that gave up says after how many attempts and how
long, in ``client.retry``'s words, and the sidebar's next poll tries again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from fray_jupyter.client import ControllerUnreachable, FrayClient, FrayError, retry
from fray_jupyter.client.clusters import chosen_cluster, connect_cluster
from fray_jupyter.client.discovery import URL_ENV, resolve

T = TypeVar("T")

RETRY_FOR: float = 1.0
"""Seconds one verb may retry a controller that answered ``unavailable``: a sidebar poll should
report trouble quickly, not hang."""


@dataclass(frozen=True)
class LinkStatus:
    """What ``GET /fray/status`` reports: the controller's URL (``""`` when none is configured or
    running), whether it answered, the client's one-line error when it did not, the named
    cluster it is on (None: the embedded controller or a URL) and the origin of that cluster's
    own Iris dashboard (``NamedCluster.dashboard_url``; None off a named cluster)."""

    url: str
    reachable: bool
    error: str | None
    cluster: str | None = None
    dashboard_url: str | None = None


class ControllerLink:
    """Thread-safe source of ``FrayClient``s for request handlers (see the module rule).
    ``start``: whether requests may start the embedded controller; ``timeout``: seconds per RPC."""

    def __init__(self, *, start: bool = True, timeout: float = 10.0, cluster: str = "") -> None:
        self.start = start
        self.timeout = timeout
        self.cluster_setting = cluster
        self.selected: str | None = None  # the switcher's choice; None: follow the settings
        self._lock = threading.Lock()
        self._client: FrayClient | None = None
        self._key: tuple[str, str | None] | None = None
        self._clusters: dict[str, FrayClient] = {}

    def current_cluster(self) -> str | None:
        """The named cluster the link is on now, or None (see the module rules)."""
        if self.selected is not None:
            return self.selected or None
        return chosen_cluster(self.cluster_setting or None, os.environ.get(URL_ENV))

    def client(self, *, start: bool = False) -> FrayClient:
        """The client for the controller the kernels would use now (or the selected cluster's),
        starting the embedded one if there is none and both ``start`` and ``self.start`` allow it;
        ``ControllerUnreachable`` when there is none (or starting one failed)."""
        name = self.current_cluster()
        if name is not None:
            with self._lock:
                if name not in self._clusters:
                    self._clusters[name] = connect_cluster(name, timeout=self.timeout, retry_for=RETRY_FOR)
                return self._clusters[name]
        with self._lock:
            key = resolve(start=start and self.start)
            if self._client is None or key != self._key:
                self._client = FrayClient(*key, timeout=self.timeout, retry_for=RETRY_FOR)
                self._key = key
            return self._client

    def run(self, verb: Callable[[FrayClient], T], *, start: bool = False) -> T:
        """``verb(client)``; a named cluster that cannot be reached is dropped (resolved again next time)."""
        client = self.client(start=start)
        try:
            return verb(client)
        except ControllerUnreachable:
            if client.cluster is not None:
                self._forget(client)
            raise

    def status(self, *, start: bool = False) -> LinkStatus:
        """Resolve the controller (``start`` as in ``client``) and ask it for one job: reachable,
        or the reason it is not."""
        name = self.current_cluster()
        try:
            client = self.client(start=start)
        except FrayError as error:  # none configured or running, or the one started did not come up
            return LinkStatus("", False, str(error), name)
        dashboard = client.dashboard_url
        heard: list[retry.Retrying] = []
        try:
            with retry.watching_here(heard.append):
                self.run(lambda c: c.list(limit=1))
        except FrayError as error:
            gave_up = [event.words() for event in heard if event.phase == "gave up"]
            return LinkStatus(client.url, False, f"{error} ({gave_up[-1]})" if gave_up else str(error), name, dashboard)
        return LinkStatus(client.url, True, None, name, dashboard)

    def close(self) -> None:
        """Close the current client and every cluster's (at server shutdown)."""
        with self._lock:
            for client in [*([self._client] if self._client is not None else []), *self._clusters.values()]:
                client.close()
            self._client, self._key = None, None
            self._clusters.clear()

    def _forget(self, client: FrayClient) -> None:
        with self._lock:
            name = client.cluster_name
            if name is not None and self._clusters.get(name) is client:
                self._clusters.pop(name).close()
