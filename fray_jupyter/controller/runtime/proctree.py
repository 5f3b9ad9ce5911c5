"""This machine's processes, read once per sampling pass, and the process tree of one task.

Rules:

* ``processes()`` reads every process's parent, session, start time, CPU time (user + system) and
  resident memory: on Linux from ``/proc/<pid>/stat`` alone (one small read per process, the cheapest
  way; the fields Iris's process runtime reads), elsewhere through psutil. A process that exits while
  it is read is left out; nothing raises for a process.
* A task's tree (``members``) is its leader (the attempt's process group leader, which also leads
  its session) with every process below it by parent links, and every process still in its session
  (a child whose parent exited is reparented away but stays in the session); a process that left the
  session *and* lost its parent is not seen (as no tree walk can).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

_TICKS: Final[int] = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_PAGE: Final[int] = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True)
class Proc:
    """One process: ``start`` (with ``pid``) names it for good; ``cpu_s`` is its user + system CPU seconds."""

    pid: int
    ppid: int
    session: int
    start: float
    cpu_s: float
    rss_bytes: int


def _linux() -> dict[int, Proc]:
    found: dict[int, Proc] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                text = stat.read()
            fields = text[text.rindex(b")") + 2:].split()
            found[int(name)] = Proc(int(name), int(fields[1]), int(fields[3]), int(fields[19]) / _TICKS,
                                    (int(fields[11]) + int(fields[12])) / _TICKS, int(fields[21]) * _PAGE)
        except (OSError, ValueError, IndexError):
            continue
    return found


def _portable() -> dict[int, Proc]:
    psutil: Any = importlib.import_module("psutil")
    found: dict[int, Proc] = {}
    for process in psutil.process_iter(["ppid", "cpu_times", "memory_info", "create_time"]):
        info = process.info
        if info.get("cpu_times") is None or info.get("memory_info") is None:
            continue
        try:
            session = os.getsid(process.pid)
        except OSError:
            continue
        cpu = info["cpu_times"]
        found[process.pid] = Proc(process.pid, int(info["ppid"] or 0), session, float(info["create_time"] or 0),
                                  float(cpu.user + cpu.system), int(info["memory_info"].rss))
    return found


def processes() -> dict[int, Proc]:
    """Every process of this machine now, by pid (see the module rules)."""
    return _linux() if sys.platform == "linux" and os.path.isdir("/proc/self") else _portable()


def children_of(table: Mapping[int, Proc]) -> dict[int, list[int]]:
    """Parent pid → its children's pids."""
    children: dict[int, list[int]] = {}
    for proc in table.values():
        children.setdefault(proc.ppid, []).append(proc.pid)
    return children


def members(leader: int, table: Mapping[int, Proc], children: Mapping[int, list[int]]) -> list[Proc]:
    """The processes of the tree led by ``leader`` (see the module rules); [] when it is gone."""
    if leader not in table:
        return []
    seen = {leader}
    stack = [leader]
    while stack:
        for child in children.get(stack.pop(), ()):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    seen.update(proc.pid for proc in table.values() if proc.session == leader)
    return [table[pid] for pid in seen]
