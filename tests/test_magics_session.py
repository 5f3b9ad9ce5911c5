"""The session magics in a real IPython shell on the embedded controller: ``%fray session start``
with ``%%fray``'s resource flags, ``%%fray --session`` (both hosts' text, host 0's figure and
value, both tracebacks, the interrupt button), ``%fray push``/``pull``, ``%fray session status|stop``, ``%fray
session profile`` (every host at once), and the refusals."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from fray_jupyter.client import FrayClient
from fray_jupyter.iris.states import is_job_finished
from tests.controller_harness import ControllerProcess
from tests.jupyter_isolation import magics_controller, magics_shell
from tests.session_hosts import interrupt_button, wait_until

USER = "session-magic"
NAME = "nb"


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    root = tmp_path_factory.mktemp("session-magics")
    with magics_controller(root, USER, "--slots", "8", "--pass-env", "PYTHONPATH") as process:
        yield process


@pytest.fixture(scope="module")
def ip(controller: ControllerProcess) -> Iterator[InteractiveShell]:
    shell = magics_shell()
    with capture_output() as captured:
        shell.run_line_magic("fray", f"session start {NAME} --replicas 2 --cpu 0.5 --memory 256m --disk 1g")
    assert f"session {NAME}: 2/2 hosts ready" in captured.stdout
    yield shell
    shell.run_line_magic("fray", f"session stop {NAME}")


@pytest.fixture(scope="module")
def client(controller: ControllerProcess) -> Iterator[FrayClient]:
    with FrayClient(controller.info.url, controller.info.token) as opened:
        yield opened


def test_a_session_cell_keeps_state_and_shows_both_hosts_and_host_0s_value(ip: InteractiveShell) -> None:
    with capture_output() as captured:
        ip.run_cell_magic("fray", f"--session {NAME}", "x = 41\nprint('hello')\n")
        value = ip.run_cell_magic("fray", f"--session {NAME}", "x + 1")
    assert "[host 0] hello" in captured.stdout and "[host 1] hello" in captured.stdout
    assert repr(value) == "42"


def test_a_figure_comes_from_host_0(ip: InteractiveShell) -> None:
    pytest.importorskip("matplotlib")
    with capture_output() as captured:
        ip.run_cell_magic("fray", f"--session {NAME}",
                          "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\n")
    figures = [out for out in captured.outputs if "image/png" in out.data]
    assert len(figures) == 1 and figures[0].metadata.get("host") == 0


def test_a_failing_cell_fails_with_both_hosts_tracebacks(ip: InteractiveShell) -> None:
    with capture_output() as captured:
        result = ip.run_cell(f"%%fray --session {NAME}\nraise RuntimeError('nope')\n")
    assert not result.success
    shown = captured.stdout + captured.stderr
    assert "[hosts 0, 1]" in shown and "RuntimeError: nope" in shown
    assert "magics/session.py" not in shown  # the hosts' frames, not ours


def test_push_and_pull_move_notebook_variables(ip: InteractiveShell) -> None:
    ip.user_ns["sent"] = {"a": [1, 2]}
    with capture_output():
        ip.run_line_magic("fray", f"push {NAME} sent")
        ip.run_cell_magic("fray", f"--session {NAME}", "got = sent['a'] + [3]\n")
        ip.run_line_magic("fray", f"pull {NAME} got --host 1")
    assert ip.user_ns["got"] == [1, 2, 3]


def test_status_lists_every_host(ip: InteractiveShell) -> None:
    with capture_output() as captured:
        ip.run_line_magic("fray", f"session status {NAME}")
    assert "host 0: pid" in captured.stdout and "host 1: pid" in captured.stdout


def test_a_session_from_the_picker_with_jax_is_one_jax_process_group(ip: InteractiveShell) -> None:
    from fray_jupyter.resources.config import ResourceConfig
    from fray_jupyter.widgets import ResourcePicker

    ip.user_ns["pk"] = ResourcePicker(ResourceConfig(cpu=0.5, ram="256m", disk="1g"))
    with capture_output() as captured:
        ip.run_line_magic("fray", "session start jx --resources pk --replicas 2 --jax")
        value = ip.run_cell_magic("fray", "--session jx", "import jax\njax.process_count()")
        ip.run_line_magic("fray", "session stop jx")
    assert "session jx: 2/2 hosts ready" in captured.stdout
    assert repr(value) == "2"


@pytest.mark.parametrize(("line", "fragment"), [
    (f"--session {NAME} --tpu v5p-8", "--tpu: a session's resources are set by %fray session start"),
    ("--session nosuch", "no session 'nosuch' in this kernel"),
])
def test_bad_session_cells_are_one_line_usage_errors(ip: InteractiveShell, line: str, fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment):
        ip.run_cell_magic("fray", line, "1\n")


def test_starting_a_live_name_is_refused_and_stop_releases_the_slice(ip: InteractiveShell, client: FrayClient) -> None:
    with pytest.raises(UsageError, match="already running"):
        ip.run_line_magic("fray", f"session start {NAME}")
    with capture_output():
        ip.run_line_magic("fray", "session start brief --cpu 0.5 --memory 256m --disk 1g")
    from fray_jupyter.magics.session import SESSIONS

    job_id = SESSIONS["brief"].job_id
    with capture_output() as captured:
        ip.run_line_magic("fray", "session stop brief")
    assert "stopped" in captured.stdout and is_job_finished(client.state([job_id])[job_id])


def test_the_interrupt_button_stops_the_cell_on_every_host_and_keeps_the_session(ip: InteractiveShell) -> None:
    from fray_jupyter.magics.session import SESSIONS

    session = SESSIONS[NAME]
    with (interrupt_button(lambda: all(status.running for status in session.status()), "both hosts running the loop"),
          capture_output() as captured):
        result = ip.run_cell(f"%%fray --session {NAME}\nkept = 'yes'\nwhile True: pass\n")
    assert not result.success
    assert "[hosts 0, 1]" in captured.stdout + captured.stderr and "KeyboardInterrupt" in captured.stdout + captured.stderr
    assert repr(ip.run_cell_magic("fray", f"--session {NAME}", "kept")) == "'yes'"


def test_jobs_and_the_sidebar_say_a_session_is_one_with_its_hosts_ready_running_or_idle(
        ip: InteractiveShell, client: FrayClient) -> None:
    """What the job's endpoints carry, read by ``%fray jobs`` and by the sidebar's ``/fray/sessions``."""
    from fray_jupyter.magics.session import SESSIONS
    from fray_jupyter.server.sessions import session_rows

    session = SESSIONS[NAME]

    def line() -> str:
        return next((row["line"] for row in session_rows(client, USER) if row["job_id"] == session.job_id), "")

    busy = threading.Thread(target=session.run, args=("import time\ntime.sleep(120)\n",), kwargs={"stream": False},
                            daemon=True)
    busy.start()
    wait_until(lambda: line() == "session · cpu · 2/2 hosts ready · running a cell", "the session shown running")
    session.interrupt()
    busy.join()
    wait_until(lambda: " · idle " in line(), "the session shown idle")
    assert line().startswith("session · cpu · 2/2 hosts ready · idle ") and "releases the slice in" in line()
    with capture_output() as captured:
        ip.run_line_magic("fray", "jobs")
    assert "session · cpu · 2/2 hosts ready · idle " in captured.outputs[0].data["text/plain"]


def test_session_profile_captures_every_host_at_once_each_labelled_and_written_next_to_the_notebook(
        ip: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fray_jupyter.magics.session import SESSIONS

    session = SESSIONS[NAME]
    monkeypatch.chdir(tmp_path)
    real_profile, in_flight, most = session.client.profile, [0], [0]
    lock = threading.Lock()

    def counted(*args: Any, **kwargs: Any) -> Any:  # the real call, counting how many run at once
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            return real_profile(*args, **kwargs)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(session.client, "profile", counted)
    busy = threading.Thread(target=session.run, args=("def spin_here():\n    while True: sum(range(10000))\nspin_here()\n",),
                            kwargs={"stream": False}, daemon=True)
    busy.start()
    try:
        wait_until(lambda: all(status.running for status in session.status()), "both hosts running the loop")
        with capture_output() as flames:
            ip.run_line_magic("fray", f"session profile {NAME} --cpu --seconds 2")
        with capture_output() as dumps:
            ip.run_line_magic("fray", f"session profile {NAME} --threads")
    finally:
        session.interrupt()
        busy.join()
    assert most[0] == 2  # both hosts were being sampled at the same time
    for host, shown in enumerate(output.data for output in flames.outputs):
        assert shown["text/plain"].startswith(f"host {host} (task {session.job_id}/{host}): cpu profile (flamegraph, ")
        assert 'sandbox="allow-scripts allow-modals" srcdoc="' in shown["text/html"] and "spin_here" in shown["text/html"]
        assert b"spin_here" in (tmp_path / f"{USER}-{NAME}-{host}-cpu.svg").read_bytes()
    assert len(flames.outputs) == 2
    for host, shown in enumerate(output.data for output in dumps.outputs):
        assert shown["text/plain"].startswith(f"host {host} (task {session.job_id}/{host}): threads profile")
        assert re.search(r'<b class="fray-own-frame">\s+spin_here \(&lt;cell [^&]+&gt;:2\)</b>', shown["text/html"])
        assert "spin_here" in (tmp_path / f"{USER}-{NAME}-{host}-threads.txt").read_text()
    assert len(dumps.outputs) == 2


@pytest.mark.parametrize(("line", "fragment"), [
    ("session profile nosuch", "%fray session profile: no session 'nosuch' in this kernel"),
    (f"session profile {NAME} --seconds 0", "%fray session profile: seconds=0 is out of range: 1 to 3600"),
    (f"session profile {NAME} --cpu --threads", "argument --threads: not allowed with argument --cpu"),
    (f"session profile {NAME} --memory --format png", "format='png' is not a memory format"),
    ("session profile", "give the session's name"),
])
def test_bad_session_profile_lines_are_one_line_usage_errors(ip: InteractiveShell, line: str, fragment: str) -> None:
    with pytest.raises(UsageError, match=re.escape(fragment)):
        ip.run_line_magic("fray", line)
