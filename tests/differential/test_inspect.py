"""Looking inside running tasks, on the genuine twin and on the embedded controller: the same targets
(a busy loop, a sleeper, a finished task, a task that is not Python, an unknown task) give profiles
naming the same hot function and stuck frame, exec output that agrees and the same errors; where they
differ, each side's answer is the one ``differences.INSPECT_DIFFERENCES`` lists."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import FrayError
from fray_jupyter.client.inspection import InspectionFailed
from fray_jupyter.controller.runtime import profiling
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.environment import EnvironmentConfig
from tests.differential.differences import INSPECT_DIFFERENCES
from tests.waiting import until

BUSY = "def busy_loop():\n    while True: sum(range(1000))\nbusy_loop()\n"
SLEEPER = "import time\ndef stuck_waiting():\n    while True: time.sleep(1)\nstuck_waiting()\n"
STUCK = "stuck_waiting (<string>:3)"
"""The sleeper's stuck frame, as a thread dump prints it."""
pytestmark = pytest.mark.skipif(profiling.tool("py-spy") is None, reason="py-spy is not installed")


@pytest.fixture(params=["embedded", "twin"])
def side(request: pytest.FixtureRequest) -> tuple[str, FrayClient]:
    return request.param, request.getfixturevalue(request.param)


def launch(client: FrayClient, name: str, argv: list[str], workspace: Path) -> str:
    job = JobRequest(name=f"{name}-{time.monotonic_ns()}", entrypoint=Entrypoint.from_binary(argv[0], argv[1:]),
                     resources=ResourceConfig(cpu=1, ram="512m", disk="1g"),
                     environment=EnvironmentConfig(workspace=str(workspace), setup_scripts=[]))
    return client.submit(plan(job, user="diff"))


def dump(client: FrayClient, task: str) -> str:
    try:
        return client.profile(task, "threads").text()
    except InspectionFailed as error:
        return f"error: {error.detail}"
    except FrayError as error:  # not yet placed: FAILED_PRECONDITION on both
        assert error.code == "failed_precondition" and "not yet assigned to a worker" in error.detail, error
        return "not yet assigned"


def running(client: FrayClient, task: str, ready: str) -> str:
    """Thread dumps of ``task`` until one is no longer 'not running yet'; the one containing ``ready``."""
    def shown() -> str | None:
        seen = dump(client, task)
        return seen if ready in seen else None

    return until(shown, f"a thread dump of {task} shows {ready!r}")


def python_task(client: FrayClient, name: str, script: str, frame: str,
                workspace: Path) -> Iterator[tuple[str, str]]:
    """A running ``python -c script`` task and the first thread dump with ``frame`` in a stack; cancelled afterwards.

    ``frame`` is a stack line (``name (<string>:line)``), never a bare name: the twin starts a task through a
    ``python -c`` launcher whose command line, printed at the top of its dump, holds the whole script; until it
    execs the task a bare name matches there, and a dump taken as it execs fails ("Failed to find python
    version")."""
    job_id = launch(client, name, ["python", "-c", script], workspace)
    seen = running(client, f"{job_id}/0", frame)
    yield f"{job_id}/0", seen
    client.terminate(job_id)


def test_the_stuck_frame_and_the_hot_function_are_named_on_both(side: tuple[str, FrayClient],
                                                                tmp_path: Path) -> None:
    _, client = side
    for _, seen in python_task(client, "sleeper", SLEEPER, STUCK, tmp_path):
        assert STUCK in seen
    for task, _ in python_task(client, "busy", BUSY, "busy_loop (<string>:", tmp_path):
        # under a loaded machine one 2 s window on the twin once came back with no samples at all (py-spy
        # attaching takes part of it): the rule is that a CPU profile of the busy task names its loop
        until(lambda task=task: "busy_loop (<string>:2)" in client.profile(task, "cpu", seconds=2, fmt="raw").text(),
              f"a CPU profile of {task} names busy_loop")
        assert b'"name":"busy_loop"' in client.profile(task, "cpu", seconds=1, fmt="speedscope").data


def test_exec_output_agrees_and_the_listed_differences_hold(side: tuple[str, FrayClient], tmp_path: Path) -> None:
    name, client = side
    for task, _ in python_task(client, "exec", SLEEPER, STUCK, tmp_path):
        ran = client.exec(task, ["python", "-c", "import sys; print(6 * 7); print('e', file=sys.stderr); sys.exit(3)"])
        assert (ran.exit_code, ran.stdout, ran.stderr, ran.error) == (3, "42\n", "e\n", "")
        assert client.exec(task, ["echo", "$HOME; ls"]).stdout == "$HOME; ls\n"  # an argv on both
        where = client.exec(task, ["sh", "-c", 'echo "${IRIS_TASK_ID:-unset}"']).stdout
        assert where == (f"{task}:0\n" if name == "embedded" else "unset\n"), INSPECT_DIFFERENCES[
            "exec directory and environment"]
        flood = client.exec(task, ["python", "-c", "print('x' * 3_000_000)"]).stdout
        assert ("[output cut: " in flood) == (name == "embedded"), INSPECT_DIFFERENCES["exec output bound"]
        if name == "embedded":
            timed_out = client.exec(task, ["sleep", "30"], timeout=1)
            assert timed_out.exit_code == -9 and "timed out after 1 s" in timed_out.error
        else:
            with pytest.raises(FrayError, match="timed out after 1 seconds") as refused:
                client.exec(task, ["sleep", "30"], timeout=1)
            assert refused.value.code == "internal", INSPECT_DIFFERENCES["exec timeout"]


def test_a_finished_task_gives_the_same_errors(side: tuple[str, FrayClient], tmp_path: Path) -> None:
    _, client = side
    job_id = launch(client, "done", ["true"], tmp_path)
    client.wait(job_id, timeout=120)
    assert client.exec(f"{job_id}/0", ["ls"]).error == f"Task {job_id}/0 is not running (state=TASK_STATE_SUCCEEDED)"
    for target in (f"{job_id}/0", f"{job_id}/0:0"):
        with pytest.raises(InspectionFailed, match="attempt no longer running"):
            client.profile(target, "threads")


def test_unknown_and_malformed_targets(side: tuple[str, FrayClient]) -> None:
    _, client = side
    for call in (lambda: client.profile("/diff/no-such-job/0", "threads"),
                 lambda: client.exec("/diff/no-such-job/0", ["ls"])):
        with pytest.raises(FrayError) as refused:
            call()
        assert refused.value.code == "not_found" and "Task /diff/no-such-job/0 not found" in refused.value.detail
    with pytest.raises(FrayError) as malformed:
        client.profile("diff/no-such-job/0", "threads")
    assert malformed.value.code == "invalid_argument", INSPECT_DIFFERENCES["malformed target"]


def test_an_unknown_format_number(side: tuple[str, FrayClient]) -> None:
    name, client = side
    request = J.ProfileTaskRequest(target="/system/process", duration_seconds=1,
                                   profile_type=J.ProfileType(cpu=J.CpuProfile(format=42)))  # type: ignore[arg-type]
    if name == "twin":  # it made a flamegraph: an SVG, or py-spy's flamegraph writer finding no samples
        answer = client._call("ProfileTask", request, J.ProfileTaskResponse)
        assert answer.profile_data.startswith(b"<?xml") or "inferno::flamegraph" in answer.error, answer
        return
    with pytest.raises(FrayError, match="cpu format 42 is not one of") as refused:
        client._call("ProfileTask", request, J.ProfileTaskResponse)
    assert refused.value.code == "invalid_argument", INSPECT_DIFFERENCES["unknown profile format"]


def test_a_python_task_under_a_shell(side: tuple[str, FrayClient], tmp_path: Path) -> None:
    name, client = side
    job_id = launch(client, "shell", ["sh", "-c", f"python -c '{SLEEPER}'; true"], tmp_path)
    seen = running(client, f"{job_id}/0", STUCK if name == "embedded" else "py-spy dump failed")
    assert (STUCK in seen) == (name == "embedded"), INSPECT_DIFFERENCES[
        "thread dump under a shell"]
    client.terminate(job_id)


def test_a_task_that_is_not_python(side: tuple[str, FrayClient], tmp_path: Path) -> None:
    name, client = side
    job_id = launch(client, "native", ["sleep", "300"], tmp_path)
    # while the task starts, py-spy may meet a Python launcher that has not yet become ``sleep`` (on the
    # twin: "Failed to copy PyThreadState head"); the rule is what it says once the task is ``sleep``
    seen = running(client, f"{job_id}/0", "Failed to find python version")
    assert seen.startswith("error: py-spy dump failed (exit 1): Error: Failed to find python version")
    stub = client.profile(f"{job_id}/0", "cpu", seconds=1, fmt="raw").text()  # a stub on both, not an error
    assert stub.startswith(getattr(INSPECT_DIFFERENCES["cpu stub"], name))
    client.terminate(job_id)
