"""The status panel follows the embedded controller's change feed (``widgets.feed``) instead of a
timer, and falls back to polling with back-off where there is no feed (a real Iris)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fray_jupyter.client import FrayClient
from fray_jupyter.client.errors import FrayError
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.widgets import feed
from fray_jupyter.widgets.status import FEED_REFRESH, JobStatusPanel
from fray_jupyter.widgets.usage import REFRESH_S
from tests.controller_harness import ControllerProcess, start_controller, stop_quietly
from tests.scripted_controller import JOB, ScriptedController


class RecordingEvent(threading.Event):
    """The panel's wake-up event, recording the timeout of every wait (and calling ``step`` with
    how many waits came so far, before waiting)."""

    def __init__(self, step: Callable[[int], None] = lambda _: None) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []
        self.step = step

    def wait(self, timeout: float | None = None) -> bool:
        self.timeouts.append(timeout)
        self.step(len(self.timeouts))
        return super().wait(timeout)


def _until(condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.01)


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    process = start_controller(tmp_path_factory.mktemp("feed") / "state", "--slots", "4")
    try:
        yield process
    finally:
        stop_quietly(process)


def test_a_panel_on_the_embedded_controller_refreshes_on_the_feed_and_for_usage_never_on_the_poll(
        controller: ControllerProcess, tmp_path: Path) -> None:
    gate = tmp_path / "go"
    script = f"while [ ! -e {gate} ]; do sleep 0.05; done; echo finished"
    job = JobRequest(name="feed-panel", entrypoint=Entrypoint.from_binary("sh", ["-c", script]),
                     resources=ResourceConfig(cpu=1, ram="128m", disk="1g"))
    with FrayClient(controller.info.url, controller.info.token) as client:
        job_id = client.submit(plan(job, user="alice"))
        panel = JobStatusPanel(client, job_id, start=False, poll_first=0.01, poll_max=0.02)
        waits = RecordingEvent()
        panel._wake = waits
        panel.start()
        _until(lambda: panel.state == "running")
        gate.touch()
        assert panel.join(timeout=60) and panel.state == "succeeded"
        assert "[0] finished" in panel.lines
    # a poller would have waited poll_first / poll_max between looks; this one waited for news, and
    # while the job ran at most REFRESH_S, to read the tasks' usage (which the feed does not announce)
    assert waits.timeouts and set(waits.timeouts) <= {FEED_REFRESH, REFRESH_S} and REFRESH_S in waits.timeouts


class WithoutFeed(ScriptedController):
    """A controller that answers like a real Iris: no change feed."""

    def changes(self, after: int, epoch: str, *, wait: float) -> object:
        raise FrayError("no such service", url="http://iris", method="WaitForChanges", code="unimplemented")


def test_without_a_feed_the_panel_polls_with_back_off_and_still_stops_when_the_job_ends() -> None:
    controller = WithoutFeed()

    def step(waits: int) -> None:
        if waits == 6:
            controller.state, controller.task_states = J.JOB_STATE_SUCCEEDED, [J.TASK_STATE_SUCCEEDED] * 2

    panel = JobStatusPanel(controller, JOB, start=False, poll_first=0.01, poll_max=0.03)  # type: ignore[arg-type]
    waits = RecordingEvent(step)
    panel._wake = waits
    panel.start()
    assert panel.join(timeout=30) and panel.state == "succeeded"
    polls = [round(timeout, 6) for timeout in waits.timeouts if timeout != FEED_REFRESH]  # type: ignore[arg-type]
    assert len(polls) >= 3 and set(polls) <= {0.01, 0.016, 0.0256, 0.03}  # poll_first x BACKOFF up to poll_max
    assert feed.watch(controller, JOB, threading.Event()) is None  # known to have none: never asked again


def test_a_panel_is_woken_by_a_change_anywhere_in_its_tree_and_only_there() -> None:
    """The controller reports a grandchild's change under the grandchild and its parent, not the
    root: the root's panel must still wake; a sibling tree's, or a job whose id merely starts the
    same, must not."""
    hub = feed.Feed(ScriptedController())
    root, other, lookalike = threading.Event(), threading.Event(), threading.Event()
    hub._subscribers.update({root: "/alice/coord", other: "/alice/other", lookalike: "/alice/coord-2"})
    hub._wake({"/alice/coord/step/sub", "/alice/coord/step"})
    assert root.is_set() and not other.is_set() and not lookalike.is_set()
    hub._wake(None)  # a reset wakes everyone
    assert other.is_set() and lookalike.is_set()
