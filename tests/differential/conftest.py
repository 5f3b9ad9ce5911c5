"""The two controllers of the differential suite, package-scoped (a worker starts them with its first
module of the suite and stops them when it goes on to other modules; ``tests/work_units.py`` hands the
suite's modules out first, so that happens once per worker): a genuine Iris
local cluster (the twin) and the embedded controller, both with the built-in cluster profile, and both
granting endpoint leases as short as ``LEASE_FLOOR_S`` (``$FRAY_MIN_ENDPOINT_LEASE_S``: Iris's floor is
3 minutes; only a registration asking for less is affected). The twin reclaims a slice ``TWIN_IDLE_S``
after it goes idle, so a module that scaled slices up leaves it at rest (``wait_at_rest``) soon, and
looks for tasks past their execution timeout every ``TWIN_TIMEOUT_SCAN_S`` (Iris: once a minute)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, TypeVar

import pytest

from fray_jupyter.client.client import FrayClient
from fray_jupyter.cluster.profile import load_profile
from fray_jupyter.controller import iris_local
from fray_jupyter.controller.engine.endpoint_registry import MIN_LEASE_ENV
from fray_jupyter.iris.placement_workers import warm_workers
from tests.controller_harness import start_controller, stop_quietly
from tests.waiting import until

WARM_TIMEOUT = 120.0
REST_TIMEOUT = 180.0
LEASE_FLOOR_S = 1.0
TWIN_IDLE_S = 10.0
"""Four times the time the twin takes to bring a slice up; a test that reads where a job ran does so
as the job ends (``tests.twin.settle``'s ``on_decided``), before its slice is reclaimed."""
TWIN_TIMEOUT_SCAN_S = 1.0
Side = Literal["twin", "embedded"]
T = TypeVar("T")


def _wait_for_warm_slices(client: FrayClient) -> None:
    """Block until every group's warm slices (``buffer_slices``) are ready: a gang that only warm workers
    can hold must find them up, or its first pending reason would read as 'never'."""
    wanted = {g.name: min(g.buffer_slices, g.max_slices) for g in load_profile().groups}

    def warm() -> bool:
        ready = {g.name: g.slice_state_counts["ready"] for g in client.autoscaler_status().status.groups}
        workers = client.workers().workers
        return all(ready.get(name, 0) >= count for name, count in wanted.items()) and all(w.healthy for w in workers)

    until(warm, "every group's warm slices ready", hang_guard=WARM_TIMEOUT)


def wait_at_rest(twin: FrayClient) -> None:
    """Block until the twin lists only its warm workers (slices earlier jobs scaled up are reclaimed
    once idle): the state every module expects to find it in and leaves it in."""
    warm = len(warm_workers(load_profile()))
    until(lambda: len(twin.workers().workers) <= warm, "the twin at rest (its warm workers only)",
          hang_guard=REST_TIMEOUT)


def on_both(work: Callable[[FrayClient, Side], T], twin: FrayClient, embedded: FrayClient) -> tuple[T, T]:
    """``work(client, side)`` on the twin and on the embedded controller at once; (the twin's result, the
    embedded's). Two controllers: neither run sees the other, so running them side by side changes
    nothing either finds and halves the wait."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        on_twin, on_embedded = pool.submit(work, twin, "twin"), pool.submit(work, embedded, "embedded")
        return on_twin.result(), on_embedded.result()


@pytest.fixture(scope="package")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrayClient]:
    """A genuine Iris local cluster with the built-in profile, its warm slices up."""
    if iris_local.unavailable_reason() is not None:
        pytest.skip(str(iris_local.unavailable_reason()))
    with contextlib.ExitStack() as stack:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv(MIN_LEASE_ENV, str(LEASE_FLOOR_S))  # read by the twin's process as it starts
            url = stack.enter_context(iris_local.iris_local_cluster(tmp_path_factory.mktemp("twin"),
                                                                    idle_seconds=TWIN_IDLE_S,
                                                                    timeout_scan_seconds=TWIN_TIMEOUT_SCAN_S))
        client = stack.enter_context(FrayClient(url))
        _wait_for_warm_slices(client)
        yield client


@pytest.fixture(scope="package")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrayClient]:
    """The embedded controller with the same (built-in) profile."""
    root = tmp_path_factory.mktemp("embedded")
    controller = start_controller(root / "state", "--cluster-config", "default", "--slots", "16",
                                  env={MIN_LEASE_ENV: str(LEASE_FLOOR_S)})
    try:
        with FrayClient(controller.info.url, controller.info.token) as client:
            yield client
    finally:
        stop_quietly(controller)
