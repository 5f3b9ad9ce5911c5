"""``InstantClock``: a ``client.retry`` clock whose sleeps pass at once and are recorded, so a
retry policy is proven in milliseconds of no wall time."""

from __future__ import annotations


class InstantClock:
    """``now_ms`` moves only by ``sleep_ms``, which records each wait in ``slept``."""

    def __init__(self, now: int = 0) -> None:
        self.now = now
        self.slept: list[int] = []

    def now_ms(self) -> int:
        """The clock's time in milliseconds."""
        return self.now

    def sleep_ms(self, ms: int) -> None:
        """Pass ``ms`` milliseconds at once."""
        self.slept.append(ms)
        self.now += ms
