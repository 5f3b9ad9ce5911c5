"""Error messages that name the bad value and what is allowed, or the nearest allowed value."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def unknown_choice(
    what: str, value: object, allowed: Iterable[str], *, list_limit: int = 12, compare_as: str | None = None
) -> str:
    """Message for a value outside a closed set: nearest match when one is close, else the choices.

    ``unknown_choice("TPU type", "v5p-7", names)`` -> "unknown TPU type 'v5p-7'; did you mean 'v5p-8'?"
    ``compare_as`` is the normalised form of ``value`` to match against ``allowed``.
    """
    choices = list(allowed)
    close = difflib.get_close_matches(compare_as or str(value), choices, n=1, cutoff=0.6)
    if close:
        hint = "did you mean " + " or ".join(repr(c) for c in close) + "?"
    elif len(choices) <= list_limit:
        hint = "expected one of " + ", ".join(repr(c) for c in choices)
    else:
        hint = "expected one of " + ", ".join(repr(c) for c in choices[:list_limit]) + ", …"
    return f"unknown {what} {value!r}; {hint}"
