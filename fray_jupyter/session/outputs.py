"""What a session host sends back: the vocabulary the host engine and the kernel share, defined once.

Rules:

* A cell's output is an ordered sequence of :class:`Stream` chunks (``stdout`` / ``stderr`` text)
  and :class:`Display` bundles (``display()`` calls, figures), in the order the cell made them.
* A :class:`Display` is a Jupyter mime bundle: ``data`` maps a mime type to its content (text for
  text types, base64 text for binary ones such as ``image/png``, JSON-able values for
  ``application/json``); ``metadata`` is Jupyter's per-type metadata. ``text/plain`` is always there.
* A cell's value (its last statement is an expression, not ended by ``;``) travels as a
  :class:`Display` of that value, never as the object itself: the object stays on the host (a
  device array cannot leave it); ``pull`` moves objects.
* An exception travels as a :class:`RemoteError`: its type, message, the frames of its traceback
  that ran the cell's own code (as text), and the whole formatted traceback (chained exceptions
  included). The exception object itself never travels: its class may not exist in the kernel.
* Every record is a frozen dataclass of plain values, so any transport that pickles (Iris's actor
  calls use cloudpickle) carries it unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

StreamName = Literal["stdout", "stderr"]
STREAMS: Final[tuple[StreamName, ...]] = ("stdout", "stderr")
IDLE_TIMEOUT: Final = 3600.0
"""Seconds a session host waits idle before it releases its slice: the default both sides use."""


class SessionError(Exception):
    """A session request that cannot be done, said in one line naming the value and the rule."""


@dataclass(frozen=True)
class Stream:
    """Text a cell wrote to ``sys.stdout`` or ``sys.stderr``."""

    name: StreamName
    text: str


@dataclass(frozen=True)
class Display:
    """A mime bundle: ``data`` (mime type → content) and ``metadata`` (mime type → its metadata)."""

    data: Mapping[str, Any]
    metadata: Mapping[str, Any] = field(default_factory=dict)


Output = Stream | Display


@dataclass(frozen=True)
class Frame:
    """One frame of a remote traceback: where it ran and the source line, as text."""

    filename: str
    lineno: int
    name: str
    line: str


@dataclass(frozen=True)
class RemoteError:
    """An exception raised by a cell on a host."""

    type: str
    """The exception's class, qualified by its module unless it is a builtin (``ZeroDivisionError``,
    ``json.decoder.JSONDecodeError``)."""
    message: str
    frames: tuple[Frame, ...]
    """The traceback's frames from the cell's first line down (the engine's own frames left out)."""
    traceback: str
    """The whole traceback as Python prints it, chained exceptions included."""

    @property
    def summary(self) -> str:
        """``Type: message`` (just ``Type`` when the message is empty), one line."""
        first = self.message.splitlines()[0] if self.message else ""
        return f"{self.type}: {first}" if first else self.type


@dataclass(frozen=True)
class CellResult:
    """What one host made of one cell."""

    cell_id: str
    host: int
    outputs: tuple[Output, ...]
    value: Display | None
    """The last expression's value as a mime bundle; None when there is none or it is None."""
    error: RemoteError | None
    started: float
    """``time.time()`` on the host when the cell started, and when it ended."""
    ended: float

    @property
    def interrupted(self) -> bool:
        """The cell ended with ``KeyboardInterrupt`` (an interrupt reached it)."""
        return self.error is not None and self.error.type == "KeyboardInterrupt"


@dataclass(frozen=True)
class Chunks:
    """A read of a cell's output: the outputs after the reader's cursor, the cursor to read from
    next, and whether the cell has ended (nothing more will come)."""

    cell_id: str
    outputs: tuple[Output, ...]
    cursor: int
    done: bool


@dataclass(frozen=True)
class HostStatus:
    """A host engine's state: how many cells it ran, the cell running now, and since when it is idle."""

    host: int
    pid: int
    started: float
    cells_run: int
    running: str | None
    """The id of the cell running now (None when idle)."""
    idle_since: float | None
    """``time.time()`` when the last cell ended (or the engine started); None while a cell runs."""


@dataclass(frozen=True)
class InterruptReply:
    """What an interrupt did on one host: the cell it reached (None when no cell was running, and
    then nothing was done)."""

    host: int
    cell_id: str | None

    @property
    def was_running(self) -> bool:
        """A cell was running and got (or already had) the interrupt."""
        return self.cell_id is not None
