"""Integration tests: the real controller process on 127.0.0.1, called over both transports.

One controller (6 slots) serves most tests; the restart and shutdown tests start their own.
"""

from __future__ import annotations

import ipaddress
import signal
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.client import FrayClient
from fray_jupyter.controller.api.methods import METHODS
from fray_jupyter.iris.outputs import read_files
from fray_jupyter.iris.proto import controller_pb2, job_pb2, time_pb2
from fray_jupyter.resources import ResourceConfig
from tests.controller_harness import (
    TERMINAL,
    ControllerProcess,
    Wire,
    WireError,
    launch_request,
    meeting,
    pid_alive,
    start_controller,
    stop_quietly,
)
from tests.waiting import until

C = controller_pb2.Controller
J = job_pb2
SLOTS = 6
CONTROLLER_ARGS = ("--slots", str(SLOTS))  # the module's controller (conftest)


@pytest.fixture(params=["connect-proto", "connect-json", "grpc"])
def wire(request: pytest.FixtureRequest, controller: ControllerProcess) -> Iterator[Wire]:
    transport, _, codec = request.param.partition("-")
    opened = controller.wire(transport, codec or "proto")
    yield opened
    opened.close()


def _task_lines(wire: Wire, job_id: str) -> dict[str, list[str]]:
    response = wire.call("GetTaskLogs", C.GetTaskLogsRequest(id=job_id))
    return {batch.task_id: [entry.data for entry in batch.logs] for batch in response.task_logs}


def test_four_replica_job_runs_four_processes_with_iris_env(wire: Wire) -> None:
    name = f"env-{wire.transport}-{wire.codec}"
    script = ('"$IRIS_PYTHON" -c "from fray_jupyter import task_info; t = task_info(); '
              'print(f\'index={t.task_index} job={t.job_id}\', end=\' \')"; '
              'echo "id=$IRIS_TASK_ID n=$IRIS_NUM_TASKS pid=$$ unbuffered=$PYTHONUNBUFFERED"; test "$PWD" = "$IRIS_WORKDIR"; test -x "$IRIS_PYTHON"; '
              '"$IRIS_PYTHON" -c "import json, os; json.loads(os.environ[\'IRIS_TASK_RESOURCES\'])"')
    job_id = wire.launch(launch_request(name, script, replicas=4))
    assert job_id == f"/alice/{name}"
    final = wire.wait(job_id, TERMINAL)
    assert final.state == J.JOB_STATE_SUCCEEDED, final
    assert (final.task_count, final.completed_count, dict(final.task_state_counts)) == (4, 4, {"succeeded": 4})
    lines = _task_lines(wire, job_id)
    pids = set()
    for index in range(4):
        (line,) = lines[f"{job_id}/{index}"]
        fields = dict(part.split("=", 1) for part in line.split())
        assert fields["index"] == str(index) and fields["id"] == f"{job_id}/{index}:0"
        assert (fields["n"], fields["job"], fields["unbuffered"]) == ("4", job_id, "1")
        pids.add(fields["pid"])
    assert len(pids) == 4
    assert final.submitting_user == "alice" and final.HasField("started_at") and final.HasField("finished_at")


def test_failing_task_retries_then_fails(controller: ControllerProcess) -> None:
    wire = controller.wire()
    job_id = wire.launch(launch_request(
        "retry", "echo attempt $IRIS_TASK_ID; exit 3", max_retries_failure=1, max_task_failures=1))
    final = wire.wait(job_id, TERMINAL)
    assert final.state == J.JOB_STATE_FAILED and final.failure_count == 2 and final.exit_code == 0  # as Iris
    (task,) = wire.tasks(job_id)
    assert [a.state for a in task.attempts] == [J.TASK_STATE_FAILED, J.TASK_STATE_FAILED]
    assert task.state == J.TASK_STATE_FAILED and task.exit_code == 3 and task.error == "Exit code: 3"
    assert _task_lines(wire, job_id)[f"{job_id}/0"] == [f"attempt {job_id}/0:0", f"attempt {job_id}/0:1"]


def test_failure_budget_of_zero_fails_the_job_on_the_first_failed_attempt(controller: ControllerProcess) -> None:
    """Iris's rule: max_task_failures (default 0) counts failed attempts across the job."""
    wire = controller.wire()
    job_id = wire.launch(launch_request("budget", "exit 1", max_retries_failure=3))
    final = wire.wait(job_id, TERMINAL)
    assert final.state == J.JOB_STATE_FAILED and final.failure_count == 1
    assert "max_task_failures" in final.error


def test_tpu_v4_32_is_gang_scheduled_as_four_tasks(controller: ControllerProcess, tmp_path: Path) -> None:
    """The four tasks of the gang run at the same time: each ends only once all four have checked in."""
    wire = controller.wire()
    request = launch_request("tpu", meeting(tmp_path / "gang", 4), resources=ResourceConfig.with_tpu("v4-32"))
    assert request.HasField("coscheduling") and request.replicas == 4
    job_id = wire.launch(request)
    final = wire.wait(job_id, TERMINAL)
    assert final.state == J.JOB_STATE_SUCCEEDED and final.task_count == 4
    assert "emulating v4-32 (4 chips/VM) on this machine's CPU" in final.status_message


def test_terminate_stops_a_running_gang_that_ignores_sigterm(controller: ControllerProcess,
                                                           client: FrayClient) -> None:
    wire = controller.wire("grpc")
    script = "trap '' TERM; echo pid=$$; sleep 60 & wait; sleep 60"
    job_id = wire.launch(launch_request("stubborn", script, resources=ResourceConfig.with_tpu("v4-32")))
    wire.wait(job_id, {J.JOB_STATE_RUNNING})

    def printed() -> list[str] | None:
        lines = [line for lines in _task_lines(wire, job_id).values() for line in lines]
        return lines if len(lines) >= 4 else None

    pids = until(printed, f"each task of {job_id} printed its pid", feed=client)
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=job_id))
    assert wire.status(job_id).state == J.JOB_STATE_KILLED
    process_ids = [int(line.removeprefix("pid=")) for line in pids]
    until(lambda: not any(pid_alive(pid) for pid in process_ids),
          "the task processes end after TerminateJob (SIGKILL follows SIGTERM after the runner's grace)")
    assert {task.state for task in wire.tasks(job_id)} == {J.TASK_STATE_KILLED}


def test_each_attempt_records_an_output_archive_as_iris_does(controller: ControllerProcess,
                                                             client: FrayClient) -> None:
    """What a task writes under $IRIS_OUTPUT_DIR is archived per attempt before the attempt's end is
    recorded: a retried task has one archive per attempt; a job with no files records EMPTY."""
    A = J.TaskOutputArchive
    wire = controller.wire("grpc")
    script = 'mkdir -p "$IRIS_OUTPUT_DIR/d"; echo "$IRIS_TASK_ID" > "$IRIS_OUTPUT_DIR/d/who.txt"; i=${IRIS_TASK_ID##*/}; i=${i%%:*}; exit $i'
    job_id = wire.launch(launch_request("outputs", script, replicas=2, max_retries_failure=1, max_task_failures=5))
    assert wire.wait(job_id, TERMINAL).state == J.JOB_STATE_FAILED
    first, second = wire.tasks(job_id)
    assert [a.output_archive.state for a in first.attempts] == [A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED]
    assert [a.output_archive.state for a in second.attempts] == [A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED] * 2
    for task in (first, second):
        for attempt in task.attempts:
            archive = attempt.output_archive
            path = Path(archive.uri.removeprefix("file://"))
            assert path.is_relative_to(controller.state_dir / "outputs") and path.stat().st_size == archive.size_bytes
            assert attempt.attempt_uid in archive.uri
            assert read_files(path.read_bytes(), {"d/who.txt"}) == {
                "d/who.txt": f"{task.task_id}:{attempt.attempt_id}\n".encode()}
    empty = wire.launch(launch_request("no-outputs", "true"))
    wire.wait(empty, TERMINAL)
    (task,) = wire.tasks(empty)
    assert task.attempts[0].output_archive.state == A.TASK_OUTPUT_ARCHIVE_STATE_EMPTY
    stopped = wire.launch(launch_request("stopped-outputs", 'touch "$IRIS_OUTPUT_DIR/x"; sleep 60'))
    wire.wait(stopped, {J.JOB_STATE_RUNNING})
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=stopped))

    def recorded() -> J.TaskOutputArchive | None:
        archive = wire.tasks(stopped)[0].attempts[0].output_archive
        return archive if archive.state else None

    archive = until(recorded, f"the output archive of {stopped}'s stopped attempt recorded", feed=client)
    assert (archive.state, archive.error) == (A.TASK_OUTPUT_ARCHIVE_STATE_UNAVAILABLE, "cancelled")


def test_impossible_gang_is_unschedulable_with_a_reason(controller: ControllerProcess) -> None:
    wire = controller.wire()
    job_id = wire.launch(launch_request("too-big", "true", resources=ResourceConfig.with_tpu("v4-32", slice_count=4)))
    status = wire.status(job_id)
    assert status.state == J.JOB_STATE_UNSCHEDULABLE
    assert f"has {SLOTS}" in status.pending_reason and "--slots 16" in status.pending_reason


def test_logs_come_back_in_order_by_cursor(controller: ControllerProcess, client: FrayClient) -> None:
    wire = controller.wire("connect", "json")
    job_id = wire.launch(launch_request("chatty", "for i in $(seq 1 40); do echo line-$i; sleep 0.01; done"))
    seen: list[str] = []
    cursor = 0

    def read_on() -> bool:
        """The next page from the cursor; whether the job had ended before it was read."""
        nonlocal cursor
        done = wire.status(job_id).state in TERMINAL
        response = wire.call("GetTaskLogs", C.GetTaskLogsRequest(id=f"{job_id}/0", cursor=cursor))
        seen.extend(entry.data for batch in response.task_logs for entry in batch.logs)
        assert response.cursor >= cursor
        cursor = response.cursor
        return done

    until(read_on, f"{job_id} ends while its log is read page by page", feed=client)
    assert seen == [f"line-{i}" for i in range(1, 41)]
    tail = wire.call("GetTaskLogs", C.GetTaskLogsRequest(id=job_id, tail=True, max_total_lines=3))
    assert [entry.data for entry in tail.task_logs[0].logs] == ["line-38", "line-39", "line-40"]
    assert tail.truncated
    found = wire.call("GetTaskLogs", C.GetTaskLogsRequest(id=job_id, substring="line-2"))
    assert len(found.task_logs[0].logs) == 11


@pytest.mark.parametrize("transport", ["connect", "grpc"])
@pytest.mark.parametrize("token", ["wrong-token", "truncated"])
def test_calls_with_a_wrong_token_are_refused(controller: ControllerProcess, transport: str, token: str) -> None:
    """A wrong token is refused even from the controller's own OS user (who needs none)."""
    wire = controller.wire(transport)
    if token == "truncated":
        token = controller.info.token[:-1]
    for method in METHODS:
        with pytest.raises(WireError) as refused:
            wire.call(method.name, method.request(), token=token)
        assert refused.value.code == "unauthenticated"
        assert refused.value.http_status in (0, 401)
    wire.close()


@pytest.mark.parametrize("transport", ["connect", "grpc"])
def test_the_controllers_own_user_needs_no_token(controller: ControllerProcess, transport: str) -> None:
    """This test process runs as the controller's OS user and calls over loopback: let in without
    a token, as Marin's FrayIrisClient calls a local Iris. (Another user: test_controller_peer_auth.)"""
    wire = controller.wire(transport)
    assert wire.call("ListJobs", C.ListJobsRequest(), token=None).total_count >= 0
    wire.close()


@pytest.mark.parametrize("transport", ["connect", "grpc"])
def test_require_token_refuses_tokenless_calls_even_from_the_same_user(tmp_path: Path, transport: str) -> None:
    strict = start_controller(tmp_path / "strict", "--require-token")
    try:
        wire = strict.wire(transport)
        for method in METHODS:
            with pytest.raises(WireError) as refused:
                wire.call(method.name, method.request(), token=None)
            assert refused.value.code == "unauthenticated" and "authorization" in refused.value.message
        assert wire.call("ListJobs", C.ListJobsRequest()).total_count == 0
        wire.close()
    finally:
        stop_quietly(strict)


@pytest.mark.parametrize("transport", ["connect", "grpc"])
def test_garbage_is_invalid_argument_and_the_server_survives(controller: ControllerProcess, transport: str) -> None:
    wire = controller.wire(transport)
    launch = next(method for method in METHODS if method.name == "LaunchJob")
    send = wire.grpc_raw if transport == "grpc" else wire.connect_raw
    with pytest.raises(WireError) as refused:
        send(launch, b"\xff\x00garbage\x01\x02", controller.info.token)
    assert refused.value.code == "invalid_argument"
    assert wire.call("ListJobs", C.ListJobsRequest()).total_count >= 0
    wire.close()


def test_bad_requests_are_invalid_argument_or_not_found(controller: ControllerProcess) -> None:
    wire = controller.wire()
    malformed, no_replicas = launch_request("ok", "true"), launch_request("ok", "true")
    malformed.name = "no-slash"
    no_replicas.replicas = 0
    cases = {
        "malformed": malformed,
        "replicas": no_replicas,
        "no command": C.LaunchJobRequest(name="/alice/empty", replicas=1),
        "bundle": launch_request("big", "true", bundle_blob=b"0" * (26 * 2**20)),
    }
    for what, request in cases.items():
        with pytest.raises(WireError) as refused:
            wire.launch(request)
        assert refused.value.code == "invalid_argument", what
        assert refused.value.http_status == 400
    with pytest.raises(WireError) as missing:
        wire.status("/alice/never-submitted")
    assert (missing.value.code, missing.value.http_status) == ("not_found", 404)


def test_job_waiting_for_slots_stays_pending_with_a_reason(controller: ControllerProcess) -> None:
    wire = controller.wire()
    blockers = [wire.launch(launch_request(f"block-{i}", "sleep 30")) for i in range(SLOTS)]
    waiting = wire.launch(launch_request("waiting", "true"))
    try:
        status = wire.status(waiting)
        assert status.state == J.JOB_STATE_PENDING
        assert "free task slot" in status.pending_reason and f"of {SLOTS} slots free" in status.pending_reason
    finally:
        for job_id in blockers:
            wire.call("TerminateJob", C.TerminateJobRequest(job_id=job_id))
    assert wire.wait(waiting, TERMINAL).state == J.JOB_STATE_SUCCEEDED


def test_runtime_file_is_private_and_servers_listen_on_loopback_only(controller: ControllerProcess) -> None:
    assert stat.S_IMODE(controller.runtime_file.stat().st_mode) == 0o600
    import psutil
    listening = [c for c in psutil.Process(controller.process.pid).net_connections("inet")
                 if c.status == psutil.CONN_LISTEN]
    assert len(listening) >= 2
    for connection in listening:
        address = ipaddress.ip_address(connection.laddr.ip)
        mapped = getattr(address, "ipv4_mapped", None)
        assert str(mapped or address) == "127.0.0.1", connection
    assert controller.info.url.startswith("http://127.0.0.1:") and controller.info.grpc_url.startswith("grpc://127.0.0.1:")


def test_kill_9_with_twenty_jobs_in_flight_then_restart(tmp_path: Path) -> None:
    first = start_controller(tmp_path / "state", "--slots", "4")
    wire = first.wire()
    requests = [launch_request(f"flight-{i}", "echo pid=$$; sleep 30", existing_job_policy=J.EXISTING_JOB_POLICY_KEEP,
                               scheduling_timeout=time_pb2.Duration(milliseconds=0)) for i in range(20)]
    job_ids = [wire.launch(request) for request in requests]

    def four_running() -> list[str] | None:
        running = [job_id for job_id in job_ids if wire.status(job_id).state == J.JOB_STATE_RUNNING]
        return running if len(running) >= 4 else None

    running = until(four_running, "4 of the 20 jobs running (4 slots)")

    def printed() -> list[int] | None:
        pids = [int(line.removeprefix("pid=")) for job_id in running
                for lines in _task_lines(wire, job_id).values() for line in lines]
        return pids if len(pids) >= len(running) else None

    pids = until(printed, "each running task printed its pid")
    wire.close()
    first.stop(signal.SIGKILL)

    second = start_controller(tmp_path / "state", "--slots", "4", runtime_file=first.runtime_file)
    try:
        wire = second.wire("grpc")
        listed = wire.call("ListJobs", C.ListJobsRequest(query=C.JobQuery(limit=50)))
        assert listed.total_count == 20 and {job.job_id for job in listed.jobs} == set(job_ids)
        for job in listed.jobs:
            if job.job_id in running:
                assert job.state == J.JOB_STATE_WORKER_FAILED
                assert "controller restarted while the task was running" in job.error
            else:
                assert job.state in (J.JOB_STATE_PENDING, J.JOB_STATE_RUNNING)
        assert len(pids) == 4 and not any(pid_alive(pid) for pid in pids)
        for request in requests:
            wire.launch(request)
        assert wire.call("ListJobs", C.ListJobsRequest()).total_count == 20
        for job_id in job_ids:
            wire.call("TerminateJob", C.TerminateJobRequest(job_id=job_id))
        wire.close()
    finally:
        stop_quietly(second)


def test_sigterm_removes_the_runtime_file_and_ends_running_tasks(tmp_path: Path) -> None:
    controller = start_controller(tmp_path / "state", "--slots", "2")
    wire = controller.wire()
    job_id = wire.launch(launch_request("long", "sleep 30"))
    wire.wait(job_id, {J.JOB_STATE_RUNNING})
    wire.close()
    assert controller.stop() == 0
    assert not controller.runtime_file.exists()
    restarted = start_controller(tmp_path / "state", "--slots", "2")
    try:
        status = restarted.wire().status(job_id)
        assert status.state == J.JOB_STATE_WORKER_FAILED and "controller stopped" in status.error
    finally:
        stop_quietly(restarted)


def test_token_from_the_environment_is_used_and_not_passed_to_tasks(tmp_path: Path) -> None:
    controller = start_controller(tmp_path / "state", env={"FRAY_CONTROLLER_TOKEN": "s3cret-token"})
    try:
        assert controller.info.token == "s3cret-token"
        wire = controller.wire()
        job_id = wire.launch(launch_request("leak", 'echo "token=${FRAY_CONTROLLER_TOKEN:-none}"'))
        wire.wait(job_id, TERMINAL)
        assert _task_lines(wire, job_id)[f"{job_id}/0"] == ["token=none"]
        wire.close()
    finally:
        stop_quietly(controller)


def test_gzip_request_bodies_are_accepted(controller: ControllerProcess) -> None:
    wire = controller.wire("connect", "json")
    assert wire.call("ListJobs", C.ListJobsRequest(), gzip_body=True).total_count >= 0
    wire.close()


def test_a_new_state_dir_and_its_database_are_private(tmp_path: Path) -> None:
    controller = start_controller(tmp_path / "new" / "state", runtime_file=tmp_path / "runtime.json")
    stop_quietly(controller)
    assert stat.S_IMODE((tmp_path / "new" / "state").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "new" / "state" / "controller.sqlite3").stat().st_mode) == 0o600


def _bundle(files: dict[str, str]) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_everything_under_the_state_dir_is_private_from_the_first_write(tmp_path: Path) -> None:
    """Whatever umask started it, the controller (and its tasks) create dirs 0700 and files 0600:
    the store and its WAL, bundles, work dirs, unpacked files, and what a task writes."""
    import os

    previous = os.umask(0o022)
    try:
        controller = start_controller(tmp_path / "state")
    finally:
        os.umask(previous)
    try:
        wire = controller.wire()
        job_id = wire.launch(launch_request("private", "mkdir -p out && echo hi > out/result.txt",
                                            bundle_blob=_bundle({"pkg/code.py": "print(1)\n"})))
        assert wire.wait(job_id, TERMINAL).state == J.JOB_STATE_SUCCEEDED
        wire.close()
    finally:
        stop_quietly(controller)
    state = tmp_path / "state"
    modes = {path.relative_to(state).as_posix(): stat.S_IMODE(path.stat().st_mode)
             for path in [state, *state.rglob("*")]}
    assert any(name.endswith("out/result.txt") for name in modes) and any(name.startswith("bundles/") for name in modes)
    loose = {name: oct(mode) for name, mode in modes.items()
             if mode & 0o077 or (state / name).is_dir() and mode != 0o700}
    assert loose == {}


ENV_PROBE = ('echo "STARTER=${STARTER_ONLY-unset} LANG=$LANG HOME=$HOME KEEP=${KEEP_ME-unset} '
             'ALSO=${ALSO_ME-unset} JOB=${JOBVAR-unset}"; echo "PATH=$PATH"; echo "TMPDIR=$TMPDIR"; '
             'test -d "$TMPDIR" && test -w "$TMPDIR" && echo tmp-ok')


def test_tasks_get_a_fixed_base_environment_whoever_started_the_controller(tmp_path: Path) -> None:
    """Tasks never see the starter's variables (a kernel's or the Jupyter server's): a fixed base
    (PATH, HOME, LANG, TMPDIR), then the pass-through list, then the job's env, then IRIS_*."""
    import os
    import pwd
    import sys

    starter = {"STARTER_ONLY": "leak", "LANG": "xx_XX.odd", "HOME": str(tmp_path / "not-home"),
               "PATH": f"/opt/odd:{os.environ['PATH']}", "TMPDIR": str(tmp_path / "odd-tmp"),
               "KEEP_ME": "kept", "ALSO_ME": "also", "FRAY_CONTROLLER_PASS_ENV": "ALSO_ME, NOT_SET"}
    controller = start_controller(tmp_path / "state", "--pass-env", "KEEP_ME", env=starter)
    try:
        wire = controller.wire()
        request = launch_request("env", ENV_PROBE)
        request.environment.env_vars["JOBVAR"] = "from-job"
        job_id = wire.launch(request)
        assert wire.wait(job_id, TERMINAL).state == J.JOB_STATE_SUCCEEDED
        lines = _task_lines(wire, job_id)[f"{job_id}/0"]
        wire.close()
    finally:
        stop_quietly(controller)
    home = pwd.getpwuid(os.getuid()).pw_dir
    assert lines[0] == f"STARTER=unset LANG=C.UTF-8 HOME={home} KEEP=kept ALSO=also JOB=from-job"
    assert lines[1] == f"PATH={Path(sys.executable).parent}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    tmpdir = lines[2].removeprefix("TMPDIR=")
    assert tmpdir.startswith(str(tmp_path / "state" / "work")) and lines[3] == "tmp-ok"


def test_a_second_controller_on_the_same_state_dir_refuses_to_start(tmp_path: Path) -> None:
    import subprocess
    import sys

    controller = start_controller(tmp_path / "state")
    try:
        second = subprocess.run([sys.executable, "-m", "fray_jupyter.controller", "--state-dir", str(tmp_path / "state"),
                                 "--runtime-file", str(tmp_path / "other.json")], capture_output=True, text=True,
                                timeout=60, check=False)
        assert second.returncode == 1 and "another controller is using the state dir" in second.stderr
        assert controller.process.poll() is None and not (tmp_path / "other.json").exists()
    finally:
        stop_quietly(controller)


def test_a_crash_while_a_terminated_task_ignores_sigterm_still_kills_it_on_restart(tmp_path: Path) -> None:
    controller = start_controller(tmp_path / "state")
    wire = controller.wire()
    job_id = wire.launch(launch_request("ignores-term", "trap '' TERM; echo pid=$$; sleep 60 & wait; sleep 60"))
    lines = until(lambda: _task_lines(wire, job_id).get(f"{job_id}/0"), f"{job_id}'s task printed its pid")
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=job_id))
    wire.close()
    controller.stop(signal.SIGKILL)  # inside the SIGTERM grace: the SIGKILL never came
    pid = int(lines[0].removeprefix("pid="))
    assert pid_alive(pid)
    restarted = start_controller(tmp_path / "state", runtime_file=controller.runtime_file)
    try:
        assert restarted.wire().status(job_id).state == J.JOB_STATE_KILLED
        until(lambda: not pid_alive(pid), "the restarted controller kills the leftover task")
    finally:
        stop_quietly(restarted)


TELEMETRY_PROBE = """
import sys, time
from rigging import telemetry
telemetry.configure(endpoint=sys.argv[1], service="probe")
telemetry.counter("probe.count").add(1)
settled = telemetry.flush(timeout=30.0)
status = telemetry.runtime_status()
print(settled, status.rejected_records, status.export_retries)
"""


def test_a_telemetry_batch_is_refused_at_once_as_not_kept(controller: ControllerProcess) -> None:
    """Rigging's exporter (Zephyr's coordinator configures it) posts to the log server's telemetry
    path; the embedded controller keeps none, and says so with an error the exporter does not retry
    (a 5xx it retries held a coordinator's shutdown for its whole flush budget)."""
    import subprocess
    import sys

    import httpx

    from fray_jupyter.iris.wire import TELEMETRY_PATH, proxied

    url = controller.info.url + proxied(TELEMETRY_PATH)
    answer = httpx.post(url, content=b"{}", headers={"authorization": f"Bearer {controller.info.token}"})
    assert answer.status_code == 404
    assert "telemetry is not kept by the embedded fray-jupyter controller" in answer.json()["error"]["message"]
    done = subprocess.run([sys.executable, "-c", TELEMETRY_PROBE, url], capture_output=True, text=True, timeout=60,
                          check=True)
    assert done.stdout.split() == ["True", "1", "0"]  # settled, the batch rejected, never sent again
