"""The few-seconds cache of controller answers that ``client.fit`` and ``client.budget`` read through."""

from __future__ import annotations

import threading

import pytest

from fray_jupyter.client.cache import Expiring


class Reads:
    """A ``read`` that counts its calls and answers the count."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> int:
        self.calls += 1
        return self.calls


def test_a_kept_answer_is_served_until_it_is_too_old() -> None:
    cache: Expiring[str, int] = Expiring()
    read = Reads()
    assert cache.get("a", 60, read) == 1
    assert cache.get("a", 60, read) == 1 and read.calls == 1  # young enough: not read again
    assert cache.get("a", 0, read) == 2  # max_age 0: always read, and the new answer is kept
    assert cache.get("a", 60, read) == 2 and read.calls == 2
    assert cache.get("b", 60, read) == 3  # keys are apart


def test_a_failed_read_keeps_nothing_and_reaches_the_caller() -> None:
    cache: Expiring[str, int] = Expiring()

    def broken() -> int:
        raise RuntimeError("no controller")
    with pytest.raises(RuntimeError, match="no controller"):
        cache.get("a", 60, broken)
    assert cache.get("a", 60, lambda: 7) == 7


def test_one_key_past_the_bound_drops_every_kept_answer() -> None:
    cache: Expiring[int, int] = Expiring(most=2)
    read = Reads()
    cache.get(1, 60, read)
    cache.get(2, 60, read)
    assert cache.get(2, 0, read) == 3  # re-reading a kept key is not one more key
    assert cache.get(1, 60, read) == 1
    cache.get(3, 60, read)  # a third key: 1 and 2 are forgotten
    assert cache.get(1, 60, read) == 5 and read.calls == 5


def test_clear_forgets_everything() -> None:
    cache: Expiring[str, int] = Expiring()
    read = Reads()
    cache.get("a", 60, read)
    cache.clear()
    assert cache.get("a", 60, read) == 2


def test_a_slow_read_holds_up_no_other_key() -> None:
    cache: Expiring[str, str] = Expiring()
    entered, release = threading.Event(), threading.Event()

    def slow() -> str:
        entered.set()
        assert release.wait(10)
        return "slow"
    worker = threading.Thread(target=lambda: cache.get("slow", 60, slow))
    worker.start()
    try:
        assert entered.wait(10)
        assert cache.get("quick", 60, lambda: "quick") == "quick"  # while "slow" is still being read
    finally:
        release.set()
        worker.join(10)
    assert cache.get("slow", 60, lambda: "again") == "slow"
