"""``%fray profile`` / ``%fray exec`` in a real IPython shell, and ``JobHandle.profile`` / ``threads``
/ ``exec`` (``client.inspection``), against a real embedded controller process."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from fray_jupyter.client import FrayClient
from fray_jupyter.client.handle import JobHandle
from fray_jupyter.client.inspection import InspectionFailed, profile_request
from fray_jupyter.controller.runtime import profiling
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.magics import ControllerError
from fray_jupyter.magics.look_inside import InspectFailed
from tests.controller_harness import ControllerProcess, launch_request
from tests.jupyter_isolation import magics_controller, magics_shell
from tests.waiting import until

USER = "inspector"
SLEEPER = ("exec python -c 'import time\ndef stuck_waiting():\n    while True: time.sleep(0.001); sum(range(200000))\n"
           "stuck_waiting()'")  # busy enough for py-spy's samples (it skips idle threads)
STUCK_FRAME = "stuck_waiting (<string>:3)"
pytestmark = pytest.mark.skipif(profiling.tool("py-spy") is None, reason="py-spy is not installed")


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    with magics_controller(tmp_path_factory.mktemp("magics-inspect"), USER) as process:
        yield process


@pytest.fixture(scope="module")
def ip(controller: ControllerProcess) -> InteractiveShell:
    return magics_shell()


@pytest.fixture(scope="module")
def sleeper(controller: ControllerProcess) -> Iterator[JobHandle]:
    """A running Python task stuck in ``stuck_waiting``, as a handle."""
    client = FrayClient(controller.info.url, controller.info.token)
    job_id = client.submit(launch_request(f"sleeper-{time.monotonic_ns()}", SLEEPER, user=USER))
    handle = JobHandle(job_id, client)
    # The frame, not the name: the dump's header shows the command line, which holds the name
    # before the interpreter has reached the function.
    until(lambda: STUCK_FRAME in _dump(handle), "the sleeper's dump shows it in stuck_waiting")
    yield handle
    handle.cancel()
    client.close()


def _dump(handle: JobHandle) -> str:
    try:
        return handle.threads()
    except InspectionFailed:  # not running yet
        return ""


def test_the_handle_profiles_dumps_and_execs(sleeper: JobHandle, tmp_path: Path) -> None:
    assert STUCK_FRAME in sleeper.threads()
    cpu = sleeper.profile(kind="cpu", seconds=1, fmt="raw")
    assert "stuck_waiting" in cpu.text() and cpu.extension == "txt"
    saved = sleeper.profile(seconds=1).save(tmp_path)
    assert saved.name == f"{USER}-{sleeper.job_id.rsplit('/', 1)[1]}-0-cpu.svg" and b"<svg" in saved.read_bytes()
    ran = sleeper.exec(["sh", "-c", "echo $IRIS_TASK_ID; pwd"])
    assert ran.ok and ran.stdout.splitlines()[0] == f"{sleeper.job_id}/0:0"


@pytest.mark.parametrize(("call", "message"), [
    (lambda: profile_request("/u/j/0", "gpu"), "kind='gpu' is not a profile kind: use one of cpu, memory, threads"),
    (lambda: profile_request("/u/j/0", "cpu", 10, "png"), "format='png' is not a cpu format"),
    (lambda: profile_request("/u/j/0", "cpu", 10**9), "seconds=1000000000 is out of range: 1 to 3600"),
])
def test_bad_profile_requests_name_the_value(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        call()  # type: ignore[operator]


def test_profile_magic_writes_the_capture_next_to_the_notebook(ip: InteractiveShell, sleeper: JobHandle,
                                                               tmp_path: Path) -> None:
    os.chdir(tmp_path)
    with capture_output() as captured:
        ip.run_line_magic("fray", f"profile {sleeper.job_id}/0 --threads")
    written = tmp_path / f"{USER}-{sleeper.job_id.rsplit('/', 1)[1]}-0-threads.txt"
    assert f"wrote {written}" in captured.stdout and "stuck_waiting" in captured.stdout
    assert "stuck_waiting" in written.read_text()
    with capture_output() as captured:
        ip.run_line_magic("fray", f"profile {sleeper.job_id.rsplit('/', 1)[1]} --seconds 1 --output flame.svg")
    assert (tmp_path / "flame.svg").read_bytes().startswith(b"<?xml") or b"<svg" in (tmp_path / "flame.svg").read_bytes()
    frames = [output.data["text/html"] for output in captured.outputs if "text/html" in output.data]
    assert len(frames) == 1 and 'sandbox="allow-scripts allow-modals" srcdoc="' in frames[0]


def test_exec_magic_prints_the_output_and_fails_on_a_finished_task(ip: InteractiveShell, sleeper: JobHandle,
                                                                   controller: ControllerProcess) -> None:
    with capture_output() as captured:
        ip.run_line_magic("fray", f"exec {sleeper.job_id}/0 -- sh -c 'echo out; echo err >&2; exit 4'")
    assert captured.stdout == "out\nexit code 4\n" and captured.stderr == "err\n"
    wire = controller.wire()
    done = wire.launch(launch_request(f"done-{time.monotonic_ns()}", "true", user=USER))
    wire.wait(done, {job_pb2.JOB_STATE_SUCCEEDED})
    wire.close()
    with pytest.raises(InspectFailed, match=r"is not running \(state=TASK_STATE_SUCCEEDED\)"):
        ip.run_line_magic("fray", f"exec {done} -- ls")
    with pytest.raises(InspectFailed, match="attempt no longer running"):
        ip.run_line_magic("fray", f"profile {done} --threads")
    with pytest.raises(ControllerError, match="not found"):
        ip.run_line_magic("fray", "exec /inspector/no-such-job/0 -- ls")


@pytest.mark.parametrize(("line", "message"), [
    ("exec somejob/0", "%fray exec: give the command after --"),
    ("profile somejob --format png", "%fray profile: format='png' is not a cpu format"),
    ("profile somejob --seconds 0", "%fray profile: seconds=0 is out of range: 1 to 3600"),
    ("profile somejob --cpu --threads", "%fray profile: argument --threads: not allowed with argument --cpu"),
])
def test_bad_lines_are_one_usage_line(ip: InteractiveShell, line: str, message: str) -> None:
    with pytest.raises(UsageError) as refused:
        ip.run_line_magic("fray", line)
    assert str(refused.value).startswith(message)
