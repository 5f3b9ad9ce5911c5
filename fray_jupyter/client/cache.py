"""Answers read from a controller, kept for a few seconds: what ``client.fit`` (the cluster's shape,
the verdicts read from it) and ``client.budget`` (a user's budget, the scheduler's queues) read
through, so a picker redrawn on every keystroke does not ask the controller each time.

Rules:

* ``Expiring.get(key, max_age, read)`` returns the value kept for ``key`` when it was read less than
  ``max_age`` seconds ago (``max_age=0``: never), else calls ``read()`` and keeps what it returns,
  stamped with the time the read began (so a kept answer is never older than it says).
* ``read`` runs outside the lock: a slow controller holds up no other key. Two threads missing the
  same key at once may both read it; the later answer is kept. An exception from ``read`` keeps
  nothing and reaches the caller.
* With ``most``, at most that many keys are kept: one more drops every key at once.
* Thread-safe; ``clear()`` forgets everything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Final, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

CACHE_SECONDS: Final[float] = 10.0
"""How old a kept answer may be unless the caller says otherwise (``fit``'s and ``budget``'s ``max_age``)."""


class Expiring(Generic[K, V]):
    """Values by key, each kept at most ``max_age`` seconds from when it was read (see the module
    rules); at most ``most`` keys (None: no bound)."""

    def __init__(self, most: int | None = None) -> None:
        self.most = most
        self._lock = threading.Lock()
        self._kept: dict[K, tuple[float, V]] = {}

    def get(self, key: K, max_age: float, read: Callable[[], V]) -> V:
        """The value of ``key`` at most ``max_age`` seconds old, read with ``read()`` when there is none."""
        began = time.monotonic()
        with self._lock:
            kept = self._kept.get(key)
        if kept is not None and began - kept[0] < max_age:
            return kept[1]
        value = read()
        with self._lock:
            if self.most is not None and key not in self._kept and len(self._kept) >= self.most:
                self._kept.clear()
            self._kept[key] = (began, value)
        return value

    def clear(self) -> None:
        """Forget every kept value."""
        with self._lock:
            self._kept.clear()
