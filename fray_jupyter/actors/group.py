"""``ActorGroup``: Fray's actor group over one Iris job of ``count`` replicas, each serving one
member named ``{job_id}/{name}-{index}``.

Rules:

* ``discover_new()`` is one ``ListEndpoints`` (prefix ``{job_id}/{name}-``) and returns the
  handles not returned before, in index order; ``ready_count`` counts those found so far.
* ``wait_ready(count=None, timeout=900)`` (Fray's Iris default) polls until ``count`` (default:
  all) are registered and returns the first ``count`` handles; a job that ends first fails it at
  once with its error (``RuntimeError``), ``TimeoutError`` after ``timeout``. The pause between two
  looks (``poll_delay``) doubles from 50 ms but stays within a tenth of the time waited so far (at
  least 0.25 s, at most 2 s): a member that registers is found soon after, however long it took.
* ``is_done()``: the job has ended; ``shutdown()`` stops it (its endpoints go with its tasks).
* A group pickles to ``{name, count, job_id}``; unpickled inside an Iris task it uses that task's
  controller.
"""

from __future__ import annotations

import time
from typing import Any, Final

from fray_jupyter.actors.handle import ActorHandle
from fray_jupyter.actors.resolver import RegistryResolver, task_resolver
from fray_jupyter.client.client import FrayClient
from fray_jupyter.iris.states import is_job_finished, job_state_name

POLL_FIRST: Final[float] = 0.05
POLL_SOON: Final[float] = 0.25
POLL_MAX: Final[float] = 2.0
WAIT_READY_TIMEOUT: Final[float] = 900.0


def poll_delay(previous: float, waited: float, most: float = POLL_MAX) -> float:
    """The next pause of a wait that has lasted ``waited`` seconds: double ``previous``, but at most
    a tenth of ``waited`` (never under ``POLL_SOON``) and at most ``most``; so what the wait is for
    is seen within about a tenth of its own time, and a long wait asks seldom."""
    return min(previous * 2, max(POLL_SOON, waited / 10), most)


def _member_index(endpoint_name: str) -> int:
    tail = endpoint_name.rpartition("-")[2]
    return int(tail) if tail.isdigit() else -1


class ActorGroup:
    """The members of one actor group's job (see the module rules)."""

    def __init__(self, name: str, count: int, job_id: str, resolver: RegistryResolver | None = None) -> None:
        self.name = name
        self.count = count
        self.job_id = job_id
        self._resolver = resolver
        self._handles: list[ActorHandle] = []
        self._seen: set[str] = set()

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "count": self.count, "job_id": str(self.job_id)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["name"], state["count"], str(state["job_id"]))  # type: ignore[misc]

    def __repr__(self) -> str:
        return f"ActorGroup({self.name!r}, job {self.job_id}, {len(self._handles)}/{self.count} ready)"

    @property
    def resolver(self) -> RegistryResolver:
        """The registry the group reads (the task's controller for an unpickled group)."""
        if self._resolver is None:
            self._resolver = task_resolver()
        return self._resolver

    @property
    def client(self) -> FrayClient:
        return self.resolver.client

    @property
    def ready_count(self) -> int:
        """How many members have been found registered."""
        return len(self._handles)

    def endpoints(self) -> list[Any]:
        """The group's registered endpoints now, by member index."""
        found = self.client.endpoints(f"{self.job_id}/{self.name}-")
        return sorted(found, key=lambda ep: _member_index(ep.name))

    def discover_new(self, target: int | None = None) -> list[ActorHandle]:
        """Handles of members registered since the last call (up to ``target`` in all)."""
        new: list[ActorHandle] = []
        for endpoint in self.endpoints():
            if target is not None and len(self._seen) >= target:
                break
            if endpoint.name in self._seen:
                continue
            self._seen.add(endpoint.name)
            handle = ActorHandle(endpoint.name, self.resolver, where=self.resolver.resolved(endpoint))
            self._handles.append(handle)
            new.append(handle)
        return new

    def wait_ready(self, count: int | None = None, timeout: float = WAIT_READY_TIMEOUT) -> list[ActorHandle]:
        """The first ``count`` members' handles once registered (see the module rules)."""
        target = self.count if count is None else count
        started = time.monotonic()
        deadline, delay = started + timeout, POLL_FIRST
        while True:
            self.discover_new(target)
            if len(self._handles) >= target:
                return list(self._handles[:target])
            state = self.client.state([self.job_id])[self.job_id]
            if is_job_finished(state):
                error = self.client.status(self.job_id).error or "no error recorded"
                raise RuntimeError(f"actor job {self.job_id} ended {job_state_name(state)} with "
                                   f"{len(self._handles)}/{target} actors ready: {error}")
            if time.monotonic() + delay > deadline:
                raise TimeoutError(f"only {len(self._handles)}/{target} actors of {self.job_id} ready after {timeout:g} s")
            time.sleep(delay)
            delay = poll_delay(delay, time.monotonic() - started)

    def is_done(self) -> bool:
        """Whether the group's job has ended (no member will come up again)."""
        return is_job_finished(self.client.state([self.job_id])[self.job_id])

    def shutdown(self) -> None:
        """Stop the group's job, and with it every member."""
        self.client.terminate(self.job_id)
