"""Looking inside every host of a session at once: a CPU or memory profile, or a thread dump, of
each (``%fray session profile``; ``profile_hosts`` from Python).

Rules:

* Host ``i`` is task ``i`` of the session's job (it serves as ``{job}/session-{i}``), so its
  capture is ``client.profile("{job}/{i}", …)`` (``client.inspection``'s rules and checks: a bad
  kind, format or duration is a ``ValueError`` before anything is asked).
* Every host is captured at once, one thread each: a 10 s CPU profile of 8 hosts takes about 10 s,
  not 80, and the flamegraphs cover the same window of the same cells.
* Each host's answer is its ``Profile``, or why it could not be made (the controller's reason);
  one host's failure does not hide the others' captures.
* A session that is not ready, lost or stopped raises ``SessionError`` as its other calls do.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fray_jupyter.client.errors import FrayError
from fray_jupyter.client.inspection import InspectionFailed, Profile, profile_request

if TYPE_CHECKING:
    from fray_jupyter.session.session import Session


@dataclass(frozen=True)
class HostProfile:
    """One host's capture: the host, its task, and its ``Profile`` or the reason there is none."""

    host: int
    task_id: str
    profile: Profile | None
    error: str = ""

    @property
    def label(self) -> str:
        """"host 1 (task /alice/dev/1)"."""
        return f"host {self.host} (task {self.task_id})"


def profile_hosts(session: Session, kind: str = "cpu", seconds: int = 10, fmt: str | None = None,
                  **options: Any) -> list[HostProfile]:
    """A ``kind`` capture of every host of ``session`` at once, host by host (the module rules);
    ``options`` are ``client.inspection.profile_request``'s keywords."""
    task_ids = session.task_ids()
    profile_request(task_ids[0], kind, seconds, fmt, **options)  # a bad request fails before any host is asked

    def one(host: int) -> HostProfile:
        task_id = task_ids[host]
        try:
            return HostProfile(host, task_id, session.client.profile(task_id, kind, seconds, fmt, **options))
        except InspectionFailed as error:
            return HostProfile(host, task_id, None, error.detail)
        except FrayError as error:
            return HostProfile(host, task_id, None, str(error))

    with ThreadPoolExecutor(max_workers=len(task_ids), thread_name_prefix=f"session-{session.name}-profile") as pool:
        return list(pool.map(one, range(len(task_ids))))
