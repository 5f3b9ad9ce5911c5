"""What Iris's own end-to-end tests assert, on the embedded controller and on the genuine Iris (the twin):

* a task over its timeout: ``Execution timeout exceeded`` word for word, with the same exit codes;
* a job whose callable raised: the same exit codes (the job's 0, the task's 1), error and pending
  reason (``Exit code: 1. stderr: <the exception line>``);
* a task asking for ports ``http`` and ``grpc``: two distinct non-zero ports, read with Iris's own
  ``get_job_info()``, both of which it binds;
* tasks asking for no CPU: more of them than the embedded controller has slots run at once (each
  checks in and waits for all the others), on both.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from fray_jupyter.client.client import FrayClient
from fray_jupyter.controller.kernel.exits import EXECUTION_TIMEOUT
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from tests.controller_harness import launch_request

J = job_pb2
USER = "words"
EMBEDDED_SLOTS = 16
"""The differential suite's embedded controller runs with ``--slots 16`` (``conftest.embedded``)."""
BIND_PORTS = """
import os, socket
from iris.cluster.client.job_info import get_job_info
ports = get_job_info().ports
servers = [socket.socket() for _ in range(2)]
for server, name in zip(servers, ("http", "grpc")):
    server.bind((os.environ["IRIS_BIND_HOST"], ports[name]))
    server.listen()
print("bound", ports["http"], ports["grpc"], flush=True)
"""


def _finished(client: FrayClient, job_id: str) -> J.JobStatus:
    client.wait(job_id, timeout=180)
    return client.status(job_id)


def _outcome(client: FrayClient, job_id: str) -> tuple[Any, ...]:
    """What a user reads of a finished one-task job: its state, exit code, error and pending reason,
    and its task's state, exit code, error and attempts."""
    status = _finished(client, job_id)
    (task,) = client.tasks(job_id)
    return (status.state, status.exit_code, status.error, status.pending_reason, task.state, task.exit_code,
            task.error, [(a.state, a.exit_code, a.error) for a in task.attempts])


def test_a_task_over_its_timeout_says_what_iris_says(twin: FrayClient, embedded: FrayClient) -> None:
    seen = []
    for client in (twin, embedded):
        request = launch_request("times-out", "sleep 120", user=USER)
        request.timeout.milliseconds = 1500
        seen.append(_outcome(client, client.submit(request)))
    assert seen[0] == seen[1], seen
    assert seen[0][6] == EXECUTION_TIMEOUT and seen[0][1] == 0


def _raises() -> None:
    raise ValueError("the callable raised")


def test_a_job_whose_callable_raised_says_what_iris_says(twin: FrayClient, embedded: FrayClient) -> None:
    job = JobRequest(name="raises", entrypoint=Entrypoint.from_callable(_raises),
                     resources=ResourceConfig(cpu=1, ram="512m", disk="1g"))
    seen = [_outcome(client, client.submit(plan(job, user=USER).request)) for client in (twin, embedded)]
    assert seen[0] == seen[1], seen
    assert (seen[0][1], seen[0][5], seen[0][6]) == (0, 1, "Exit code: 1. stderr: ValueError: the callable raised")


def test_a_task_binds_the_two_ports_it_asked_for(twin: FrayClient, embedded: FrayClient) -> None:
    for client in (twin, embedded):
        request = launch_request("ports", f"exec {shlex.quote(sys.executable)} -c {shlex.quote(BIND_PORTS)}", user=USER)
        request.ports.extend(["http", "grpc"])
        job_id = client.submit(request)
        status = _finished(client, job_id)
        lines = [entry.data for entry in client.logs(job_id).entries]
        assert status.state == J.JOB_STATE_SUCCEEDED, (client.url, status, lines)
        (bound,) = [line.split()[1:] for line in lines if line.startswith("bound ")]
        http, grpc = map(int, bound)
        assert http > 0 and grpc > 0 and http != grpc, (client.url, lines)


def test_more_cpu_less_tasks_than_slots_run_at_once_on_both(twin: FrayClient, embedded: FrayClient,
                                                            tmp_path: Path) -> None:
    count = EMBEDDED_SLOTS + 4
    for side, client in (("twin", twin), ("embedded", embedded)):
        meeting = tmp_path / side
        meeting.mkdir()
        command = (f'touch "{meeting}/${{IRIS_TASK_ID##*/}}"; '
                   f'while [ "$(ls "{meeting}" | wc -l)" -lt {count} ]; do sleep 0.1; done')
        request = launch_request("no-cpu", command, user=USER, replicas=count,
                                 resources=ResourceConfig(cpu=1, ram="64m", disk="64m"))
        request.resources.cpu_millicores = 0
        request.timeout.milliseconds = 120_000  # a task that never meets the others fails instead of hanging
        status = _finished(client, client.submit(request))
        assert status.state == J.JOB_STATE_SUCCEEDED, (side, status)
        assert len(list(meeting.iterdir())) == count
