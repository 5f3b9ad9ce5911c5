"""Captured task output on its way to the store, in batches.

Lines are kept in memory and written in one transaction ``FLUSH_S`` seconds after the first
unwritten line arrived (an idle controller never wakes for this), when ``FLUSH_LINES`` have piled up, or on demand (the engine flushes before recording an attempt's
end, so a task's last lines are stored before its final state). A ``kill -9`` of the
controller loses at most the last ``FLUSH_S`` of output.

Each task keeps at most ``max_lines`` lines (across its attempts): the line that reaches the cap
says so, later lines are dropped and counted, and when the attempt ends one more line says
``… N lines truncated`` (retention's per-task log cap).
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from fray_jupyter.controller.store.store import Store

FLUSH_S: Final[float] = 0.05
FLUSH_LINES: Final[int] = 2000


class LogBuffer:
    """Collects ``(job id, task index, attempt, time, source, line)`` rows for ``store``."""

    def __init__(self, store: Store, max_lines: int = 100_000) -> None:
        self.store = store
        self.max_lines = max_lines
        self._rows: list[tuple[str, int, int, int, str, str]] = []
        self._counts: dict[tuple[str, int], list[int]] = {}  # (job, task) → [kept, dropped]
        self._waiting = asyncio.Event()  # set while unwritten lines wait for ``flush_periodically``

    def add(self, job_id: str, idx: int, attempt: int, source: str, line: str) -> None:
        """Keep one line, stamped now (or count it as dropped past the cap); flush when the
        batch is full."""
        counts = self._counts.get((job_id, idx))
        if counts is None:
            counts = self._counts[job_id, idx] = [self.store.log_count(job_id, idx), 0]
        if counts[0] >= self.max_lines:
            counts[1] += 1
            return
        counts[0] += 1
        stamp = int(time.time() * 1000)
        self._rows.append((job_id, idx, attempt, stamp, source, line))
        if counts[0] == self.max_lines:
            self._rows.append((job_id, idx, attempt, stamp, "stderr",
                               f"… log cap of {self.max_lines} lines per task reached: later lines are dropped"))
        if len(self._rows) >= FLUSH_LINES:
            self.flush()
        elif self._rows:
            self._waiting.set()

    def finish(self, job_id: str, idx: int, attempt: int) -> None:
        """The attempt ended: add the ``… N lines truncated`` line if lines were dropped."""
        counts = self._counts.pop((job_id, idx), None)
        if counts is not None and counts[1]:
            self._rows.append((job_id, idx, attempt, int(time.time() * 1000), "stderr",
                               f"… {counts[1]} lines truncated (log cap: {self.max_lines} lines per task)"))
            self._waiting.set()

    def discard(self, job_id: str) -> None:
        """Drop the job's lines not yet written (its rows were just deleted)."""
        self._rows = [row for row in self._rows if row[0] != job_id]
        self._counts = {key: value for key, value in self._counts.items() if key[0] != job_id}

    def flush(self) -> None:
        """Write the pending lines in one transaction."""
        if self._rows:
            batch, self._rows = self._rows, []
            self.store.append_logs(batch)

    async def flush_periodically(self) -> None:
        """Until cancelled: sleep until a line waits, then flush ``FLUSH_S`` later (no timer
        runs while nothing is captured)."""
        while True:
            await self._waiting.wait()
            await asyncio.sleep(FLUSH_S)
            self._waiting.clear()
            self.flush()
