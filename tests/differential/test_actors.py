"""Fray's actors through Marin's own ``FrayIrisClient``, on the embedded controller and on the genuine
Iris twin: the same scenario on each, the same results and errors, or a difference listed in
``differences.ACTOR_DIFFERENCES`` (asserted to still occur). The calls go task to task (and, from this
test process, to the tasks' loopback addresses), as on Iris; the controllers only register and list
the endpoints."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import cloudpickle
import pytest

from fray_jupyter.client.client import FrayClient
from fray_jupyter.iris.proto import job_pb2 as J
from tests.differential import actor_classes
from tests.differential.conftest import LEASE_FLOOR_S
from tests.differential.differences import ACTOR_DIFFERENCES
from tests.waiting import until

pytest.importorskip("fray.iris_backend")
from fray.iris_backend import FrayIrisClient
from fray.types import ActorConfig, Entrypoint, JobRequest, JobStatus
from iris.rpc import controller_pb2 as iris_controller
from iris.rpc import time_pb2 as iris_time
from iris.rpc.controller_connect import EndpointServiceClientSync

cloudpickle.register_pickle_by_value(actor_classes)
IC = iris_controller.Controller
SMALL = actor_classes.SMALL
MEET_S = 30.0
"""How long calls that should overlap wait for each other (only a failing run waits this long)."""
ALONE_S = 1.0
"""How long a call that cannot overlap (max_concurrency 1) waits before going on alone."""


@dataclass
class Side:
    """One controller under test: its name, Marin's client of it, our client, and its endpoint service."""

    name: str
    marin: FrayIrisClient
    ours: FrayClient
    endpoints: EndpointServiceClientSync

    def listed(self, prefix: str) -> list[str]:
        """Names of the endpoints listed under ``prefix``."""
        return sorted(e.name for e in self.endpoints.list_endpoints(IC.ListEndpointsRequest(prefix=prefix)).endpoints)


@pytest.fixture(params=["embedded", "twin"], scope="module")
def side(request: pytest.FixtureRequest) -> Iterator[Side]:
    ours: FrayClient = request.getfixturevalue(request.param)
    marin = FrayIrisClient(ours.url)
    endpoints = EndpointServiceClientSync(ours.url, timeout_ms=30_000)
    try:
        yield Side(request.param, marin, ours, endpoints)
    finally:
        endpoints.close()
        marin.shutdown(wait=False)


def expected(side: Side, scenario: str, aspect: str, same: list[str], name: str) -> list[str]:
    """What ``side`` must show: ``same`` unless a difference is listed (``{name}`` filled in)."""
    listed = ACTOR_DIFFERENCES.get((scenario, aspect))
    return [item.format(name=name) for item in getattr(listed, side.name)] if listed is not None else same


@pytest.mark.parametrize("limit", [1, 4])
def test_a_group_of_four_answers_every_call_within_its_concurrency_limit(side: Side, limit: int) -> None:
    group = side.marin.create_actor_group(actor_classes.Counter, name=f"actors-ctr{limit}", count=4, resources=SMALL,
                                          actor_config=ActorConfig(max_concurrency=limit))
    handles = group.wait_ready(timeout=300)
    assert sorted(h.whoami.remote().result() for h in handles) == [0, 1, 2, 3]
    assert [h.add.remote(2).result() for h in handles] == [2, 2, 2, 2]
    target = handles[0]
    wait_s = MEET_S if limit == 4 else ALONE_S
    with ThreadPoolExecutor(4) as pool:  # four overlapping calls: they meet unless the limit serializes them
        met = list(pool.map(lambda _: target.meet.remote(4, wait_s).result(), range(4)))
    if limit == 4:
        assert met == [True] * 4 and target.peak_overlap.remote().result() == 4
    else:
        assert met == [False] * 4 and target.peak_overlap.remote().result() == 1
    prefix = f"{group._job_id}/actors-ctr{limit}-"
    assert side.listed(prefix) == [f"{prefix}{i}" for i in range(4)]
    if side.name == "embedded":  # _host_actor binds 0.0.0.0: the embedded controller warns once per job
        warnings = side.ours.logs(str(group._job_id), substring="listens on every network interface").entries
        assert len(warnings) == 1 and warnings[0].data.startswith("[fray controller] warning: http://127.0.0.1:")
    group.shutdown()
    until(lambda: group.is_done(), "the group's job ends")
    assert side.listed(prefix) == []


def test_a_handle_passed_into_a_job_is_called_from_its_task(side: Side) -> None:
    handle = side.marin.create_actor(actor_classes.Counter, name="actors-shared", resources=SMALL)
    handle.add.remote(1).result()
    job = side.marin.submit(JobRequest(name="actors-caller", resources=SMALL,
                                       entrypoint=Entrypoint.from_callable(actor_classes.add_through, args=(handle, 5))))
    assert job.wait(timeout=300, raise_on_failure=False) == JobStatus.SUCCEEDED, job.logs()
    until(lambda: "the actor's total is now 6" in job.logs(), "the caller's line in its log")  # Iris flushes in ~1 s
    assert handle.add.remote(0).result() == 6


def test_an_actor_method_s_exception_reaches_its_caller_and_the_actor_lives_on(side: Side) -> None:
    handle = side.marin.create_actor(actor_classes.Counter, name="actors-raiser", resources=SMALL)
    with pytest.raises(ValueError, match="^boom 42$"):
        handle.fail.remote("boom 42").result()
    assert handle.add.remote(3).result() == 3


def test_an_actor_task_killed_mid_call_fails_the_call_and_its_job(side: Side) -> None:
    group = side.marin.create_actor_group(actor_classes.Counter, name="actors-doomed", count=1, resources=SMALL)
    (handle,) = group.wait_ready(timeout=300)
    handle.add.remote(1).result()
    name = f"{group._job_id}/actors-doomed-0"
    (endpoint,) = side.endpoints.list_endpoints(IC.ListEndpointsRequest(prefix=name, exact=True)).endpoints
    from iris.actor.client import ActorClient
    from iris.actor.resolver import FixedResolver

    once = ActorClient(FixedResolver({name: endpoint.address}), name, max_call_attempts=1)
    with pytest.raises(Exception) as raised:
        once.die()
    assert type(raised.value).__name__ == "ConnectError" and raised.value.code.name == "UNAVAILABLE", raised.value
    until(lambda: group.is_done(), "the killed actor's job ends")
    assert side.ours.status(str(group._job_id)).state == J.JOB_STATE_FAILED
    listed = side.listed(name)
    assert listed == expected(side, "killed mid-call", "listed after the task died", [], name), listed


def test_an_endpoint_whose_lease_is_not_renewed_lapses_while_its_task_runs(side: Side) -> None:
    job = side.marin.submit(JobRequest(name="actors-lease", resources=SMALL,
                                       entrypoint=Entrypoint.from_binary("sleep", ["300"])))
    job_id = str(job.job_id)
    task = until(lambda: next((t for t in side.ours.tasks(job_id) if t.state == J.TASK_STATE_RUNNING), None), "the task runs")
    attempt = task.attempts[-1].attempt_id if task.attempts else 0
    name = f"{job_id}/lapsing"
    request = IC.RegisterEndpointRequest(name=name, address="http://127.0.0.1:9", task_id=task.task_id,
                                         attempt_id=attempt, endpoint_id=f"lapse-{side.name}",
                                         lease_duration=iris_time.Duration(milliseconds=1))
    granted = side.endpoints.register_endpoint(request).lease_duration.milliseconds
    assert granted == LEASE_FLOOR_S * 1000
    assert side.listed(name) == [name]
    until(lambda: not side.listed(name), "the unrenewed lease lapses")
    assert side.ours.status(job_id).state == J.JOB_STATE_RUNNING  # only the registration lapsed
    side.endpoints.register_endpoint(request)  # a renewal after the lapse registers it again
    assert side.listed(name) == [name]
    side.endpoints.unregister_endpoint(IC.UnregisterEndpointRequest(endpoint_id=request.endpoint_id))
    side.endpoints.unregister_endpoint(IC.UnregisterEndpointRequest(endpoint_id=request.endpoint_id))
    assert side.listed(name) == []
    job.terminate()


def test_a_coordinator_job_s_children_call_it_back(side: Side) -> None:
    job = side.marin.submit(JobRequest(name="actors-coordinator", resources=SMALL,
                                       entrypoint=Entrypoint.from_callable(actor_classes.coordinate, args=(2,))))
    assert job.wait(timeout=600, raise_on_failure=False) == JobStatus.SUCCEEDED, job.logs()
    until(lambda: "coordinator heard [0, 1]" in job.logs(), "the coordinator's line in its log")  # Iris flushes in ~1 s
    children = [c.job_id for c in side.ours.children(str(job.job_id))]
    assert sorted(children) == [f"{job.job_id}/child-{i}" for i in range(2)]
