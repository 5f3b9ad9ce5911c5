"""Packages whose public names load on first use, so importing the package stays cheap; and the
one lock under which a heavy third-party package is first imported from a worker thread."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from importlib import import_module
from types import ModuleType
from typing import Any

_FIRST_IMPORTS = threading.RLock()
_LOADED: set[str] = set()


@contextmanager
def one_import_at_a_time(*first: str) -> Iterator[None]:
    """Hold the process's one lock for importing heavy third-party packages on first use.

    Rule: code that may run in a worker thread (the server extension's handlers, the client's
    readers) imports pyarrow, Marin's Iris and rigging, and fsspec inside this block. pyarrow's
    package and its ``ipc`` module import each other, so a second thread that starts importing it
    while the first is still inside sees a partially initialised module and fails with
    ``ImportError`` (the Jobs sidebar's first two requests did: Iris's CLI pulls pyarrow in through
    finelog, the status texts import it directly). Python's import lock only orders imports that
    do not cycle; this lock orders these. Re-entrant, and cheap once the modules are loaded.

    ``first`` names modules the block's imports pull in that other threads need on their own
    (``"pyarrow.ipc"`` before Marin's Iris): each is imported whole first (``loaded``), so a reader
    that needs only it does not wait behind the rest of a long import (the sidebar's first job read
    waited a second behind the cluster list's import of Iris's CLI)."""
    for name in first:
        loaded(name)
    with _FIRST_IMPORTS:
        yield


def loaded(name: str) -> ModuleType:
    """The module ``name``; its first import happens under ``one_import_at_a_time`` and, once it has
    finished, later calls for it or a package it is in take no lock."""
    if name not in _LOADED:
        with _FIRST_IMPORTS:
            if name not in _LOADED:
                import_module(name)
                parts = name.split(".")
                _LOADED.update(".".join(parts[:end]) for end in range(1, len(parts) + 1))
    return sys.modules[name]


def lazy_exports(
    package: str, namespace: MutableMapping[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: a name in ``exports`` (name -> defining module)
    is imported from its module on first access and cached in ``namespace`` (the package's globals);
    any other name is an ``AttributeError``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted([*namespace, *exports])

    return __getattr__, __dir__
