"""The change feed's rules: revisions, the kept history, resets, waking waiters, and one clear
line for a bad request."""

from __future__ import annotations

import asyncio

import pytest

from fray_jupyter.controller.transport import changes
from fray_jupyter.controller.transport.changes import ChangeFeed, parse_wait_request


def test_each_change_bumps_the_revision_and_names_the_job_once() -> None:
    feed = ChangeFeed()
    for job_id in ("/a/x", "/a/y", "/a/x"):
        feed.touch(job_id)
    assert feed.since(0, feed.epoch) == {"epoch": feed.epoch, "revision": 3, "jobIds": ["/a/y", "/a/x"], "reset": False}
    assert feed.since(2, feed.epoch)["jobIds"] == ["/a/x"]
    assert feed.since(3, feed.epoch)["jobIds"] == []


def test_a_reader_from_another_epoch_or_beyond_the_history_must_reread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(changes, "HISTORY", 2)
    feed = ChangeFeed()
    for index in range(4):
        feed.touch(f"/a/{index}")
    assert feed.since(3, feed.epoch) == {"epoch": feed.epoch, "revision": 4, "jobIds": ["/a/3"], "reset": False}
    assert feed.since(1, feed.epoch)["reset"]  # changes 1-2 were forgotten
    assert feed.since(4, "old-epoch")["reset"] and feed.since(9, feed.epoch)["reset"]


def test_a_waiter_wakes_on_the_next_change_and_times_out_otherwise() -> None:
    async def scenario() -> tuple[dict[str, object], dict[str, object]]:
        feed = ChangeFeed()
        asyncio.get_running_loop().call_later(0.05, feed.touch, "/a/x")
        woken = await feed.wait(0, feed.epoch, 5)  # woken by the change: a timeout answers no job ids
        idle = await feed.wait(1, feed.epoch, 0.05)
        return woken, idle

    woken, idle = asyncio.run(scenario())
    assert woken["jobIds"] == ["/a/x"]
    assert idle["jobIds"] == [] and idle["revision"] == 1


@pytest.mark.parametrize("body, message", [
    ({"after": -1}, "after must be a revision"),
    ({"after": "x"}, "after must be a revision"),
    ({"epoch": 3}, "epoch must be a string"),
    ({"timeoutMs": "soon"}, "timeoutMs must be a number"),
])
def test_a_bad_request_names_the_field(body: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_wait_request(body)
    assert parse_wait_request({"after": "12", "epoch": "e", "timeoutMs": 1500}) == (12, "e", 1.5)


def test_release_answers_every_waiting_long_poll_at_once_with_no_changes() -> None:
    """A stopping controller must not wait out open long polls (up to ``MAX_WAIT_S``)."""
    async def main() -> list[dict[str, object]]:
        feed = ChangeFeed()
        waiters = [asyncio.ensure_future(feed.wait(0, feed.epoch, changes.MAX_WAIT_S)) for _ in range(2)]
        await asyncio.sleep(0)  # both are waiting (no time passes)
        feed.release()
        return list(await asyncio.wait_for(asyncio.gather(*waiters), 5))

    answers = asyncio.run(main())
    assert [answer["jobIds"] for answer in answers] == [[], []] and not any(a["reset"] for a in answers)
