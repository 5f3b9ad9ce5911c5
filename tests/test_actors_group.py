"""Actor groups end to end through ``fray_client()``: on the genuine Iris twin (a real endpoint
registry, real task processes) and on the embedded controller (skipped until it serves
``EndpointService.RegisterEndpoint``). A group of 4 with ``max_concurrency`` 1, calls from the
notebook, through the controller's actor proxy and from a child job given the handle; a raising
method; a Marin handle calling our actor; a member killed mid-call; endpoints gone with the group."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from fray_jupyter import submit
from fray_jupyter.actors.errors import unavailable_type
from fray_jupyter.actors.group import ActorGroup
from fray_jupyter.actors.handle import ActorHandle
from fray_jupyter.actors.resolver import RegistryResolver
from fray_jupyter.client import FrayClient
from fray_jupyter.client.clusters import marin_unavailable
from fray_jupyter.fray_protocol import FrayProtocolClient
from tests.controller_harness import ControllerProcess, start_controller, stop_quietly
from tests.real_iris import real_iris_controller
from tests.waiting import until

needs_marin = pytest.mark.skipif(marin_unavailable() is not None, reason=str(marin_unavailable()))
USER = "actor-test"
SMALL: dict[str, Any] = {"cpu": 0.5, "ram": "256m", "disk": "1g"}


class Counter:
    """A group member: counts, tells its index, raises, and records how many calls overlap."""

    def __init__(self, start: int = 0) -> None:
        from fray.actor import current_actor

        self.index = current_actor().index
        self.total = start
        self.active = 0
        self.most = 0
        self.lock = threading.Lock()

    def add(self, k: int = 1) -> tuple[int, int]:
        self.total += k
        return self.index, self.total

    def boom(self) -> None:
        raise ValueError(f"member {self.index} refuses")

    def hold(self, seconds: float) -> int:
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)
        time.sleep(seconds)  # holds the method so that calls allowed to overlap would
        with self.lock:
            self.active -= 1
        return self.most

    def busy(self) -> int:
        return self.active


def _call_from_a_job(handle: ActorHandle) -> tuple[int, int]:
    return handle.add(10)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrayClient]:
    with real_iris_controller(tmp_path_factory.mktemp("twin")) as url, FrayClient(url) as client:
        yield client


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrayClient]:
    # tasks import fray_jupyter.actors as this test process does (a worktree's PYTHONPATH included)
    controller: ControllerProcess = start_controller(tmp_path_factory.mktemp("embedded"), "--slots", "8",
                                                     "--pass-env", "PYTHONPATH")
    try:
        with FrayClient(controller.info.url, controller.info.token) as client:
            yield client
    finally:
        stop_quietly(controller)


@pytest.fixture(params=["twin", "embedded"])
def client(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> FrayProtocolClient:
    monkeypatch.setenv("IRIS_USER", USER)
    return FrayProtocolClient(request.getfixturevalue(request.param), user=USER)


def _group(client: FrayProtocolClient, count: int, max_concurrency: int) -> ActorGroup:
    from fray.types import ActorConfig, ResourceConfig

    return client.create_actor_group(Counter, 5, name=f"ctr-{uuid.uuid4().hex[:6]}", count=count,
                                     resources=ResourceConfig(**SMALL),
                                     actor_config=ActorConfig(max_concurrency=max_concurrency))


@needs_marin
def test_a_group_of_four_answers_holds_its_limit_and_its_endpoints_go_with_it(
        client: FrayProtocolClient, capsys: pytest.CaptureFixture[str]) -> None:
    group = _group(client, 4, 1)
    handles = group.wait_ready(timeout=300)
    assert group.ready_count == 4 and group.discover_new() == []
    # in the order they were found, as Marin's group returns them: one per member, each its own name
    assert sorted(h.endpoint_name for h in handles) == [f"{group.job_id}/{group.name}-{i}" for i in range(4)]
    assert sorted(h.add.remote(1).result(timeout=60) for h in handles) == [(i, 6) for i in range(4)]
    assert "4/4 ready" in repr(group) and repr(handles[0]).startswith(f"ActorHandle({handles[0].endpoint_name!r}, at http")
    member = sorted(handles, key=lambda h: h.endpoint_name)  # member i (task i), by its name

    from IPython.testing import globalipapp

    shell = globalipapp.start_ipython() or globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "fray_jupyter.magics")
    capsys.readouterr()
    shell.run_line_magic("fray", f"actors {group.job_id} --controller {client.client.url}")
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].split() == ["NAME", "ADDRESS", "TASK"]
    assert [row.split()[0::2] for row in listed[1:]] == [[f"{group.job_id}/{group.name}-{i}", f"{group.job_id}/{i}"]
                                                          for i in range(4)]  # by name: member i is task i

    futures = [member[0].hold.remote(0.05) for _ in range(3)]
    assert [f.result(timeout=60) for f in futures] == [1, 1, 1]  # max_concurrency 1: never two at once

    with pytest.raises(ValueError, match="member 2 refuses") as caught:
        member[2].boom()
    assert "Remote traceback (actor " in caught.value.__notes__[0] and "in boom" in caught.value.__notes__[0]

    from fray_jupyter.resources import ResourceConfig

    child = submit(_call_from_a_job, member[1], client=client.client, resources=ResourceConfig(**SMALL))
    assert child.result(timeout=300) == (1, 16)  # the handle resolved inside the job's task

    if client.client.cluster_profile() is None:  # Iris's own controller: its actor proxy relays the call
        through = ActorHandle(member[3].endpoint_name, RegistryResolver(client.client, proxy=True))
        assert through.add(100) == (3, 106)
        assert "/proxy/" in repr(through)

    group.shutdown()
    assert group.is_done()
    until(lambda: group.endpoints() == [], "the group's endpoints gone")


@needs_marin
def test_a_member_killed_mid_call_fails_its_caller_at_once(client: FrayProtocolClient) -> None:
    group = _group(client, 1, 2)
    (handle,) = group.wait_ready(timeout=300)
    pending = handle.hold.remote(600)
    until(lambda: handle.busy() == 1, "the member busy with the call")
    group.shutdown()
    with pytest.raises(unavailable_type(), match=f"actor {handle.endpoint_name}: "):
        pending.result(timeout=120)
    with pytest.raises(unavailable_type()):
        handle.add()


@needs_marin
def test_marin_s_handle_calls_our_actor(twin: FrayClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from fray.iris_backend import IrisActorHandle
    from iris.client import IrisClient
    from iris.cluster.types import JobName

    monkeypatch.setenv("IRIS_USER", USER)
    group = _group(FrayProtocolClient(twin, user=USER), 1, 1)
    (ours,) = group.wait_ready(timeout=300)
    iris = IrisClient.remote(twin.url)
    try:
        theirs = IrisActorHandle(ours.endpoint_name, resolver=iris.resolver_for_job(JobName.from_string(group.job_id)))
        assert theirs.add(2) == (0, 7) and theirs.add.submit(1).result(timeout=60) == (0, 8)
    finally:
        group.shutdown()
        iris.shutdown()


def test_a_call_to_a_missing_actor_says_so_at_once(client: FrayProtocolClient) -> None:
    missing = ActorHandle(f"/{USER}/no-such-job/ctr-0", RegistryResolver(client.client))
    with pytest.raises(unavailable_type(), match=f"actor /{USER}/no-such-job/ctr-0: no endpoint by this name in "
                                                 f"the endpoint registry of {client.client.url}"):
        missing.add()


@pytest.mark.parametrize("waited", [0.0, 0.5, 3.0, 19.0, 600.0])
def test_a_wait_looks_again_within_a_tenth_of_its_own_time(waited: float) -> None:
    from fray_jupyter.actors.group import POLL_MAX, POLL_SOON, poll_delay

    delay, seen = 0.05, []
    for _ in range(12):
        delay = poll_delay(delay, waited)
        seen.append(delay)
    assert seen[0] == min(0.1, max(POLL_SOON, waited / 10))  # doubles from the first pause
    assert max(seen) == min(max(POLL_SOON, waited / 10), POLL_MAX)  # a tenth of the wait, within its bounds
