"""What a session says when it loses its hosts or an interrupt does not take: pure functions of
the session's state, so every surface (a cell's output, the panel, ``%fray jobs``) says the same.

Rules:

* Loss is said, never hidden: ``session NAME lost: <reason>``, then the cells run since the
  session started (their effects are gone with the processes) and the offer of
  ``%fray session restart NAME``, which starts new processes for the same slice request. Nothing
  is re-run by itself: the list is for the user to choose from.
* An interrupt that a host did not obey within the caller's bound names those hosts, why that
  happens, and the same offer of a restart (which loses the state); nothing escalates by itself.
* A host process's end reads as ``exited with code N`` or ``killed by signal N (SIGNAME)``.
"""

from __future__ import annotations

import signal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

SOURCE_PREVIEW_CHARS: Final = 72
"""How much of a cell's first line the list of cells run shows."""


@dataclass(frozen=True)
class CellRun:
    """A cell the session ran: its id and its source."""

    cell_id: str
    source: str

    @property
    def preview(self) -> str:
        """The first non-blank line, cut to :data:`SOURCE_PREVIEW_CHARS` (`` …`` marks a cut or more lines)."""
        lines = [line.rstrip() for line in self.source.splitlines() if line.strip()]
        first = lines[0] if lines else "(empty)"
        cut = len(first) > SOURCE_PREVIEW_CHARS
        more = cut or len(lines) > 1
        return first[:SOURCE_PREVIEW_CHARS] + (" …" if more else "")


def restart_offer(session: str) -> str:
    """The command that starts the session again: new processes, same slice request, state lost."""
    return f"%fray session restart {session}"


def exit_reason(returncode: int) -> str:
    """A host process's end from its return code (negative: the signal that killed it)."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    number = -returncode
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"killed by signal {number}"
    return f"killed by signal {number} ({name})"


def loss_text(session: str, reason: str, cells: Sequence[CellRun]) -> str:
    """The words for a lost session (see the module rules)."""
    lines = [f"session {session} lost: {reason}",
             "Its hosts' processes are gone, and with them every variable, import and array they held."]
    if cells:
        lines.append(f"Cells run since it started ({len(cells)}; none is re-run by itself):")
        lines += [f"  [{cell.cell_id}] {cell.preview}" for cell in cells]
    else:
        lines.append("No cell had run on it.")
    lines.append(f"To go on: {restart_offer(session)} (new processes, the same slice request), then run the "
                 "cells you need again.")
    return "\n".join(lines)


def stuck_text(session: str, hosts: Sequence[int], bound: float) -> str:
    """The words for hosts still running a cell ``bound`` seconds after an interrupt."""
    names = ("host " if len(hosts) == 1 else "hosts ") + ", ".join(map(str, hosts))
    return (f"session {session}: {names} did not stop within {bound:g} s of the interrupt (code inside a C call "
            "or a collective sees it only when that returns). Interrupt again to wait longer, or "
            f"{restart_offer(session)} to end the processes (their state is lost).")
