"""The sampler: every running task's resource use, appended to ``iris.task`` as an Iris worker
appends it (marin-iris 0.2.227 ``worker/task_attempt.py``: one row per attempt per pass).

Rules:

* Every ``INTERVAL_S`` while any attempt runs (none: it waits to be woken, so an idle controller does
  no periodic work), one read of the machine's processes (``proctree``) measures each running
  attempt's whole process tree: ``memory_mb`` the sum of its resident memory (MiB, rounded down, as
  Iris reads ``/proc/<pid>/statm``); ``memory_peak_mb`` the most ``memory_mb`` seen for the attempt;
  ``cpu_millicores`` the CPU seconds the tree used since the last pass per wall second × 1000 (a
  process seen for the first time counts all its CPU time; the attempt's first pass says 0, as
  Iris's does; a process that starts and exits between two passes is not seen); ``disk_mb`` the
  size of the attempt's work dir, measured when the attempt is first seen and then every
  ``DISK_INTERVAL_S`` (Iris's cadence), reading at most ``DISK_MAX_ENTRIES`` entries; ``worker_id`` is ``runner.WORKER_ID``. The process count is kept for the attempt too
  (``Usage.processes``; ``iris.task`` has no column for it).
* Accelerator columns are null: the embedded controller emulates accelerators on its CPU, as Iris
  leaves them unset on a worker without one.
* An attempt whose processes are all gone (it exits mid-pass) gets no row; nothing one task does
  (500 processes, exiting, unreadable files) stops a pass or the sampler; a pass that fails is
  logged and the next one runs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from fray_jupyter.controller.runtime import proctree
from fray_jupyter.controller.runtime.runner import WORKER_ID
from fray_jupyter.controller.stats.stats import Stats
from fray_jupyter.controller.store.statscatalog import TASK_NAMESPACE

INTERVAL_S: Final[float] = 1.0
DISK_INTERVAL_S: Final[float] = 60.0
DISK_MAX_ENTRIES: Final[int] = 100_000
_MIB: Final[int] = 1024 * 1024
_LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Target:
    """What the sampler needs of one running attempt: who it is, its leader pid (None before its
    first process starts) and its work dir."""

    uid: str
    job_id: str
    idx: int
    attempt: int
    leader: int | None
    workdir: Path


@dataclass
class Usage:
    """One attempt's latest measurement and what the next one needs."""

    memory_mb: int = 0
    memory_peak_mb: int = 0
    cpu_millicores: int = 0
    disk_mb: int = 0
    processes: int = 0
    measured_at: float = 0.0
    disk_at: float = float("-inf")
    cpu_by_process: dict[tuple[int, float], float] = field(default_factory=dict)


def tree_size_mb(root: Path, max_entries: int = DISK_MAX_ENTRIES) -> int:
    """Bytes under ``root`` in MiB (rounded down), links not followed, reading at most ``max_entries``."""
    total, seen, stack = 0, 0, [str(root)]
    while stack and seen < max_entries:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    seen += 1
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        elif entry.is_file(follow_symlinks=False):
                            total += entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue
        except OSError:
            continue
    return total // _MIB


def measure(usage: Usage, tree: list[proctree.Proc], now: float) -> None:
    """Update ``usage`` with ``tree`` measured at monotonic time ``now`` (see the module rules)."""
    cpu = {(proc.pid, proc.start): proc.cpu_s for proc in tree}
    if usage.measured_at:
        used = sum(max(0.0, spent - usage.cpu_by_process.get(key, 0.0)) for key, spent in cpu.items())
        usage.cpu_millicores = int(used / max(now - usage.measured_at, 1e-3) * 1000)
    usage.cpu_by_process = cpu
    usage.measured_at = now
    usage.memory_mb = sum(proc.rss_bytes for proc in tree) // _MIB
    usage.memory_peak_mb = max(usage.memory_peak_mb, usage.memory_mb)
    usage.processes = len(tree)


class Sampler:
    """Samples the attempts ``targets()`` names into ``stats`` (see the module rules)."""

    def __init__(self, targets: Callable[[], Iterable[Target]], stats: Stats, interval_s: float = INTERVAL_S) -> None:
        self.targets = targets
        self.stats = stats
        self.interval_s = interval_s
        self.usage: dict[str, Usage] = {}
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """An attempt started: sample from now on."""
        self._wake.set()

    async def run(self) -> None:
        """Sample every ``interval_s`` while attempts run; otherwise wait to be woken."""
        while True:
            try:
                sampled = self.sample_once()
            except Exception:  # noqa: BLE001 - one failed pass never stops sampling
                _LOG.exception("sampling pass failed")
                sampled = 1
            if not sampled:
                self._wake.clear()
                await self._wake.wait()
                continue
            await asyncio.sleep(self.interval_s)

    def sample_once(self, now: float | None = None) -> int:
        """One pass: a row per running attempt whose processes exist; returns how many attempts are
        running (so 0 means the sampler may sleep until woken)."""
        targets = list(self.targets())
        live = {target.uid for target in targets}
        for gone in set(self.usage) - live:
            del self.usage[gone]
        if not targets:
            return 0
        table = proctree.processes()
        children = proctree.children_of(table)
        moment = time.monotonic() if now is None else now
        stamp = int(time.time() * 1000)
        rows: dict[str, list[dict[str, object]]] = {}
        for target in targets:
            tree = proctree.members(target.leader, table, children) if target.leader else []
            if not tree:
                continue
            usage = self.usage.setdefault(target.uid, Usage())
            measure(usage, tree, moment)
            if moment - usage.disk_at >= DISK_INTERVAL_S:
                usage.disk_mb, usage.disk_at = tree_size_mb(target.workdir), moment
            rows.setdefault(target.job_id, []).append({
                "task_id": f"{target.job_id}/{target.idx}", "attempt_id": target.attempt, "worker_id": WORKER_ID,
                "ts": stamp, "cpu_millicores": usage.cpu_millicores, "memory_mb": usage.memory_mb,
                "disk_mb": usage.disk_mb, "memory_peak_mb": usage.memory_peak_mb,
                "accelerator_util_pct": None, "accelerator_mem_bytes": None})
        for job_id, job_rows in rows.items():
            self.stats.append(TASK_NAMESPACE, job_id, job_rows)
        self.stats.prune()
        return len(targets)
