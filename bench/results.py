"""Figures shared by every bench script and collected by ``bench/run``.

Rule: a bench prints its own human-readable lines and also calls ``record()`` once per figure.
When ``$FRAY_BENCH_RESULTS`` names a file (``bench/run`` sets it), each figure is appended to it
as one JSON line; otherwise ``record()`` does nothing. A figure with a goal says whether it
passed; a figure that could not be measured (a peer not installed) has ``passed=None`` and a
``note`` saying why.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

RESULTS_ENV: Final[str] = "FRAY_BENCH_RESULTS"


@dataclass(frozen=True)
class Figure:
    """One measured figure: which bench, what, the value with its unit, the goal (empty: none),
    whether it met the goal (None: no goal or not measured) and a note (why it was skipped)."""

    bench: str
    name: str
    value: str
    goal: str = ""
    passed: bool | None = None
    note: str = ""

    @property
    def verdict(self) -> str:
        """``pass``, ``MISS``, ``skipped`` or empty (a figure without a goal)."""
        if self.note and not self.value:
            return "skipped"
        if self.passed is None:
            return ""
        return "pass" if self.passed else "MISS"


def record(figure: Figure) -> None:
    """Append ``figure`` to ``$FRAY_BENCH_RESULTS`` when it is set."""
    path = os.environ.get(RESULTS_ENV)
    if path:
        with Path(path).open("a") as handle:
            handle.write(json.dumps(asdict(figure)) + "\n")


def skipped(bench: str, name: str, goal: str, reason: str) -> Figure:
    """Record and return a figure that could not be measured, and print why (one line)."""
    figure = Figure(bench, name, "", goal, None, reason)
    print(f"  {name}: skipped ({reason})")
    record(figure)
    return figure


def read(path: Path) -> list[Figure]:
    """The figures recorded in ``path`` (none when it does not exist)."""
    if not path.exists():
        return []
    return [Figure(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
