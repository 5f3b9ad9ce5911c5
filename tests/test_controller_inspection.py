"""ProfileTask, ExecInContainer and GetProcessStatus on the real embedded controller process, over
Connect and gRPC: what they capture, Iris's errors, the owner-only rule and hostile input."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from fray_jupyter.controller.runtime import profiling
from fray_jupyter.iris import arrow_ipc
from fray_jupyter.iris.proto import controller_pb2, finelog_stats_pb2, job_pb2
from tests.controller_harness import (
    ControllerProcess,
    Wire,
    WireError,
    dump_showing,
    launch_request,
    pid_alive,
    thread_dump_request,
)
from tests.waiting import until

C = controller_pb2.Controller
J = job_pb2
BOB_TOKEN = "bob-secret-token"
BUSY = "exec python -c 'import time\ndef busy_loop():\n    while True: sum(range(1000))\nbusy_loop()'"
SLEEPER = ("exec python -c 'import time\ndef stuck_waiting():\n    while True: time.sleep(1)\n"
           "stuck_waiting()'")
CONTROLLER_ENV = {"FRAY_CONTROLLER_USER_TOKENS": f"bob={BOB_TOKEN}"}  # the module's controller (conftest)
pytestmark = pytest.mark.skipif(profiling.tool("py-spy") is None, reason="py-spy is not installed")


@pytest.fixture(params=["connect", "grpc"])
def wire(request: pytest.FixtureRequest, controller: ControllerProcess) -> Iterator[Wire]:
    opened = controller.wire(request.param)
    yield opened
    opened.close()


def running(wire: Wire, name: str, command: str, user: str = "alice") -> str:
    """Launch ``command`` and return its task 0's id once its process reports in the logs."""
    job_id = wire.launch(launch_request(f"{name}-{wire.transport}-{time.monotonic_ns()}", command, user=user))
    wire.wait(job_id, {J.JOB_STATE_RUNNING})
    return f"{job_id}/0"


def test_a_thread_dump_names_the_stuck_frame_and_a_cpu_profile_the_hot_function(wire: Wire) -> None:
    sleeper = running(wire, "sleeper", SLEEPER)
    assert "stuck_waiting" in dump_showing(wire, sleeper, "stuck_waiting")
    busy = running(wire, "busy", BUSY)
    pid = int(re.search(r"Process (\d+):", dump_showing(wire, busy, "busy_loop")).group(1))  # type: ignore[union-attr]
    for fmt, marker in ((J.CpuProfile.RAW, b"busy_loop"), (J.CpuProfile.FLAMEGRAPH, b"<svg"),
                        (J.CpuProfile.SPEEDSCOPE, b"speedscope")):
        answer = wire.call("ProfileTask", J.ProfileTaskRequest(
            target=busy, duration_seconds=1, profile_type=J.ProfileType(cpu=J.CpuProfile(format=fmt))))
        assert answer.error == ""
        assert marker in answer.profile_data and b"busy_loop" in answer.profile_data
    status = wire.call("GetTaskStatus", C.GetTaskStatusRequest(task_id=busy)).task
    assert status.state == J.TASK_STATE_RUNNING
    assert Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T"  # resumed, not stopped
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=busy.rsplit("/", 1)[0]))
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=sleeper.rsplit("/", 1)[0]))


def test_exec_runs_the_argv_in_the_tasks_directory_with_its_environment(wire: Wire) -> None:
    task = running(wire, "exec", SLEEPER)
    answer = wire.call("ExecInContainer", C.ExecInContainerRequest(
        task_id=task, command=["sh", "-c", 'pwd; echo "$IRIS_TASK_ID"; echo oops >&2; exit 3']))
    workdir, task_id = answer.stdout.splitlines()
    assert "/work/job-" in workdir and task_id == f"{task}:0"
    assert (answer.exit_code, answer.stderr, answer.error) == (3, "oops\n", "")
    literal = wire.call("ExecInContainer", C.ExecInContainerRequest(task_id=task, command=["echo", "$HOME; ls"]))
    assert literal.stdout == "$HOME; ls\n"  # an argv, never a shell string
    missing = wire.call("ExecInContainer", C.ExecInContainerRequest(task_id=task, command=["no-such-program-x"]))
    assert "cannot run 'no-such-program-x'" in missing.error
    with pytest.raises(WireError, match="command is required"):
        wire.call("ExecInContainer", C.ExecInContainerRequest(task_id=task))
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=task.rsplit("/", 1)[0]))


def test_a_timed_out_command_is_killed_with_everything_it_started(wire: Wire, tmp_path: Path) -> None:
    task = running(wire, "timeout", SLEEPER)
    pids = tmp_path / f"pids-{wire.transport}"
    answer = wire.call("ExecInContainer", C.ExecInContainerRequest(
        task_id=task, timeout_seconds=1, command=["sh", "-c", f"sleep 300 & echo $! > {pids}; sleep 300"]))
    assert answer.exit_code == -9 and "timed out after 1 s" in answer.error
    child = int(pids.read_text())
    until(lambda: not pid_alive(child), "the timed-out command's child ends with it")
    flood = wire.call("ExecInContainer", C.ExecInContainerRequest(
        task_id=task, command=["python", "-c", "import sys; sys.stdout.write('x' * 5_000_000)"]))
    assert len(flood.stdout) < 1_100_000 and "[output cut: 3951424 more bytes" in flood.stdout
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=task.rsplit("/", 1)[0]))


def test_a_command_with_no_timeout_is_killed_when_its_task_ends(controller: ControllerProcess, wire: Wire,
                                                                 tmp_path: Path) -> None:
    task = running(wire, "forever", SLEEPER)
    child = tmp_path / f"child-{wire.transport}"
    answers: list[object] = []

    def call() -> None:
        other = controller.wire(wire.transport)
        answers.append(other.call("ExecInContainer", C.ExecInContainerRequest(
            task_id=task, timeout_seconds=-1, command=["sh", "-c", f"sleep 600 & echo $! > {child}; wait"])))
        other.close()
    caller = threading.Thread(target=call)
    caller.start()
    started = until(lambda: child.read_text().strip() if child.exists() else None, "the command wrote its child's pid")
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=task.rsplit("/", 1)[0]))
    until(lambda: not caller.is_alive(), "the command's call returns once its task ended")
    assert answers and answers[0].error.startswith("The task ended while the command ran")  # type: ignore[attr-defined]
    until(lambda: not pid_alive(int(started)), "the command's child ends with its task")


def test_a_finished_task_answers_irises_errors(wire: Wire) -> None:
    job_id = wire.launch(launch_request(f"done-{wire.transport}-{time.monotonic_ns()}", "true"))
    wire.wait(job_id, {J.JOB_STATE_SUCCEEDED})
    assert wire.call("ProfileTask", thread_dump_request(f"{job_id}/0")).error == "attempt no longer running"
    answer = wire.call("ExecInContainer", C.ExecInContainerRequest(task_id=f"{job_id}/0", command=["ls"]))
    assert answer.error == f"Task {job_id}/0 is not running (state=TASK_STATE_SUCCEEDED)"
    assert wire.call("ProfileTask", thread_dump_request(f"{job_id}/0:0")).error == "attempt no longer running"


def test_a_task_that_is_not_python(wire: Wire) -> None:
    task = running(wire, "shell", "exec sleep 300")
    dumped = wire.call("ProfileTask", thread_dump_request(task))
    assert dumped.error.startswith("py-spy dump failed") and "python" in dumped.error.lower()
    cpu = wire.call("ProfileTask", J.ProfileTaskRequest(
        target=task, duration_seconds=1, profile_type=J.ProfileType(cpu=J.CpuProfile())))
    assert cpu.error == "" and b"no CPU profile: py-spy record failed" in cpu.profile_data  # Iris's stub
    wire.call("TerminateJob", C.TerminateJobRequest(job_id=task.rsplit("/", 1)[0]))


@pytest.mark.parametrize(("target", "code", "message"), [
    ("/alice/no-such-job/0", "not_found", "Task /alice/no-such-job/0 not found"),
    ("alice/x/0", "invalid_argument", "is not a task id"),
    ("/alice/x/zero", "invalid_argument", "is not a task id"),
])
def test_unknown_and_malformed_targets(wire: Wire, target: str, code: str, message: str) -> None:
    with pytest.raises(WireError) as refused:
        wire.call("ProfileTask", thread_dump_request(target))
    assert refused.value.code == code and message in refused.value.message


def test_hostile_profile_requests_are_refused_in_one_line(wire: Wire) -> None:
    with pytest.raises(WireError, match="profile_type is required"):
        wire.call("ProfileTask", J.ProfileTaskRequest(target="/system/process"))
    bad_format = J.ProfileType(cpu=J.CpuProfile(format=42))  # type: ignore[arg-type]
    with pytest.raises(WireError, match=r"cpu format 42 is not one of: 1 \(flamegraph\), 2 \(speedscope\), 3 \(raw\)"):
        wire.call("ProfileTask", J.ProfileTaskRequest(target="/system/process", profile_type=bad_format))
    with pytest.raises(WireError, match=r"duration_seconds=99999999 is out of range: 0 .* to 3600"):
        wire.call("ProfileTask", J.ProfileTaskRequest(target="/system/process", duration_seconds=99_999_999,
                                                      profile_type=J.ProfileType(cpu=J.CpuProfile())))


def test_only_the_owner_or_the_controllers_user_may_look_inside(wire: Wire, controller: ControllerProcess) -> None:
    task = running(wire, "owned", SLEEPER)
    for name, request in (("ProfileTask", thread_dump_request(task)),
                          ("ExecInContainer", C.ExecInContainerRequest(task_id=task, command=["touch", "pwned"]))):
        with pytest.raises(WireError) as other:
            wire.call(name, request, token=BOB_TOKEN)
        assert other.value.code == "permission_denied"
        assert other.value.message == "User 'bob' cannot access resources owned by 'alice'"
        with pytest.raises(WireError) as nobody:
            wire.call(name, request, token="not-a-token")
        assert nobody.value.code == "unauthenticated"
    assert BOB_TOKEN not in Path(f"/proc/{controller.process.pid}/cmdline").read_text()  # ps never shows it
    assert "refused exec of " + task in controller.log()
    assert "refused a caller at 127.0.0.1:" in controller.log()  # the unauthenticated one
    assert not list(controller.state_dir.glob("work/*/*/pwned"))
    with pytest.raises(WireError, match="cannot profile the controller"):
        wire.call("ProfileTask", thread_dump_request("/system/process"), token=BOB_TOKEN)
    bobs = running(wire, "bobs", SLEEPER, user="bob")
    mine = wire.call("ExecInContainer", C.ExecInContainerRequest(task_id=bobs, command=["echo", "hi"]), token=BOB_TOKEN)
    assert mine.stdout == "hi\n"
    for job in (task, bobs):
        wire.call("TerminateJob", C.TerminateJobRequest(job_id=job.rsplit("/", 1)[0]))


@pytest.mark.parametrize("proxy", ["/proxy/system.log-server", "/proxy/alice.actor"])
def test_nothing_reaches_a_task_through_the_proxy_prefix(controller: ControllerProcess, proxy: str) -> None:
    request = C.ExecInContainerRequest(task_id="/alice/x/0", command=["touch", "pwned"])
    reply = httpx.post(f"{controller.info.url}{proxy}/iris.cluster.ControllerService/ExecInContainer",
                       content=request.SerializeToString(), headers={"content-type": "application/proto"})
    assert (reply.status_code, reply.json()["code"]) == (501, "unimplemented")


def test_the_controller_profiles_itself_and_reports_its_process(wire: Wire, controller: ControllerProcess) -> None:
    answer = wire.call("ProfileTask", thread_dump_request("/system/process"))
    assert answer.error == "" and b"Thread" in answer.profile_data
    kept = wire.call("Query", finelog_stats_pb2.QueryRequest(
        sql="SELECT source, type, format, trigger, profile_data FROM \"iris.profile\" "
            "WHERE source = '/system/controller' ORDER BY captured_at DESC LIMIT 1"))
    (row,) = arrow_ipc.rows(arrow_ipc.read(kept.arrow_ipc))
    assert (row["type"], row["format"], row["trigger"]) == ("thread", "raw", "on_demand")
    assert b"Thread" in row["profile_data"]  # each capture is kept in iris.profile, Iris's schema
    status = wire.call("GetProcessStatus", J.GetProcessStatusRequest()).process_info
    assert status.pid == controller.process.pid and status.thread_count >= 1 and status.memory_rss_bytes > 0
    assert status.python_version and status.cpu_count == os.cpu_count()
