"""``EndpointLease``: a task's endpoint in the controller's registry, kept alive as Iris's own
client keeps it.

Rules (Iris's ``EndpointClient``): registering asks for a ``REQUESTED_LEASE`` of 10 minutes under a
fresh endpoint id; the controller clamps it and answers the lease it granted. A daemon thread
registers again with the same request (same endpoint id: a renewal) a third of the way into the
granted lease, never more often than every 30 s; a failed renewal is tried again after 10 s,
doubling to 1 min. ``update(metadata)`` changes the facts the endpoint carries and registers again
at once, under the same endpoint id (a renewal, so readers never see the endpoint go); every later
renewal sends them too. ``close()`` stops renewing and unregisters (best effort: an endpoint left
behind lapses with its lease, or goes when its task ends).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Final

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import FrayError
from fray_jupyter.iris.proto.controller_pb2 import Controller

REQUESTED_LEASE_MS: Final[int] = 10 * 60 * 1000
RENEW_FRACTION: Final[float] = 1 / 3
MIN_RENEW_S: Final[float] = 30.0
RETRY_FIRST_S: Final[float] = 10.0
RETRY_MAX_S: Final[float] = 60.0


def renew_after(granted_ms: int) -> float:
    """Seconds between renewals of a lease of ``granted_ms`` (0: the requested one)."""
    return max((granted_ms or REQUESTED_LEASE_MS) / 1000 * RENEW_FRACTION, MIN_RENEW_S)


class EndpointLease:
    """``name`` → ``address`` registered for ``task_id`` (attempt ``attempt``) with ``metadata``,
    renewed until ``close``. Thread-safe."""

    def __init__(self, client: FrayClient, name: str, address: str, task_id: str, attempt: int,
                 metadata: Mapping[str, str] | None = None) -> None:
        self.client = client
        self._request = Controller.RegisterEndpointRequest(
            name=name, address=address, task_id=task_id, attempt_id=attempt, endpoint_id=str(uuid.uuid4()),
            metadata=dict(metadata or {}))
        self._request.lease_duration.milliseconds = REQUESTED_LEASE_MS
        self._lock = threading.Lock()
        self.granted_ms = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def endpoint_id(self) -> str:
        return self._request.endpoint_id

    @property
    def metadata(self) -> dict[str, str]:
        """The facts the endpoint carries now."""
        with self._lock:
            return dict(self._request.metadata)

    def open(self) -> EndpointLease:
        """Register (``FrayError`` as the controller refused it) and start renewing."""
        self._register()
        self._thread = threading.Thread(target=self._renew, name=f"endpoint-lease-{self._request.name}", daemon=True)
        self._thread.start()
        return self

    def update(self, metadata: Mapping[str, str]) -> None:
        """Merge ``metadata`` into the endpoint's facts and, once open, register again now under the
        same endpoint id (``FrayError`` as the controller refused it; the renewals keep trying)."""
        with self._lock:
            self._request.metadata.update(metadata)
        if self._thread is not None and not self._stop.is_set():
            self._register()

    def _register(self) -> None:
        with self._lock:
            request = Controller.RegisterEndpointRequest()
            request.CopyFrom(self._request)
        self.granted_ms = self.client.register_endpoint(request).lease_duration.milliseconds

    def _renew(self) -> None:
        wait, retry = renew_after(self.granted_ms), 0.0
        while not self._stop.wait(wait):
            try:
                self._register()
                wait, retry = renew_after(self.granted_ms), 0.0
            except FrayError as error:
                if error.code in ("not_found", "failed_precondition"):  # the task is over: nothing to keep
                    return
                wait = retry = min(retry * 2, RETRY_MAX_S) if retry else RETRY_FIRST_S

    def close(self) -> None:
        """Stop renewing and unregister (an unreachable controller is no error here)."""
        self._stop.set()
        try:
            self.client.unregister_endpoint(self._request.endpoint_id)
        except FrayError:
            pass
