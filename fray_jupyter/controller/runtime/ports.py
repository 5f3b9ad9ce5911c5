"""Named task ports (``LaunchJobRequest.ports``), reserved as a genuine Iris worker's port allocator
reserves them (marin-iris 0.2.227, ``iris.cluster.worker.port_allocator``).

Rules:

* Range: ``PORT_RANGE`` (Iris's default task port range, 12000–13999, below the kernel's ephemeral
  ports, so no outgoing connection on this machine can hold one of them).
* Each attempt that asks for ports gets, per name, a port of the range that no running attempt of
  this controller holds and that can be bound now on every interface (as Iris checks it); the task
  reads it from ``IRIS_PORT_<NAME>`` and binds it itself. So two running attempts never get the same
  port. The search starts at a random place in the range and wraps around: Iris's worker takes the
  lowest, which is the same on a host with one worker, but here several controllers (and a genuine
  Iris) may share a machine, and lowest-first would hand two of them the same port in the moment
  before either task binds it.
* An attempt holds its ports until its last process has exited (Iris releases them when the task's
  container is cleaned up); a retry is a new attempt and gets its ports afresh.
* None free in the range: the attempt fails with ``PortsExhausted``'s one line.
* Iris's controller does not report the ports (``TaskStatus.ports`` is filled by a worker's own
  status RPC only), so neither does this one: the task sees them in its environment.
"""

from __future__ import annotations

import random
import socket
from collections.abc import Iterable, Sequence
from typing import Final

PORT_RANGE: Final[range] = range(12000, 14000)
"""Where task ports come from (Iris's ``DEFAULT_TASK_PORT_RANGE``, end exclusive)."""


class PortsExhausted(RuntimeError):
    """No port of ``PORT_RANGE`` is free for an attempt's named ports."""


def _bindable(port: int) -> bool:
    """Whether ``port`` can be bound now on every interface (IPv4, as Iris checks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("", port))
        except OSError:
            return False
    return True


class PortAllocator:
    """The ports running attempts hold (see the module rules)."""

    def __init__(self, ports: Sequence[int] = PORT_RANGE) -> None:
        self.ports = ports
        """The ports it hands out (``PORT_RANGE``), searched from a random place (module rules)."""
        self.held: set[int] = set()

    def reserve(self, names: Sequence[str]) -> dict[str, int]:
        """A port for each of ``names``, in order, now held (none held when ``PortsExhausted``)."""
        chosen: dict[str, int] = {}
        start = random.randrange(len(self.ports)) if self.ports else 0
        searched = [*self.ports[start:], *self.ports[:start]]
        candidates = (port for port in searched if port not in self.held and _bindable(port))
        for name in names:
            port = next(candidates, None)
            if port is None:
                raise PortsExhausted(
                    f"no free port in {self.ports[0]}-{self.ports[-1]} for the task's port {name!r} "
                    f"({len(self.held)} held by running tasks); wait for tasks to finish or ask for fewer ports")
            chosen[name] = port
        self.held.update(chosen.values())
        return chosen

    def release(self, ports: Iterable[int]) -> None:
        """The attempt holding ``ports`` has ended: they are free again."""
        self.held.difference_update(ports)
