"""discovery: explicit arguments beat the environment, which beats the runtime file; with none, one
embedded controller is started in the background (fake controllers stand in for it here)."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.client import discovery
from fray_jupyter.client.discovery import (
    TOKEN_ENV,
    URL_ENV,
    connect,
    resolve,
    start_controller,
    task_controller,
)
from fray_jupyter.client.errors import ControllerStartFailed, ControllerUnreachable
from fray_jupyter.runtime_file import ControllerInfo, read_runtime_file, write_runtime_file
from tests.loopback import loopback_server

FAKE_CONTROLLER = """
import http.server, json, os, sys, threading, time
from pathlib import Path
from fray_jupyter.runtime_file import ControllerInfo, write_runtime_file
with open(sys.argv[1], "a") as starts:
    starts.write("started\\n")

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"status": "ok", "instance": "fake-instance"}).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
threading.Thread(target=server.serve_forever, daemon=True).start()
time.sleep(0.3)  # widen the window in which a second kernel could also start one
url = f"http://127.0.0.1:{server.server_address[1]}"
write_runtime_file(ControllerInfo(url, "grpc://127.0.0.1:2", "tok", os.getpid(), "fake-instance"), Path(sys.argv[2]))
time.sleep(60)
"""


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """``(runtime file, state dir)`` under ``tmp_path``, also as the Jupyter defaults; no env."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv(URL_ENV, raising=False)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    yield tmp_path / "runtime" / "fray-controller.json", tmp_path / "data" / "fray"
    info = read_runtime_file(tmp_path / "runtime" / "fray-controller.json")
    if info is not None and info.pid != os.getpid():
        os.killpg(info.pid, signal.SIGKILL)  # a fake controller this test started


@contextlib.contextmanager
def health_server(instance: str) -> Iterator[str]:
    """A ``/health`` that names ``instance``, on a free loopback port; yields its URL."""
    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps({"status": "ok", "instance": instance}).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    with loopback_server(Health) as url:
        yield url


def use_command(monkeypatch: pytest.MonkeyPatch, script: str, *args: str) -> None:
    monkeypatch.setattr(discovery, "controller_command",
                        lambda state, runtime_file: [sys.executable, "-c", script, *args, str(runtime_file)])


def test_explicit_arguments_win(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(URL_ENV, "http://env:1")
    monkeypatch.setenv(TOKEN_ENV, "env-token")
    assert resolve("grpc://arg:2", "arg-token") == ("grpc://arg:2", "arg-token")
    assert resolve() == ("http://env:1", "env-token")
    assert resolve("http://arg:3") == ("http://arg:3", "env-token")


def test_runtime_file_is_used_and_its_token_follows_its_urls(dirs: tuple[Path, Path],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    runtime_file, _ = dirs
    with health_server("this-one") as url:
        write_runtime_file(ControllerInfo(url, "grpc://127.0.0.1:6", "file-token", os.getpid(), "this-one"),
                           runtime_file)
        assert resolve() == (url, "file-token")
        assert resolve("grpc://127.0.0.1:6") == ("grpc://127.0.0.1:6", "file-token")
        assert resolve("http://elsewhere:7") == ("http://elsewhere:7", None)
        monkeypatch.setenv(URL_ENV, f"{url}/")
        assert resolve() == (f"{url}/", "file-token")
        client = connect()
        assert client.url == url
        client.close()


def test_no_controller_and_no_start_is_a_clear_error(dirs: tuple[Path, Path]) -> None:
    with pytest.raises(ControllerUnreachable, match=f"no controller is configured or running.*{URL_ENV}"):
        resolve(start=False)


def test_concurrent_kernels_start_one_controller(dirs: tuple[Path, Path], tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    starts = tmp_path / "starts.txt"
    use_command(monkeypatch, FAKE_CONTROLLER, str(starts))
    found: list[ControllerInfo] = []
    threads = [threading.Thread(target=lambda: found.append(start_controller())) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert starts.read_text() == "started\n"
    assert len({info.pid for info in found}) == 1 and found[0].token == "tok"
    assert os.getsid(found[0].pid) == found[0].pid  # its own session: outlives the kernel
    assert resolve() == (found[0].url, "tok")  # later connects reuse it


def test_a_stale_runtime_file_is_replaced(dirs: tuple[Path, Path], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    runtime_file, _ = dirs
    write_runtime_file(ControllerInfo("http://127.0.0.1:9", "grpc://127.0.0.1:9", "old", 2**22 + 12345), runtime_file)
    use_command(monkeypatch, FAKE_CONTROLLER, str(tmp_path / "starts.txt"))
    url, token = resolve()
    assert token == "tok" and url != "http://127.0.0.1:9"


@pytest.mark.parametrize("answer", ["nothing", "another controller"])
def test_a_runtime_file_naming_a_live_unrelated_pid_is_stale(dirs: tuple[Path, Path], tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch, answer: str) -> None:
    """After a reboot the recorded pid may be some other live process: the file counts only if its
    URL's /health names the same controller instance, else it is replaced."""
    runtime_file, _ = dirs
    unrelated = subprocess.Popen(["sleep", "60"])
    try:
        with contextlib.ExitStack() as stack:
            url = "http://127.0.0.1:9" if answer == "nothing" else stack.enter_context(health_server("other"))
            write_runtime_file(ControllerInfo(url, "grpc://127.0.0.1:9", "old", unrelated.pid, "recorded"),
                               runtime_file)
            assert read_runtime_file(runtime_file) is None
            with pytest.raises(ControllerUnreachable):
                resolve(start=False)
            use_command(monkeypatch, FAKE_CONTROLLER, str(tmp_path / "starts.txt"))
            new_url, token = resolve()
        info = read_runtime_file(runtime_file)
        assert info is not None and info.pid not in (unrelated.pid, os.getpid()) and token == "tok"
        assert new_url == info.url != url and info.instance == "fake-instance"
    finally:
        unrelated.kill()
        unrelated.wait()


def test_a_controller_that_dies_is_reported_with_its_log(dirs: tuple[Path, Path],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    use_command(monkeypatch, "import sys; print('port already taken'); sys.exit(3)")
    with pytest.raises(ControllerStartFailed) as caught:
        connect()
    message = str(caught.value)  # the exit itself is reported, not a start timeout
    assert "exited with code 3: port already taken" in message and "controller.log" in message
    assert "\n" not in message


def test_a_controller_that_never_gets_ready_is_stopped(dirs: tuple[Path, Path],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    use_command(monkeypatch, "import time; print('still booting', flush=True); time.sleep(60)")
    with pytest.raises(ControllerStartFailed, match=r"no runtime file .* after 0.5 s; last log line: still booting"):
        start_controller(timeout=0.5)
    assert all(process.poll() is not None for process in discovery._started)


def test_connect_auto_starts_the_embedded_controller_once(dirs: tuple[Path, Path]) -> None:
    runtime_file, state = dirs
    with connect() as first:
        assert first.list().total == 0
    info = read_runtime_file(runtime_file)
    assert info is not None and first.url == info.url and os.getsid(info.pid) == info.pid
    assert (state / "controller.log").exists()
    with connect() as second, connect(info.grpc_url) as over_grpc:
        assert second.list().total == over_grpc.list().total == 0
    assert read_runtime_file(runtime_file) == info  # reused, not restarted


def test_inside_an_iris_task_the_task_s_own_controller_is_used(dirs: tuple[Path, Path],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A coordinator's children must reach the controller running it, whatever else is set; only
    an explicit URL or cluster overrides that."""
    monkeypatch.setenv(URL_ENV, "http://env:1")
    monkeypatch.setenv("FRAY_CLUSTER", "somewhere")
    monkeypatch.setenv("IRIS_CONTROLLER_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("IRIS_TASK_ID", "/alice/coord/0:0")
    assert task_controller() == ("http://127.0.0.1:9", None)
    monkeypatch.setenv("IRIS_TASK_TOKEN", "task-token")
    with connect() as inside:
        assert inside.url == "http://127.0.0.1:9" and inside.cluster_name is None
    assert task_controller() == ("http://127.0.0.1:9", "task-token")
    with connect("http://arg:2") as explicit:
        assert explicit.url == "http://arg:2"
    monkeypatch.setenv("IRIS_TASK_ID", "/alice/coord")  # not a task id: not inside a task
    assert task_controller() is None
