"""A running cell's output, kept in order and readable while the cell runs.

Rules:

* A cell's outputs are :class:`~fray_jupyter.session.outputs.Stream` and
  :class:`~fray_jupyter.session.outputs.Display` records in the order the cell made them. Text
  written to the same stream one write after another joins one chunk until someone reads it:
  a read seals what it returned, so a cursor always points at the same outputs.
* ``read(cursor, wait)`` returns the outputs from ``cursor`` on, the cursor to read from next and
  whether the cell has ended; with ``wait`` it first waits up to that many seconds for something
  new (a long poll), returning at once when there is.
* While a cell runs, ``sys.stdout`` and ``sys.stderr`` are :class:`CellStream` objects: what any
  thread writes goes to the running cell and, as well, to the process's own stream (the task's
  log keeps it); between cells only to the process's own stream. Output written below Python
  (a C library or a subprocess writing to file descriptor 1 or 2) reaches only the task's log.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from typing import TextIO

from fray_jupyter.session.outputs import CellResult, Chunks, Display, Output, SessionError, Stream, StreamName


class CellRecord:
    """One cell's source, outputs so far and, once it ended, its result."""

    def __init__(self, cell_id: str, source: str) -> None:
        self.cell_id = cell_id
        self.source = source
        self._outputs: list[Output] = []
        self._sealed = 0
        self._result: CellResult | None = None
        self._abandoned: str | None = None
        self._changed = threading.Condition(threading.Lock())

    @property
    def outputs(self) -> tuple[Output, ...]:
        """Every output so far."""
        with self._changed:
            return tuple(self._outputs)

    def write(self, name: StreamName, text: str) -> None:
        """Add text to stream ``name``: joined to the last chunk if that is the same stream and unread."""
        if not text:
            return
        with self._changed:
            last = self._outputs[-1] if len(self._outputs) > self._sealed else None
            if isinstance(last, Stream) and last.name == name:
                self._outputs[-1] = Stream(name, last.text + text)
            else:
                self._outputs.append(Stream(name, text))
            self._changed.notify_all()

    def add(self, display: Display) -> None:
        """Add a rich output."""
        with self._changed:
            self._outputs.append(display)
            self._changed.notify_all()

    def finish(self, result: CellResult) -> None:
        """The cell ended with ``result``; readers and waiters see it."""
        with self._changed:
            self._result = result
            self._changed.notify_all()

    def abandon(self, reason: str) -> None:
        """The cell will never run (the engine stopped first); waiters get ``reason``."""
        with self._changed:
            self._abandoned = reason
            self._changed.notify_all()

    def read(self, cursor: int, wait: float = 0.0) -> Chunks:
        """The outputs from ``cursor`` on (see the module rules)."""
        with self._changed:
            if not 0 <= cursor <= len(self._outputs):
                raise SessionError(f"cursor {cursor} is outside cell {self.cell_id}'s outputs "
                                   f"(0 to {len(self._outputs)})")
            if wait > 0:
                self._changed.wait_for(lambda: len(self._outputs) > cursor or self._ended(), timeout=wait)
            self._sealed = len(self._outputs)
            return Chunks(self.cell_id, tuple(self._outputs[cursor:]), self._sealed, self._result is not None)

    def _ended(self) -> bool:
        return self._result is not None or self._abandoned is not None

    def wait(self) -> CellResult:
        """Block until the cell ends; its result."""
        with self._changed:
            self._changed.wait_for(self._ended)
            if self._result is None:
                raise SessionError(f"cell {self.cell_id} did not run: {self._abandoned}")
            return self._result


class CellStream(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` on a host: writes go to the running cell (if any) and to the
    process's own stream."""

    def __init__(self, name: StreamName, original: TextIO, cell: Callable[[], CellRecord | None]) -> None:
        super().__init__()
        self.name = name
        self.original = original
        self._cell = cell

    def write(self, text: str) -> int:
        """Write ``text`` (a ``str``, as on any text stream) to the cell and the process's stream."""
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        record = self._cell()
        if record is not None:
            record.write(self.name, text)
        self.original.write(text)
        return len(text)

    def flush(self) -> None:
        """Flush the process's stream."""
        self.original.flush()

    def fileno(self) -> int:
        """The process's stream's descriptor (writes to it reach only the task's log)."""
        return self.original.fileno()

    def isatty(self) -> bool:
        """Never a terminal: the cell's output goes to a notebook."""
        return False

    def writable(self) -> bool:
        """Always writable."""
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """The process's stream's encoding (text is kept as ``str`` either way)."""
        return self.original.encoding or "utf-8"
