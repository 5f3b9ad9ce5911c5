"""The error a caller gets when an actor cannot be reached: Fray's ``ActorUnavailableError`` (a
``RuntimeError``), so Marin's ``except`` clauses catch it, with fray-jupyter's message."""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def _fray_base() -> type[RuntimeError]:
    """``fray.actor.ActorUnavailableError`` where marin-fray is installed, else ``RuntimeError``."""
    try:
        from fray.actor import ActorUnavailableError
    except ImportError:
        return RuntimeError
    base: type[RuntimeError] = ActorUnavailableError
    return base


@functools.cache
def _unavailable_class() -> type[RuntimeError]:
    return type("ActorUnavailable", (_fray_base(),), {
        "__module__": __name__,
        "__doc__": "An actor that cannot be reached: not registered, its task gone, or the connection "
                   "lost mid-call (``name``: its endpoint name)."})


def actor_unavailable(name: str, why: str) -> RuntimeError:
    """``ActorUnavailable`` for the actor ``name``, saying ``why`` in one line."""
    error: Any = _unavailable_class()(f"actor {name}: {why}")
    error.name = name
    return error  # type: ignore[no-any-return]


def unavailable_type() -> type[RuntimeError]:
    """The class ``actor_unavailable`` raises (for ``except`` and ``isinstance``)."""
    return _unavailable_class()
