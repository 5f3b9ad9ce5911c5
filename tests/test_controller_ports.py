"""Named task ports: each running attempt holds a real free port per name from Iris's task range
(``controller.runtime.ports``), reads it with Iris's own ``get_job_info()`` and binds it; no two running
tasks share one; an attempt's ports are free again once it has ended."""

from __future__ import annotations

import shlex
import socket
import sys

import pytest

from fray_jupyter.controller.runtime.ports import PORT_RANGE, PortAllocator, PortsExhausted
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from tests.controller_harness import (
    TERMINAL,
    ControllerProcess,
    Wire,
    launch_request,
)
from tests.waiting import until

C = controller_pb2.Controller
J = job_pb2
HOLD_PORTS = """
import os, socket, time
from iris.cluster.client.job_info import get_job_info
ports = get_job_info().ports
held = []
for name in ("http", "grpc"):
    server = socket.socket()
    server.bind((os.environ["IRIS_BIND_HOST"], ports[name]))
    server.listen()
    held.append(server)
print("bound", ports["http"], ports["grpc"], flush=True)
time.sleep(600)
"""
"""A task that binds both of its named ports and holds them until it is stopped."""
CONTROLLER_ARGS = ("--slots", "4")  # the module's controller (conftest)


def _bound(wire: Wire, job_id: str, count: int) -> list[tuple[int, int]]:
    """The (http, grpc) ports each of the job's ``count`` tasks said it bound, once all have."""
    def said() -> list[tuple[int, int]] | None:
        response = wire.call("GetTaskLogs", C.GetTaskLogsRequest(id=job_id))
        lines = [line.data for batch in response.task_logs for line in batch.logs if line.data.startswith("bound ")]
        if len(lines) == count:
            return [(int(line.split()[1]), int(line.split()[2])) for line in lines]
        status = wire.status(job_id)
        assert status.state not in TERMINAL, (status, response)
        return None

    return until(said, f"each of {job_id}'s {count} tasks said which ports it bound")


def test_running_tasks_bind_distinct_real_ports_from_iris_s_range(controller: ControllerProcess) -> None:
    wire = controller.wire()
    request = launch_request("ports", f"exec {shlex.quote(sys.executable)} -c {shlex.quote(HOLD_PORTS)}", replicas=3)
    request.ports.extend(["http", "grpc"])
    job_id = wire.launch(request)
    bound = _bound(wire, job_id, 3)
    ports = [port for pair in bound for port in pair]
    assert len(set(ports)) == 6 and all(port in PORT_RANGE for port in ports), bound
    assert all(dict(task.ports) == {} for task in wire.tasks(job_id))  # as Iris's controller: not reported
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=job_id))
    wire.wait(job_id, TERMINAL)


def test_a_job_without_ports_gets_no_port_variable(controller: ControllerProcess) -> None:
    wire = controller.wire()
    job_id = wire.launch(launch_request("no-ports", "env | grep -c '^IRIS_PORT_' || true"))
    assert wire.wait(job_id, TERMINAL).state == J.JOB_STATE_SUCCEEDED
    response = wire.call("GetTaskLogs", C.GetTaskLogsRequest(id=job_id))
    assert [line.data for batch in response.task_logs for line in batch.logs] == ["0"]


def _free_ports(count: int) -> list[int]:
    """``count`` ports nothing listens on now (the kernel's choice: bound, then closed)."""
    sockets = [socket.socket() for _ in range(count)]
    for server in sockets:
        server.bind(("127.0.0.1", 0))
    ports = sorted(server.getsockname()[1] for server in sockets)
    for server in sockets:
        server.close()
    return ports


def test_the_allocator_skips_held_and_bound_ports_and_frees_released_ones() -> None:
    low, middle, high = _free_ports(3)
    with socket.socket() as taken:
        taken.bind(("", low))
        allocator = PortAllocator([low, middle, high])
        reserved = allocator.reserve(["a", "b"])
        assert list(reserved) == ["a", "b"] and set(reserved.values()) == {middle, high}
        with pytest.raises(PortsExhausted, match=rf"no free port in {low}-{high} for the task's port 'c'"):
            allocator.reserve(["c"])
        assert allocator.held == {middle, high}  # a refusal holds nothing more
        allocator.release([middle])
        assert allocator.reserve(["c"]) == {"c": middle}


def test_controllers_sharing_a_machine_do_not_all_start_at_the_lowest_port() -> None:
    """Each allocator searches from a random place of the range, so two controllers (or one and a
    genuine Iris, which takes the lowest) do not hand out the same port before either task binds it."""
    firsts = {port for _ in range(50) for port in PortAllocator(PORT_RANGE).reserve(["http"]).values()}
    assert len(firsts) > 25  # lowest-first would give one port, 50 times


def test_an_attempt_that_finds_no_free_port_fails_with_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("", 0))
        port = taken.getsockname()[1]
        with pytest.raises(PortsExhausted) as refused:
            PortAllocator(range(port, port + 1)).reserve(["http"])
    assert "\n" not in str(refused.value) and "'http'" in str(refused.value)
