"""``fray-jupyter controller --iris-local``: a genuine Iris local cluster in the foreground, found
by the client through the runtime file like the embedded controller; and its errors."""

from __future__ import annotations

import importlib.metadata
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from fray_jupyter.client.discovery import connect
from fray_jupyter.controller import iris_local
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.environment import EnvironmentConfig
from fray_jupyter.runtime_file import RUNTIME_FILE_NAME, read_runtime_file

needs_iris = pytest.mark.skipif(iris_local.unavailable_reason() is not None,
                                reason=str(iris_local.unavailable_reason()))


def _listening(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((parts.hostname or "", parts.port or 0)) == 0


@needs_iris
def test_iris_local_serves_the_client_through_the_runtime_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime_dir, home = tmp_path / "runtime", tmp_path / "home"
    runtime_file = runtime_dir / RUNTIME_FILE_NAME
    env = dict(os.environ, HOME=str(home))  # Iris writes ~/.config/marin/credentials: keep it in tmp
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with (tmp_path / "out.log").open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "fray_jupyter.controller", "--iris-local", "--port", str(port),
             "--state-dir", str(tmp_path / "state"), "--runtime-file", str(runtime_file)],
            stdout=out, stderr=subprocess.STDOUT, env=env, text=True)
    try:
        deadline = time.monotonic() + iris_local.START_TIMEOUT
        while (info := read_runtime_file(runtime_file)) is None:
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "out.log").read_text()
            time.sleep(0.1)
        assert info.url == f"http://127.0.0.1:{port}" and info.grpc_url == "" and info.token == ""
        assert info.pid == process.pid and stat.S_IMODE(runtime_file.stat().st_mode) == 0o600
        assert f"iris-local connect={info.url}" in (tmp_path / "out.log").read_text()
        assert (home / ".config" / "marin" / "credentials" / "local.json").exists()  # the user's HOME, not a private one

        monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime_dir))
        monkeypatch.delenv("FRAY_CONTROLLER_URL", raising=False)
        monkeypatch.delenv("FRAY_CONTROLLER_TOKEN", raising=False)
        job = JobRequest(name="iris-local-hi", entrypoint=Entrypoint.from_binary("sh", ["-c", "echo hi"]),
                         resources=ResourceConfig(cpu=1, ram="512m", disk="1g"),
                         environment=EnvironmentConfig(workspace=str(tmp_path), setup_scripts=[]))
        with connect(start=False, timeout=10) as client:
            assert client.url == info.url
            job_id = client.submit(plan(job, user="fray-test"))
            assert client.wait(job_id, timeout=60).state == job_pb2.JOB_STATE_SUCCEEDED
            assert "hi" in [entry.data for entry in client.follow(job_id, timeout=30)]

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=iris_local.STOP_TIMEOUT) == 0
        assert not runtime_file.exists()
        assert not _listening(info.url)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_without_marin_iris_it_is_one_line_naming_the_package(tmp_path: Path) -> None:
    hide = (
        "import importlib.metadata as m, sys\n"
        "real = m.version\n"
        "def version(name):\n"
        "    if name == 'marin-iris':\n"
        "        raise m.PackageNotFoundError(name)\n"
        "    return real(name)\n"
        "m.version = version\n"
        "from fray_jupyter.controller import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    runtime_file = tmp_path / "runtime.json"
    result = subprocess.run([sys.executable, "-c", hide, "--iris-local", "--state-dir", str(tmp_path / "state"),
                             "--runtime-file", str(runtime_file)], check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert "--iris-local needs marin-iris[controller] (Python 3.12): " in result.stderr
    assert f"pip install 'marin-iris[controller]=={iris_local.IRIS_VERSION}'" in result.stderr
    assert "missing: marin-iris" in result.stderr and not runtime_file.exists()


def test_unavailable_reason_names_every_missing_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    def version(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    reason = iris_local.unavailable_reason()
    assert reason is not None and reason.endswith("(missing: marin-iris, marin-finelog-server)")
    with pytest.raises(iris_local.IrisLocalUnavailable, match="needs marin-iris"):
        iris_local.start(Path("/nonexistent/iris.log"))


@pytest.mark.parametrize("flags, words", [
    (["--token", "x"], "--token cannot be used with --iris-local"),
    (["--grpc-port", "5000", "--slots", "2"], "--grpc-port, --slots cannot be used with --iris-local"),
    (["--host", "0.0.0.0"], "--host cannot be used with --iris-local"),
    (["--iris-workers", "0"], "--iris-workers must be at least 1"),
])
def test_flags_that_do_not_apply_are_refused(flags: list[str], words: str) -> None:
    result = subprocess.run([sys.executable, "-m", "fray_jupyter.controller", "--iris-local", *flags],
                            check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and words in result.stderr


def test_iris_workers_needs_iris_local() -> None:
    result = subprocess.run([sys.executable, "-m", "fray_jupyter.controller", "--iris-workers", "3"],
                            check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--iris-workers needs --iris-local" in result.stderr
