"""The endpoint registry (``controller.engine.endpoint_registry``) on the real controller process, over both
transports: ports reach every task, registration renews, replaces and is refused as Iris refuses it,
leases are clamped and lapse, an endpoint goes with its task and with a restart, and every bad
registration is a clear INVALID_ARGUMENT that leaves nothing registered."""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fray_jupyter.actors.lease import EndpointLease
from fray_jupyter.client import FrayClient
from fray_jupyter.controller.engine.endpoint_registry import (
    MAX_LEASE_MS,
    MIN_LEASE_ENV,
    MIN_LEASE_MS,
    granted_lease_ms,
    lease_floor_ms,
)
from fray_jupyter.controller.runtime import peer
from fray_jupyter.controller.runtime.ports import PORT_RANGE
from fray_jupyter.iris.proto import controller_pb2, job_pb2, time_pb2
from tests.controller_harness import (
    ControllerProcess,
    Wire,
    WireError,
    launch_request,
    start_controller,
    stop_quietly,
)
from tests.waiting import until

C = controller_pb2.Controller
J = job_pb2
FLOOR_S = 0.5
CONTROLLER_ARGS = ("--slots", "8")  # the module's controller (conftest), leases as short as FLOOR_S
CONTROLLER_ENV = {MIN_LEASE_ENV: str(FLOOR_S)}
SERVICE = "/alice/svc"
"""A two-task job that keeps running for the whole module."""


@pytest.fixture(scope="module")
def controller(controller: ControllerProcess) -> ControllerProcess:
    """The module's controller (conftest) once ``SERVICE`` runs on it."""
    wire = controller.wire()
    wire.launch(launch_request("svc", "sleep 300", replicas=2))
    wait_running(wire, SERVICE)
    wire.close()
    return controller


@pytest.fixture(params=["connect", "grpc"])
def wire(request: pytest.FixtureRequest, controller: ControllerProcess) -> Iterator[Wire]:
    opened = controller.wire(request.param)
    yield opened
    opened.close()


def wait_running(wire: Wire, job_id: str) -> None:
    """Until every task of the job runs."""
    until(lambda: all(task.state == J.TASK_STATE_RUNNING for task in wire.tasks(job_id)),
          f"every task of {job_id} running")


def register(wire: Wire, name: str, task: str = f"{SERVICE}/0", *, attempt: int = 0, endpoint_id: str = "",
             lease_ms: int | None = None, address: str = "http://127.0.0.1:4000", **metadata: str) -> C.RegisterEndpointResponse:
    request = C.RegisterEndpointRequest(name=name, address=address, task_id=task, attempt_id=attempt,
                                        endpoint_id=endpoint_id, metadata=metadata)
    if lease_ms is not None:
        request.lease_duration.CopyFrom(time_pb2.Duration(milliseconds=lease_ms))
    response: C.RegisterEndpointResponse = wire.call("RegisterEndpoint", request)
    return response


def listed(wire: Wire, prefix: str = "", *, exact: bool = False, task_ids: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(name, task id) of each endpoint listed."""
    response = wire.call("ListEndpoints", C.ListEndpointsRequest(prefix=prefix, exact=exact, task_ids=task_ids))
    return [(endpoint.name, endpoint.task_id) for endpoint in response.endpoints]


def unregister(wire: Wire, endpoint_id: str) -> None:
    wire.call("UnregisterEndpoint", C.UnregisterEndpointRequest(endpoint_id=endpoint_id))


def stored_endpoints(controller: ControllerProcess) -> int:
    """Rows in the store's endpoint table (what a lapse or a task's end must leave behind: none)."""
    with sqlite3.connect(f"file:{controller.state_dir / 'controller.sqlite3'}?mode=ro", uri=True) as db:
        return int(db.execute("SELECT count(*) FROM endpoints").fetchone()[0])


def test_every_task_gets_a_reserved_port_per_name(controller: ControllerProcess) -> None:
    """``IRIS_PORT_<NAME>`` is a port of Iris's task range the attempt holds (``controller.runtime.ports``),
    one per name, for every task."""
    wire = controller.wire()
    request = launch_request("ports", 'echo "ports=$IRIS_PORT_ACTOR,$IRIS_PORT_JAX"', replicas=2)
    request.ports.extend(["actor", "jax"])
    job_id = wire.launch(request)
    wire.wait(job_id, {J.JOB_STATE_SUCCEEDED})
    response = wire.call("GetTaskLogs", C.GetTaskLogsRequest(id=job_id))
    lines = [entry.data.removeprefix("ports=").split(",") for batch in response.task_logs for entry in batch.logs]
    assert len(lines) == 2 and all(len(set(ports)) == 2 for ports in lines), lines
    assert all(int(port) in PORT_RANGE for ports in lines for port in ports), lines


def test_a_registration_is_renewed_by_its_id_and_listed_by_name_prefix_and_task(wire: Wire) -> None:
    first = register(wire, f"{SERVICE}/ctr-0")
    assert first.endpoint_id and first.lease_duration.milliseconds == MAX_LEASE_MS
    assert register(wire, f"{SERVICE}/ctr-0", endpoint_id=first.endpoint_id).endpoint_id == first.endpoint_id
    register(wire, f"{SERVICE}/ctr-1", f"{SERVICE}/1", endpoint_id="ctr-1")
    assert listed(wire, f"{SERVICE}/ctr-") == [(f"{SERVICE}/ctr-0", f"{SERVICE}/0"), (f"{SERVICE}/ctr-1", f"{SERVICE}/1")]
    assert listed(wire, f"{SERVICE}/ctr-1", exact=True) == [(f"{SERVICE}/ctr-1", f"{SERVICE}/1")]
    assert listed(wire, f"{SERVICE}/ctr", exact=True) == []
    assert listed(wire, f"{SERVICE}/CTR-") == []  # names are case-sensitive
    assert listed(wire, f"{SERVICE}/", task_ids=(f"{SERVICE}/1",)) == [(f"{SERVICE}/ctr-1", f"{SERVICE}/1")]
    again = register(wire, f"{SERVICE}/ctr-0", endpoint_id="replacement")  # one registration per task and name
    assert again.endpoint_id == "replacement" and listed(wire, f"{SERVICE}/ctr-0") == [(f"{SERVICE}/ctr-0", f"{SERVICE}/0")]
    for endpoint_id in ("replacement", "ctr-1", "replacement", first.endpoint_id, "never-registered"):
        unregister(wire, endpoint_id)  # idempotent
    assert listed(wire, f"{SERVICE}/ctr-") == []


def test_metadata_and_address_come_back_as_registered(wire: Wire) -> None:
    register(wire, f"{SERVICE}/jax", address="127.0.0.1:8476", endpoint_id="jax", job="svc")  # iris.jax's form
    response = wire.call("ListEndpoints", C.ListEndpointsRequest(prefix=f"{SERVICE}/jax", exact=True))
    (endpoint,) = response.endpoints
    assert (endpoint.address, dict(endpoint.metadata), endpoint.endpoint_id) == ("127.0.0.1:8476", {"job": "svc"}, "jax")
    unregister(wire, "jax")


def test_a_lease_s_new_facts_are_listed_at_once_under_the_same_endpoint(controller: ControllerProcess) -> None:
    """``EndpointLease.update``: what a session host does when it goes idle (its idle-since fact)."""
    with FrayClient(controller.info.url, controller.info.token) as client:
        lease = EndpointLease(client, f"{SERVICE}/host-1", "http://127.0.0.1:4001", f"{SERVICE}/1", 0,
                              {"session": "1", "idle_since_ms": ""}).open()
        try:
            def facts() -> tuple[str, dict[str, str]]:
                (endpoint,) = client.endpoints(f"{SERVICE}/host-1", exact=True)
                return endpoint.endpoint_id, dict(endpoint.metadata)
            assert facts() == (lease.endpoint_id, {"session": "1", "idle_since_ms": ""})
            lease.update({"idle_since_ms": "1700000000000"})
            assert facts() == (lease.endpoint_id, {"session": "1", "idle_since_ms": "1700000000000"})
        finally:
            lease.close()
        assert client.endpoints(f"{SERVICE}/host-1", exact=True) == ()


def test_leases_are_clamped_to_the_floor_and_ten_minutes(wire: Wire) -> None:
    asked = {1: FLOOR_S * 1000, 4000: 4000, 3_600_000: MAX_LEASE_MS}
    granted = {ms: register(wire, f"{SERVICE}/lease", endpoint_id="lease", lease_ms=ms).lease_duration.milliseconds
               for ms in asked}
    assert granted == asked
    unregister(wire, "lease")


def test_iris_s_floor_is_three_minutes_and_its_default_ten() -> None:
    request = C.RegisterEndpointRequest()
    assert granted_lease_ms(request) == MAX_LEASE_MS == 600_000
    request.lease_duration.milliseconds = 1000
    assert granted_lease_ms(request) == MIN_LEASE_MS == 180_000


@pytest.mark.parametrize(("value", "floor"), [("", MIN_LEASE_MS), ("2.5", 2500), ("0", MIN_LEASE_MS),
                                              ("soon", MIN_LEASE_MS), ("1e9", MIN_LEASE_MS), ("nan", MIN_LEASE_MS)])
def test_the_lease_floor_is_lowered_only_by_a_usable_number_of_seconds(value: str, floor: int) -> None:
    assert lease_floor_ms({MIN_LEASE_ENV: value}) == floor


def test_unknown_finished_and_stale_tasks_are_refused_as_iris_refuses_them(wire: Wire,
                                                                           controller: ControllerProcess) -> None:
    done = controller.wire().launch(launch_request("done", "true"))
    controller.wire().wait(done, {J.JOB_STATE_SUCCEEDED})
    refusals = {
        "/alice/nobody/0": ("not_found", "Task /alice/nobody/0 not found"),
        f"{SERVICE}/7": ("not_found", f"Task {SERVICE}/7 not found"),
        f"{done}/0": ("failed_precondition", f"Task {done}/0 is already terminal; endpoint not registered"),
    }
    for task, (code, message) in refusals.items():
        with pytest.raises(WireError) as refused:
            register(wire, f"{SERVICE}/refused", task)
        assert (refused.value.code, refused.value.message) == (code, message)
    with pytest.raises(WireError) as stale:
        register(wire, f"{SERVICE}/refused", attempt=1)
    assert (stale.value.code, stale.value.message) == (
        "failed_precondition", f"Task {SERVICE}/0 attempt 1 is no longer current")
    assert listed(wire, f"{SERVICE}/refused") == []


def test_an_endpoint_goes_with_its_task_and_an_unrenewed_one_when_its_lease_lapses(
        controller: ControllerProcess) -> None:
    wire = controller.wire()
    job_id = wire.launch(launch_request("brief", "sleep 300"))
    wait_running(wire, job_id)
    register(wire, f"{job_id}/actor", f"{job_id}/0", endpoint_id="brief")
    register(wire, f"{SERVICE}/lapsing", endpoint_id="lapsing", lease_ms=1)
    assert listed(wire, f"{job_id}/") == [(f"{job_id}/actor", f"{job_id}/0")]
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=job_id))
    assert listed(wire, f"{job_id}/") == []  # at once: the attempt that registered it ended
    until(lambda: not listed(wire, f"{SERVICE}/lapsing"), "the lease lapses")
    assert wire.status(SERVICE).state == J.JOB_STATE_RUNNING
    until(lambda: stored_endpoints(controller) == 0, "the lapsed and the ended endpoints leave the store")


def test_endpoints_are_stored_and_those_of_tasks_a_restart_ended_are_gone(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = start_controller(state, "--slots", "2")
    wire = first.wire()
    job_id = wire.launch(launch_request("held", "sleep 300"))
    wait_running(wire, job_id)
    register(wire, f"{job_id}/actor", f"{job_id}/0", endpoint_id="held")
    wire.close()
    first.stop(signal.SIGKILL)  # a crash: the row stays in the store
    assert stored_endpoints(first) == 1
    second = start_controller(state, "--slots", "2")
    try:
        wire = second.wire()
        assert listed(wire, f"{job_id}/") == [] and stored_endpoints(second) == 0
        with pytest.raises(WireError) as refused:
            register(wire, f"{job_id}/actor", f"{job_id}/0", endpoint_id="held")
        assert refused.value.code == "failed_precondition"
        wire.close()
    finally:
        stop_quietly(second)


BAD_NAMES = {"": "name is empty", "a\nb": "control characters", "n" * 1025: "over the limit of 1024"}
BAD_ADDRESSES = ["", "127.0.0.1", "ftp://h:1", "http://h", "http://h:0", "http://h:99999", "http://h:1/path",
                 "http://u@h:1", "not an address", "http://h:1?q"]
BAD_TASKS = ["", "/alice", "garbage", f"{SERVICE}/x", "alice/svc/0"]


def test_every_bad_registration_is_refused_naming_its_value_and_nothing_is_registered(wire: Wire) -> None:
    def refused(**fields: object) -> str:
        with pytest.raises(WireError) as error:
            register(wire, **{"name": f"{SERVICE}/hostile", **fields})  # type: ignore[arg-type]
        assert error.value.code == "invalid_argument", error.value
        return error.value.message

    for name, words in BAD_NAMES.items():
        assert words in refused(name=name)
    for address in BAD_ADDRESSES:
        assert f"address {address!r} is not http(s)://host:port or host:port" in refused(address=address)
    for task in BAD_TASKS:
        assert f"task_id {task!r} is not a task id" in refused(task=task)
    many = {f"k{i}": "v" for i in range(65)}
    assert "metadata (65 entries, 250 characters" in refused(**many)
    assert "metadata (1 entries, 20003 characters" in refused(big="x" * 20_000)
    assert listed(wire, f"{SERVICE}/hostile") == []


def test_an_unauthenticated_caller_can_neither_register_nor_unregister_nor_list(wire: Wire) -> None:
    kept = register(wire, f"{SERVICE}/kept", endpoint_id="kept")
    hostile = C.RegisterEndpointRequest(name=f"{SERVICE}/hostile", address="http://127.0.0.1:4000",
                                        task_id=f"{SERVICE}/0")
    for name, request in (("RegisterEndpoint", hostile), ("UnregisterEndpoint", C.UnregisterEndpointRequest(endpoint_id="kept")),
                          ("ListEndpoints", C.ListEndpointsRequest(prefix=SERVICE))):
        with pytest.raises(WireError) as refused:
            wire.call(name, request, token="wrong-token")
        assert refused.value.code == "unauthenticated" and "\n" not in refused.value.message, refused.value
    assert listed(wire, f"{SERVICE}/hostile") == [] and listed(wire, f"{SERVICE}/kept") == [(f"{SERVICE}/kept", f"{SERVICE}/0")]
    unregister(wire, kept.endpoint_id)


@pytest.mark.parametrize("token", [None, "wrong-token", "valid"])
def test_a_call_through_the_actor_proxy_path_is_told_in_one_line_there_is_none(controller: ControllerProcess,
                                                                              token: str | None) -> None:
    """Iris relays ``/proxy/<name>/...`` to the actor; this controller relays nothing, to anyone."""
    register(wire := controller.wire(), f"{SERVICE}/ctr-0", endpoint_id="proxied")
    headers = {"content-type": "application/proto"}
    if token is not None:
        headers["authorization"] = f"Bearer {controller.info.token if token == 'valid' else token}"
    try:
        reply = httpx.post(f"{controller.info.url}/proxy/alice.svc.ctr-0/iris.actor.ActorService/Call",
                           content=b"\x0a\x03add", headers=headers, timeout=30)
    finally:
        unregister(wire, "proxied")
        wire.close()
    assert reply.status_code == 501 and reply.json()["code"] == "unimplemented"
    message = reply.json()["message"]
    assert message.startswith("/proxy/alice.svc.ctr-0 is not served by the embedded fray-jupyter controller: "
                              "it has no actor proxy") and "\n" not in message


def test_a_listener_on_the_any_address_is_told_from_a_loopback_one(tmp_path: Path) -> None:
    table = tmp_path / "tcp"
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    table.write_text(header + "   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 0 1\n"
                     "   1: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000 0 2\n")
    assert peer.listens_on_every_interface(0x1F90, (table,))
    assert not peer.listens_on_every_interface(0x1F91, (table,))
    assert not peer.listens_on_every_interface(0x1F92, (table,))
