"""Values moved between the kernel and a session's hosts (``push`` / ``pull``), by cloudpickle.

Rules:

* A value travels as the cloudpickle bytes of the object, named by the variable it is bound to;
  the kernel pickles what it pushes and unpickles what it pulls, a host the other way round.
* A name is a Python identifier that is not a keyword.
* A value that cannot be pickled, or whose bytes cannot be loaded where they arrive (a class or
  module that side lacks), fails with one line naming the variable, the side and the reason;
  nothing of that request is applied.
* cloudpickle is imported only when a value moves.
"""

from __future__ import annotations

import keyword
from collections.abc import Iterable, Mapping
from typing import Any

from fray_jupyter.session.outputs import SessionError


def check_name(name: object) -> str:
    """``name`` when it can be a variable, else a ``SessionError`` naming it."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise SessionError(f"{name!r} is not a variable name (a Python identifier that is not a keyword)")
    return name


def dumps(values: Mapping[str, Any], where: str) -> dict[str, bytes]:
    """Pickle every value (``where`` names this side in errors: ``the kernel``, ``host 1``)."""
    import cloudpickle

    out: dict[str, bytes] = {}
    for name, value in values.items():
        check_name(name)
        try:
            out[name] = cloudpickle.dumps(value)
        except Exception as exc:  # noqa: BLE001 - whatever pickling raises, the variable is named
            raise SessionError(f"{where} cannot pickle {name!r} ({type(value).__name__}): "
                               f"{type(exc).__name__}: {exc}") from None
    return out


def loads(payload: Mapping[str, bytes], where: str) -> dict[str, Any]:
    """Unpickle every value; all of them or none."""
    import cloudpickle

    out: dict[str, Any] = {}
    for name, data in payload.items():
        check_name(name)
        try:
            out[name] = cloudpickle.loads(data)
        except Exception as exc:  # noqa: BLE001 - whatever loading raises, the variable is named
            raise SessionError(f"{where} cannot load {name!r}: {type(exc).__name__}: {exc}") from None
    return out


def listing(names: Iterable[str], limit: int = 20) -> str:
    """Names sorted, comma-separated, at most ``limit`` of them then ``… and N more``; ``(none)``
    when there are none."""
    ordered = sorted(names)
    if not ordered:
        return "(none)"
    shown = ", ".join(ordered[:limit])
    return shown if len(ordered) <= limit else f"{shown} … and {len(ordered) - limit} more"
