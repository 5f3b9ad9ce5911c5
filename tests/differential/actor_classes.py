"""Actors and job bodies of the differential actor scenarios (``test_actors.py``), written as a Marin
user writes them for Fray's Iris backend. They are cloudpickled into the tasks by value, so a task needs
nothing of this repository."""

from __future__ import annotations

import os
import signal
import threading

from fray.actor import ActorHandle, current_actor
from fray.current_client import current_client
from fray.types import Entrypoint, JobRequest, ResourceConfig

SMALL = ResourceConfig(cpu=1, ram="512m", disk="1g")
"""Fray's default 64 GiB disk fits no local Iris worker."""


class Counter:
    """Counts, reports which replica it is, and measures how many of its calls overlap."""

    def __init__(self) -> None:
        self.index = current_actor().index
        self.total = 0
        self._lock = threading.Lock()
        self._active = 0
        self.peak = 0
        self._barriers: dict[int, threading.Barrier] = {}

    def whoami(self) -> int:
        return self.index

    def add(self, amount: int) -> int:
        with self._lock:
            self.total += amount
            return self.total

    def meet(self, parties: int, wait_s: float) -> bool:
        """Wait (at most ``wait_s``) for ``parties`` calls to be inside this method at once: True when
        they met, False when this call waited alone. The peak of calls inside is kept."""
        with self._lock:
            self._active += 1
            self.peak = max(self.peak, self._active)
            barrier = self._barriers.setdefault(parties, threading.Barrier(parties))
        try:
            barrier.wait(wait_s)
            return True
        except threading.BrokenBarrierError:
            return False
        finally:
            with self._lock:
                self._active -= 1

    def peak_overlap(self) -> int:
        return self.peak

    def fail(self, message: str) -> None:
        raise ValueError(message)

    def die(self) -> None:
        """Kill this actor's own process in the middle of the call."""
        os.kill(os.getpid(), signal.SIGKILL)


def add_through(handle: ActorHandle, amount: int) -> None:
    """A plain job's body: call the actor whose handle it was given."""
    print(f"the actor's total is now {handle.add.remote(amount).result()}", flush=True)


class Collector:
    """What a coordinator hosts: its children report to it."""

    def __init__(self) -> None:
        self.seen: list[int] = []
        self._lock = threading.Lock()

    def report(self, index: int) -> None:
        with self._lock:
            self.seen.append(index)

    def reports(self) -> list[int]:
        return sorted(self.seen)


def report_to(handle: ActorHandle, index: int) -> None:
    """A child job's body: call back the coordinator that launched it."""
    handle.report.remote(index).result()


def coordinate(children: int) -> None:
    """A coordinator job's body: host a Collector, launch ``children`` child jobs that report to it,
    wait for them, and print what it heard."""
    client = current_client()
    hosted = client.host_actor(Collector, name="collector")
    jobs = [client.submit(JobRequest(name=f"child-{index}", resources=SMALL,
                                     entrypoint=Entrypoint.from_callable(report_to, args=(hosted.handle, index))))
            for index in range(children)]
    for job in jobs:
        job.wait(timeout=300)
    print(f"coordinator heard {hosted.handle.reports.remote().result()}", flush=True)
    hosted.shutdown()
