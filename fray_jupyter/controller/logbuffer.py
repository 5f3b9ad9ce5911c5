"""Captured task output on its way to the store, in batches.

Lines are kept in memory and written in one transaction every ``FLUSH_S`` seconds, when
``FLUSH_LINES`` have piled up, or on demand (the engine flushes before recording an attempt's
end, so a task's last lines are stored before its final state). A ``kill -9`` of the
controller loses at most the last ``FLUSH_S`` of output.
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from fray_jupyter.controller.store import Store

FLUSH_S: Final[float] = 0.05
FLUSH_LINES: Final[int] = 2000


class LogBuffer:
    """Collects ``(job id, task index, attempt, time, source, line)`` rows for ``store``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._rows: list[tuple[str, int, int, int, str, str]] = []

    def add(self, job_id: str, idx: int, attempt: int, source: str, line: str) -> None:
        """Keep one line, stamped now; flush when the batch is full."""
        self._rows.append((job_id, idx, attempt, int(time.time() * 1000), source, line))
        if len(self._rows) >= FLUSH_LINES:
            self.flush()

    def discard(self, job_id: str) -> None:
        """Drop the job's lines not yet written (its rows were just deleted)."""
        self._rows = [row for row in self._rows if row[0] != job_id]

    def flush(self) -> None:
        """Write the pending lines in one transaction."""
        if self._rows:
            batch, self._rows = self._rows, []
            self.store.append_logs(batch)

    async def flush_periodically(self) -> None:
        """Flush every ``FLUSH_S`` until cancelled."""
        while True:
            await asyncio.sleep(FLUSH_S)
            self.flush()
