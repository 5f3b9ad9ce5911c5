"""The client's one retry policy: which failures a verb sends again, how long it waits between
sends, for how long in all, and how it says so while it does.

Rules:

* What is sent again (``retried``): an answer whose Connect code is in ``RETRIED_CODES``, and only
  for a call that is harmless to send twice (the caller says so: ``idempotent``). ``unavailable``
  is the transport's word: a connection refused by a URL that never answered is not retried (a
  wrong URL fails at once), one refused after it answered is (the controller is restarting), and
  so is a kept-alive connection that dropped. Every other code is the request's own fault or the
  server's verdict and is raised at once — ``internal`` too, which Iris retries because its
  Connect client reports network errors so; ours reports them as ``unavailable``.
* The waits (``RetryPolicy.delays``) start at ``first_ms``, grow by ``factor`` up to ``most_ms``,
  and each is moved by up to ``jitter`` of itself either way (never under 1 ms), so the clients a
  restarted controller lost do not all come back in the same millisecond.
* A verb is sent again while its next send would start within ``budget_ms`` of its first one and
  it has been sent fewer than ``max_attempts`` times; then its last error is raised.
* Budgets (``policy_for``): ``LOCAL`` for a controller on this machine (the embedded one, a
  loopback URL: a restart takes a second or two, and a user waiting on a cell should hear soon);
  ``IRIS`` for a named cluster or a remote URL — Iris's own client's (``iris.rpc.errors``
  ``call_with_retry``: 0.5 s doubling to 10 s, 30 minutes, 240 sends), since a real controller
  under load can stall for minutes while its jobs run on.
* Every resend, and the end of a verb that was resent, is told to the process's watchers
  (``watch``; ``watching_here`` for one thread's calls) as a ``Retrying``: the status panel and a
  magic's cell show its ``words()``, "still retrying (attempt 3, 1.2 s)", instead of hanging
  silently, and the sidebar's status says "gave up after 5 attempts, 750 ms".
* Polling for a change (``wait``, ``follow``) is not retrying: ``backoff`` is its curve, and
  ``sleep_until`` its deadline.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Final, Literal, Protocol, TypeVar

from fray_jupyter.client.errors import FrayError
from fray_jupyter.vocabulary import counted, duration_ms

R = TypeVar("R")

RETRIED_CODES: Final[dict[str, str]] = {
    "unavailable": "the controller is restarting or shedding load (the transport says when a refusal counts)",
    "resource_exhausted": "the server shed the call before running it",
    "deadline_exceeded": "no answer within the call's timeout: a stalled controller (Iris retries it too)",
}
"""Connect codes of failures a harmless call is sent again after, and why; every other code is raised."""


@dataclass(frozen=True)
class RetryPolicy:
    """One backoff curve and budget, in milliseconds (see the module rules)."""

    first_ms: int
    most_ms: int
    factor: float
    jitter: float
    budget_ms: int
    max_attempts: int

    def __post_init__(self) -> None:
        checks = ((self.first_ms >= 1, f"first_ms {self.first_ms} must be at least 1"),
                  (self.most_ms >= self.first_ms, f"most_ms {self.most_ms} must be at least first_ms {self.first_ms}"),
                  (self.factor >= 1, f"factor {self.factor} must be at least 1"),
                  (0 <= self.jitter < 1, f"jitter {self.jitter} must be in [0, 1)"),
                  (self.budget_ms >= 0, f"budget_ms {self.budget_ms} must not be negative"),
                  (self.max_attempts >= 1, f"max_attempts {self.max_attempts} must be at least 1"))
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    def delays(self, rng: Callable[[], float] = random.random) -> Iterator[int]:
        """The waits before the 2nd, 3rd, ... send: ``first_ms`` times ``factor`` per send, capped at
        ``most_ms``, each moved by ``jitter`` of itself times ``2*rng()-1`` (``rng`` in [0, 1))."""
        base = float(self.first_ms)
        while True:
            yield max(1, round(base * (1 + self.jitter * (2 * rng() - 1))))
            base = min(base * self.factor, float(self.most_ms))

    def within(self, seconds: float) -> RetryPolicy:
        """This curve with a budget of ``seconds`` (0: never resend); a negative budget is a ``ValueError``."""
        if seconds < 0:
            raise ValueError(f"retry_for {seconds} must not be negative (seconds to keep resending; 0: never)")
        return replace(self, budget_ms=round(seconds * 1000))


LOCAL: Final[RetryPolicy] = RetryPolicy(first_ms=50, most_ms=2000, factor=2.0, jitter=0.1, budget_ms=10_000,
                                        max_attempts=240)
"""A controller on this machine: 50 ms doubling to 2 s, for 10 s."""
IRIS: Final[RetryPolicy] = RetryPolicy(first_ms=500, most_ms=10_000, factor=2.0, jitter=0.1, budget_ms=1_800_000,
                                       max_attempts=240)
"""A named cluster or a remote controller: Iris's ``call_with_retry`` (0.5 s doubling to 10 s, 30 min, 240 sends)."""


def policy_for(*, local: bool, retry_for: float | None = None) -> RetryPolicy:
    """``LOCAL`` for a controller on this machine, else ``IRIS``; with ``retry_for`` seconds as its budget."""
    policy = LOCAL if local else IRIS
    return policy if retry_for is None else policy.within(retry_for)


def retried(error: FrayError) -> bool:
    """Whether ``error`` may go away if the same call is simply sent again (see the module rules)."""
    if error.code == "unavailable":
        return error.retryable
    return error.code in RETRIED_CODES


# -- saying so --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Retrying:
    """A verb being sent again (``phase`` "retrying": ``attempt`` is the send about to go out), or
    the end of one that was ("answered", "gave up": ``attempt`` sends in all), ``elapsed_ms`` after
    its first send; ``reason`` is the last failure's one line."""

    url: str
    method: str
    attempt: int
    elapsed_ms: int
    reason: str
    phase: Literal["retrying", "answered", "gave up"] = "retrying"

    def words(self) -> str:
        """``still retrying (attempt 3, 1.2 s)``, ``answered after 3 attempts, 1.2 s``,
        ``gave up after 3 attempts, 10.0 s``."""
        took = duration_ms(self.elapsed_ms)
        if self.phase == "retrying":
            return f"still retrying (attempt {self.attempt}, {took})"
        return f"{self.phase} after {counted(self.attempt, 'attempt')}, {took}"

    def line(self) -> str:
        """One line for a surface: the last failure (which names the controller) and ``words()``."""
        return f"{self.reason}; {self.words()}"


Watcher = Callable[[Retrying], None]
_watchers: list[Watcher] = []
_watchers_lock = threading.Lock()


def watch(watcher: Watcher) -> Callable[[], None]:
    """Call ``watcher`` with every ``Retrying`` of any client in this process (from the thread
    whose verb is retrying, so it must be quick); returns the function that stops it."""
    with _watchers_lock:
        _watchers.append(watcher)

    def stop() -> None:
        with _watchers_lock:
            if watcher in _watchers:
                _watchers.remove(watcher)
    return stop


@contextlib.contextmanager
def watching_here(watcher: Watcher) -> Iterator[None]:
    """Call ``watcher`` with the ``Retrying`` of the calls this thread makes inside the block only
    (a magic's cell, one server request: not another thread's poller)."""
    here = threading.get_ident()

    def mine(event: Retrying) -> None:
        if threading.get_ident() == here:
            watcher(event)
    stop = watch(mine)
    try:
        yield
    finally:
        stop()


def _tell(event: Retrying) -> None:
    with _watchers_lock:
        current = list(_watchers)
    for watcher in current:
        try:
            watcher(event)
        except Exception:  # noqa: BLE001,S112 - a surface's bug must not fail the verb it watches
            continue


# -- sending ------------------------------------------------------------------------------------------
class Clock(Protocol):
    """Where ``send`` reads the time and sleeps (a test passes its own)."""

    def now_ms(self) -> int:
        """Milliseconds on a monotonic clock."""
        ...

    def sleep_ms(self, ms: int) -> None:
        """Wait ``ms`` milliseconds."""
        ...


class SystemClock:
    """``time.monotonic_ns`` and ``time.sleep``."""

    def now_ms(self) -> int:
        """Milliseconds on the monotonic clock."""
        return time.monotonic_ns() // 1_000_000

    def sleep_ms(self, ms: int) -> None:
        """Sleep ``ms`` milliseconds."""
        time.sleep(ms / 1000)


CLOCK: Clock = SystemClock()
"""The clock ``send`` uses unless given one."""


def send(call: Callable[[], R], policy: RetryPolicy, *, idempotent: bool, url: str, method: str = "",
         clock: Clock | None = None, rng: Callable[[], float] = random.random) -> R:
    """``call()``, sent again after a failure ``retried`` allows (only when ``idempotent``) while
    ``policy`` allows; its last ``FrayError`` raised otherwise. Resends are told to the watchers."""
    clock = clock or CLOCK
    start, delays, attempt = clock.now_ms(), policy.delays(rng), 1
    reason, outcome = "", "gave up"
    try:
        while True:
            try:
                result = call()
                outcome = "answered"
                return result
            except FrayError as error:
                delay, elapsed = next(delays), clock.now_ms() - start
                reason = str(error)
                if (not (idempotent and retried(error)) or attempt >= policy.max_attempts
                        or elapsed + delay > policy.budget_ms):
                    raise
            attempt += 1
            _tell(Retrying(url, method, attempt, elapsed + delay, reason))
            clock.sleep_ms(delay)
    finally:
        if attempt > 1:
            _tell(Retrying(url, method, attempt, clock.now_ms() - start, reason,
                           "answered" if outcome == "answered" else "gave up"))


# -- polling --------------------------------------------------------------------------------------------
def backoff(first: float = 0.05, most: float = 2.0) -> Iterator[float]:
    """A poll's delays in seconds: ``first, 2*first, 4*first, ...`` capped at ``most`` (no jitter:
    a poll is one client's own pace, not a crowd coming back)."""
    delay = first
    while True:
        yield delay
        delay = min(delay * 2, most)


def sleep_until(delay: float, deadline: float | None, message: str) -> None:
    """Sleep ``delay`` seconds, or raise ``TimeoutError(message)`` if ``deadline`` (monotonic) passed;
    a sleep never runs past ``deadline``."""
    if deadline is not None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(message)
        delay = min(delay, remaining)
    time.sleep(delay)
