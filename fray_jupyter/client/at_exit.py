"""Closing what the user forgot to close, at interpreter exit (``close_at_exit``).

Users write ``c = connect(...)``, a verb, and the end of the script; a kernel restart ends the
process the same way. Transports (``client.transport``) and named-cluster resolutions
(``client.clusters``) register themselves here when they open, so that such a process still ends.
"""

from __future__ import annotations

import atexit
import threading
import weakref
from collections.abc import Callable
from typing import Protocol


class Closable(Protocol):
    """Anything with an idempotent ``close()``."""

    def close(self) -> None: ...


_OPEN: weakref.WeakSet[Closable] = weakref.WeakSet()
_OPEN_LOCK = threading.Lock()
_exit_hooked = False


_BEFORE: list[Callable[[], None]] = []


def before_closing_at_exit(hook: Callable[[], None]) -> None:
    """Rule: ``hook()`` runs at interpreter exit before ``close_at_exit``'s resources are closed
    (newest hook first), so it can still call a controller through them — a session stopping its
    job, say. A hook that raises is skipped; the others and the closing still run."""
    with _OPEN_LOCK:
        _BEFORE.append(hook)
    _hook_exit()


def close_at_exit(resource: Closable) -> None:
    """Rule: ``resource.close()`` runs when the interpreter exits, whatever the user forgot to close
    (a kernel restart exits the same way) — first thing at exit, before Python waits for non-daemon
    threads (an in-process Iris cluster's threads never end by themselves) and before it tears
    objects down (an open gRPC channel then hangs in ``Channel.__del__``). It is held weakly: a
    resource collected earlier is forgotten. ``close()`` must be idempotent (it may already have run)."""
    with _OPEN_LOCK:
        _OPEN.add(resource)
    _hook_exit()


def _hook_exit() -> None:
    global _exit_hooked
    with _OPEN_LOCK:
        if _exit_hooked:
            return
        _exit_hooked = True
    # threading's own exit hooks run before non-daemon threads are joined (concurrent.futures uses
    # them); the plain atexit hooks run only after, which is too late for a cluster's threads.
    register = getattr(threading, "_register_atexit", atexit.register)
    try:
        register(_close_all)
    except RuntimeError:  # the interpreter is already exiting: nothing can be run at its exit any more
        pass


def _close_all() -> None:
    """Run the ``before_closing_at_exit`` hooks, then close every resource ``close_at_exit`` holds,
    newest first; one that fails is left as it is."""
    with _OPEN_LOCK:
        hooks = list(_BEFORE)
        _BEFORE.clear()
    for hook in reversed(hooks):
        try:
            hook()
        except Exception:  # noqa: BLE001, S110 - at exit there is no one to report to; run the rest
            pass
    with _OPEN_LOCK:
        resources = list(_OPEN)
        _OPEN.clear()
    for resource in reversed(resources):
        try:
            resource.close()
        except Exception:  # noqa: BLE001, S110 - at exit there is no one to report to; close the rest
            pass


