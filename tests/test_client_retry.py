"""client.retry: the one retry policy. Its backoff stays within its bounds and jitter, a verb stops
within its budget, only what is safe and transient is resent, the budgets are Iris's where they
should be, and every resend is told to the watchers in the one "still retrying" word — proven in
milliseconds with an injected clock, and once end to end through a real Connect transport."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fray_jupyter.client import retry
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import ControllerUnreachable, FrayError, error_for
from fray_jupyter.client.retry import IRIS, LOCAL, Retrying, RetryPolicy
from tests.instant_clock import InstantClock

URL = "http://127.0.0.1:1"

policies = st.builds(
    lambda first, spread, factor, jitter, budget, attempts: RetryPolicy(first, first * spread, factor, jitter,
                                                                        budget, attempts),
    st.integers(1, 5000), st.integers(1, 50), st.floats(1.0, 4.0), st.floats(0.0, 0.99),
    st.integers(0, 3_600_000), st.integers(1, 300))
randoms = st.lists(st.floats(0.0, 1.0, exclude_max=True), min_size=1, max_size=40)


def cycle(values: list[float]) -> Iterator[float]:
    while True:
        yield from values


def failing(code: str = "unavailable", *, retryable: bool = True) -> FrayError:
    error = error_for(code, "restarting", url=URL, method="GetJobStatus")
    error.retryable = retryable
    return error


class Always:
    """A call that always fails with ``error``; counts its sends."""

    def __init__(self, error: FrayError) -> None:
        self.error, self.sent = error, 0

    def __call__(self) -> str:
        self.sent += 1
        raise self.error


@given(policies, randoms)
def test_each_delay_is_its_curve_point_moved_by_at_most_the_jitter(policy: RetryPolicy, rng: list[float]) -> None:
    values = cycle(rng)
    base = float(policy.first_ms)
    for delay in [d for d, _ in zip(policy.delays(lambda: next(values)), range(40), strict=False)]:
        low, high = base * (1 - policy.jitter), base * (1 + policy.jitter)
        assert delay >= 1 and max(1, round(low)) <= delay <= round(high)
        assert delay <= round(policy.most_ms * (1 + policy.jitter))
        base = min(base * policy.factor, policy.most_ms)


@given(policies)
def test_the_jitter_spans_its_whole_range(policy: RetryPolicy) -> None:
    """rng 0 gives the low end, rng near 1 the high end, 0.5 the curve itself."""
    def first(value: float) -> int:
        return next(policy.delays(lambda: value))
    assert first(0.0) == max(1, round(policy.first_ms * (1 - policy.jitter)))
    assert first(0.5) == policy.first_ms
    assert first(0.999999) == max(1, round(policy.first_ms * (1 + policy.jitter * 0.999998)))


@settings(max_examples=200)
@given(policies, randoms)
def test_a_verb_stops_within_its_budget_and_its_attempts(policy: RetryPolicy, rng: list[float]) -> None:
    clock, values = InstantClock(), cycle(rng)
    call = Always(failing())
    with pytest.raises(ControllerUnreachable):
        retry.send(call, policy, idempotent=True, url=URL, clock=clock, rng=lambda: next(values))
    sent = call.sent
    assert sent == len(clock.slept) + 1 <= policy.max_attempts
    assert sum(clock.slept) <= policy.budget_ms
    # it stopped because the attempts ran out, or because the next wait would have passed the budget
    replay = cycle(rng)
    upcoming = [d for d, _ in zip(policy.delays(lambda: next(replay)), range(sent), strict=False)]
    assert upcoming[:-1] == clock.slept
    assert sent == policy.max_attempts or sum(clock.slept) + upcoming[-1] > policy.budget_ms


@pytest.mark.parametrize(("error", "idempotent", "sent"), [
    (failing("unavailable"), True, 3),
    (failing("resource_exhausted", retryable=False), True, 3),
    (failing("deadline_exceeded", retryable=False), True, 3),
    (failing("unavailable"), False, 1),                    # not harmless to send twice
    (failing("unavailable", retryable=False), True, 1),    # refused by a URL that never answered
    (failing("internal"), True, 1),
    (failing("not_found"), True, 1),
    (failing("invalid_argument"), True, 1),
    (failing("unauthenticated"), True, 1),
])
def test_which_failures_are_resent(error: FrayError, idempotent: bool, sent: int) -> None:
    """Transient failures of a harmless call are resent (two sends fit the 25 ms budget); the rest at once."""
    clock = InstantClock()
    policy = RetryPolicy(first_ms=10, most_ms=10, factor=1.0, jitter=0.0, budget_ms=25, max_attempts=100)
    call = Always(error)
    with pytest.raises(type(error)):
        retry.send(call, policy, idempotent=idempotent, url=URL, clock=clock)
    assert call.sent == sent
    assert retry.retried(error) == (sent > 1 or (not idempotent and error.retryable))


def test_budgets_local_short_and_named_clusters_irises_own() -> None:
    """A controller on this machine: 50 ms doubling to 2 s for 10 s; anything else: Iris's
    ``call_with_retry`` (0.5 s doubling to 10 s, its 30-minute budget and 240 sends)."""
    errors = pytest.importorskip("iris.rpc.errors")
    assert retry.policy_for(local=True) == LOCAL and (LOCAL.first_ms, LOCAL.most_ms, LOCAL.budget_ms) == (50, 2000, 10_000)
    assert retry.policy_for(local=False) == IRIS
    assert (IRIS.first_ms, IRIS.most_ms, IRIS.factor) == (500, 10_000, 2.0)
    assert IRIS.budget_ms == errors.DEFAULT_RETRY_MAX_ELAPSED * 1000
    assert IRIS.max_attempts == errors.DEFAULT_RETRY_MAX_ATTEMPTS
    assert retry.policy_for(local=False, retry_for=1.5) == RetryPolicy(500, 10_000, 2.0, IRIS.jitter, 1500, 240)


@pytest.mark.parametrize(("change", "message"), [
    ({"first_ms": 0}, "first_ms 0 must be at least 1"),
    ({"most_ms": 10}, "most_ms 10 must be at least first_ms 50"),
    ({"factor": 0.5}, "factor 0.5 must be at least 1"),
    ({"jitter": 1.0}, r"jitter 1.0 must be in \[0, 1\)"),
    ({"max_attempts": 0}, "max_attempts 0 must be at least 1"),
])
def test_a_bad_policy_is_one_line_naming_the_value(change: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        RetryPolicy(**{**LOCAL.__dict__, **change})
    with pytest.raises(ValueError, match=r"^retry_for -1 must not be negative"):
        LOCAL.within(-1)


def test_the_words_a_surface_shows() -> None:
    seen = Retrying(URL, "GetJobStatus", 3, 12_345, "cannot reach the Fray controller at x: refused")
    assert seen.words() == "still retrying (attempt 3, 12.3 s)"
    assert seen.line() == "cannot reach the Fray controller at x: refused; still retrying (attempt 3, 12.3 s)"
    assert Retrying(URL, "m", 1, 40, "r", "answered").words() == "answered after 1 attempt, 40 ms"
    assert Retrying(URL, "m", 4, 61_000, "r", "gave up").words() == "gave up after 4 attempts, 1m 01s"


def test_watchers_hear_each_resend_and_the_end() -> None:
    clock, heard = InstantClock(), []
    stop = retry.watch(heard.append)
    policy = RetryPolicy(first_ms=100, most_ms=100, factor=1.0, jitter=0.0, budget_ms=250, max_attempts=10)
    try:
        with pytest.raises(ControllerUnreachable):
            retry.send(Always(failing()), policy, idempotent=True, url=URL, method="GetJobStatus", clock=clock)
        replies = iter([failing(), "ok"])

        def flaky() -> str:
            reply = next(replies)
            if isinstance(reply, FrayError):
                raise reply
            return reply
        assert retry.send(flaky, policy, idempotent=True, url=URL, clock=clock) == "ok"
        assert retry.send(lambda: "at once", policy, idempotent=True, url=URL, clock=clock) == "at once"
    finally:
        stop()
    assert [event.words() for event in heard] == [
        "still retrying (attempt 2, 100 ms)", "still retrying (attempt 3, 200 ms)", "gave up after 3 attempts, 200 ms",
        "still retrying (attempt 2, 100 ms)", "answered after 2 attempts, 100 ms"]
    assert heard[0].url == URL and heard[0].method == "GetJobStatus" and "restarting" in heard[0].reason
    with pytest.raises(ControllerUnreachable):
        retry.send(Always(failing()), policy, idempotent=True, url=URL, clock=clock)
    assert len(heard) == 5  # stopped: nothing more is heard


class Restarting(BaseHTTPRequestHandler):
    """A controller that answers ``unavailable`` (HTTP 503, Connect JSON) to its first two calls."""

    answers: ClassVar[list[int]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        status = 503 if len(self.answers) < 2 else 200
        self.answers.append(status)
        body = json.dumps({"code": "unavailable", "message": "restarting"}).encode() if status == 503 else b""
        self.send_response(status)
        self.send_header("content-type", "application/json" if status == 503 else "application/proto")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_a_client_rides_out_a_restart_saying_so() -> None:
    """Through the real Connect transport: two ``unavailable`` answers are resent under the local
    policy, and a watcher hears the word while it happens and the end."""
    Restarting.answers = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Restarting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    heard: list[Retrying] = []
    stop = retry.watch(heard.append)
    try:
        with FrayClient(f"http://127.0.0.1:{server.server_address[1]}") as client:
            assert client.policy == LOCAL and client.retry_for == 10.0
            assert client.job("/u/j").job.job_id == ""
    finally:
        stop()
        server.shutdown()
        server.server_close()
        thread.join()
    assert Restarting.answers == [503, 503, 200]
    assert [event.phase for event in heard] == ["retrying", "retrying", "answered"]
    assert heard[0].words().startswith("still retrying (attempt 2, ") and heard[-1].attempt == 3
    assert heard[0].method == "GetJobStatus" and "restarting" in heard[0].line()


def test_a_polls_backoff_doubles_up_to_the_cap_without_jitter() -> None:
    delays = retry.backoff(0.05, 2.0)
    assert [next(delays) for _ in range(8)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]
