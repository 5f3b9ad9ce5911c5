"""What a session's job says about itself, for ``%fray jobs`` and the sidebar: read from the job's
own endpoints in the controller's registry, never from the kernel that started it.

Rules:

* Each host of a session registers its actor endpoint ``{job}/session-{i}`` (``serve``) with
  metadata: :data:`SESSION_KEY` (present: this endpoint is a session host), :data:`IDLE_TIMEOUT_KEY`
  (seconds, ``""``: never released) and :data:`IDLE_SINCE_KEY` (epoch ms it went idle, ``""`` while
  it runs a cell). The host registers again, same endpoint id, when that changes.
* A job is a session when one of its endpoints says so; its hosts ready are those endpoints (a
  host registers once it serves cells, and its endpoint goes when its task ends).
* A session is running a cell while any host is; else it is idle for as long as its longest-idle
  host, which releases the slice first, at its idle timeout.
* ``session_line`` says it in one line, the same for every surface: ``session · v5p-16 · 2/2
  hosts ready · idle 1m 05s, releases the slice in 58m 55s``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from fray_jupyter.iris.placement import device_text
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.vocabulary import duration_ms, fraction

SESSION_KEY: Final = "fray-session"
IDLE_TIMEOUT_KEY: Final = "fray-session-idle-timeout"
IDLE_SINCE_KEY: Final = "fray-session-idle-since-ms"
_HOST_NAME: Final = re.compile(r"^(?P<job>.+)/session-(?P<index>\d+)$")


class EndpointLike(Protocol):
    """What a registered endpoint carries (Iris's ``Controller.Endpoint``)."""

    @property
    def name(self) -> str: ...

    @property
    def metadata(self) -> Mapping[str, str]: ...


def host_metadata(idle_timeout: float | None, idle_since_ms: int | None) -> dict[str, str]:
    """The metadata a session host registers its endpoint with (see the module rules)."""
    return {SESSION_KEY: "1", IDLE_TIMEOUT_KEY: "" if idle_timeout is None else f"{idle_timeout:g}",
            IDLE_SINCE_KEY: "" if idle_since_ms is None else str(idle_since_ms)}


@dataclass(frozen=True)
class HostFacts:
    """One ready host: its index, since when it is idle (None: running a cell), its idle timeout."""

    index: int
    idle_since_ms: int | None
    idle_timeout: float | None


@dataclass(frozen=True)
class SessionFacts:
    """A session job's ready hosts, by index."""

    job_id: str
    hosts: tuple[HostFacts, ...]

    @property
    def running(self) -> bool:
        """Some host is running a cell."""
        return any(host.idle_since_ms is None for host in self.hosts)

    def idle_ms(self, now_ms: int) -> int | None:
        """How long the longest-idle host has been idle; None while a cell runs (or no host is ready)."""
        if self.running or not self.hosts:
            return None
        return max(0, now_ms - min(host.idle_since_ms or now_ms for host in self.hosts))

    def releases_in_ms(self, now_ms: int) -> int | None:
        """How long until the first host releases the slice; None while a cell runs, or never."""
        if self.running or not self.hosts:
            return None
        ends = [(host.idle_since_ms or now_ms) + host.idle_timeout * 1000 for host in self.hosts
                if host.idle_timeout is not None]
        return max(0, int(min(ends)) - now_ms) if ends else None


def _number(text: str) -> float | None:
    try:
        return float(text) if text else None
    except ValueError:
        return None


def sessions_of(endpoints: Iterable[EndpointLike]) -> dict[str, SessionFacts]:
    """Job id → its session facts, for the jobs whose endpoints say they are sessions."""
    found: dict[str, list[HostFacts]] = {}
    for endpoint in endpoints:
        match = _HOST_NAME.match(endpoint.name)
        if match is None or SESSION_KEY not in endpoint.metadata:
            continue
        since = _number(endpoint.metadata.get(IDLE_SINCE_KEY, ""))
        found.setdefault(match["job"], []).append(HostFacts(
            int(match["index"]), None if since is None else int(since),
            _number(endpoint.metadata.get(IDLE_TIMEOUT_KEY, ""))))
    return {job: SessionFacts(job, tuple(sorted(hosts, key=lambda host: host.index)))
            for job, hosts in found.items()}


def duration_text(ms: int) -> str:
    """``45.0 s``, ``1m 05s``, ``2h 03m``: the display vocabulary's duration (``vocabulary``)."""
    return duration_ms(ms)


def session_line(facts: SessionFacts, hosts: int, now_ms: int, device: str = "") -> str:
    """The session in one line: its slice's ``device``, its hosts ready of ``hosts``, then running a
    cell or idle (and when it releases the slice)."""
    ready = " · ".join(["session", *([device] if device else []), f"{fraction(len(facts.hosts), hosts, 'host')} ready"])
    idle = facts.idle_ms(now_ms)
    if idle is None:
        return f"{ready} · running a cell" if facts.running else ready
    releases = facts.releases_in_ms(now_ms)
    release = f", releases the slice in {duration_text(releases)}" if releases is not None else ""
    return f"{ready} · idle {duration_text(idle)}{release}"


def session_notes(endpoints: Iterable[EndpointLike], jobs: Sequence[job_pb2.JobStatus],
                  now_ms: int | None = None) -> dict[str, str]:
    """Job id → its ``session_line`` (at ``now_ms``, default now), for the ``jobs`` that are
    sessions (``%fray jobs``' notes)."""
    found = sessions_of(endpoints)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    return {job.job_id: session_line(found[job.job_id], job.task_count, now_ms, device_text(job.resources))
            for job in jobs if job.job_id in found}
