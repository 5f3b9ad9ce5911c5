"""A thread dump (``py-spy dump``'s text, as ``ProfileTask`` answers it) read line by line, with the
task's own frames told from library frames, so every view (the sidebar through the server, the status
panel, ``%fray profile``) picks out the same frames as the task's code.

Rules (``line_kind``):

* ``Process …`` and ``Python v…`` lines are "process"; ``Thread <id> (<state>): "<name>"`` lines
  are "thread"; a frame line ``    <function> (<file>:<line>)`` is "own" or "library"; the lines
  ``--locals`` adds below a frame (``Arguments:``, ``Locals:`` and their values) are "detail"; any
  other line "other"; in a whole dump (``line_kinds``) every line from ``Process …`` to ``Python v…``
  is "process" (the command line py-spy prints may span lines).
* A frame is library when its file is ``<frozen …>``; when it is a path under ``site-packages`` or
  ``dist-packages``, or under a standard library directory (``…/lib/python3.12/…``); when it has no
  line number (a native frame: ``libc.so.6``); or when it is the short name py-spy prints by
  default (the path below its ``sys.path`` entry) of a standard library module
  (``sys.stdlib_module_names``: ``threading.py``, ``asyncio/base_events.py``) or of a package
  installed in this Python's site-packages (``numpy/core/…``). Every other frame is the task's own
  (its script, ``<string>`` for ``python -c``, a package installed from source).
"""

from __future__ import annotations

import re
import site
import sys
from functools import cache
from pathlib import Path
from typing import Final

FRAME: Final[re.Pattern[str]] = re.compile(r"^\s+(?P<function>\S.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
THREAD: Final[re.Pattern[str]] = re.compile(r'^Thread (0x[0-9A-Fa-f]+|\d+) \(.*\)(: ".*")?$')
PROCESS: Final[re.Pattern[str]] = re.compile(r"^(Process \d+: |Python v\d)")
DETAIL: Final[re.Pattern[str]] = re.compile(r"^\s{6,}\S|^\s+(Arguments|Locals):$")
PACKAGES: Final[re.Pattern[str]] = re.compile(r"/(site|dist)-packages/")
STDLIB_DIR: Final[re.Pattern[str]] = re.compile(r"/lib(64)?/python\d+(\.\d+)?t?/")


@cache
def _site_dirs() -> tuple[Path, ...]:
    """This Python's site-packages directories (the user's too)."""
    found = [*site.getsitepackages(), site.getusersitepackages()]
    return tuple(Path(entry) for entry in found if Path(entry).is_dir())


def _installed(top: str) -> bool:
    """Whether ``top`` (a module or package name) is installed in one of this Python's site dirs."""
    return any((entry / top).is_dir() or (entry / f"{top}.py").is_file() for entry in _site_dirs())


def library_file(file: str, line: str | None) -> bool:
    """Whether a frame in ``file`` (at ``line``; None: a native frame) is library code (module rules)."""
    if file.startswith("<"):
        return file.startswith("<frozen")
    if line is None:
        return True
    if file.startswith("/"):
        return bool(PACKAGES.search(file) or STDLIB_DIR.search(file))
    top = file.split("/", 1)[0].removesuffix(".py")
    if not top or top in (".", ".."):
        return False
    return top in sys.stdlib_module_names or _installed(top)


def line_kind(text: str) -> str:
    """One dump line's kind: "process", "thread", "own", "library", "detail" or "other" (module rules)."""
    if PROCESS.match(text):
        return "process"
    if THREAD.match(text):
        return "thread"
    if DETAIL.match(text):
        return "detail"
    frame = FRAME.match(text)
    if frame is None:
        return "other"
    return "library" if library_file(frame["file"], frame["line"]) else "own"


def line_kinds(text: str) -> list[str]:
    """Each line's kind (``line_kind``), the process header's lines all "process" (module rules)."""
    kinds, header = list[str](), False
    for line in text.splitlines():
        header = header or line.startswith("Process ")
        kinds.append("process" if header else line_kind(line))
        header = header and not line.startswith("Python v")
    return kinds
