"""Lifecycle: ``fray-jupyter controller status|stop|gc`` against the real
controller, and the auto-started controller stopping when idle and coming back with its history."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fray_jupyter.client import discovery
from fray_jupyter.client.discovery import TOKEN_ENV, URL_ENV, connect
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.runtime_file import IDLE_ENV, read_runtime_file
from tests.controller_harness import TERMINAL, launch_request, start_controller, stop_quietly

J = job_pb2


def fray(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fray_jupyter.cli", *args], capture_output=True, text=True,
                          timeout=60, check=False)


def test_status_gc_and_stop_commands(tmp_path: Path) -> None:
    controller = start_controller(tmp_path / "state", "--retention-days", "0", "--max-state-size", "1g")
    runtime = str(controller.runtime_file)
    try:
        wire = controller.wire()
        job_id = wire.launch(launch_request("status", "echo hi > out.txt"))
        assert wire.wait(job_id, TERMINAL).state == J.JOB_STATE_SUCCEEDED
        wire.close()
        text = fray("controller", "status", "--runtime-file", runtime)
        assert text.returncode == 0, text.stderr
        assert controller.info.url in text.stdout and f"pid {controller.process.pid}" in text.stdout
        assert "0 running" in text.stdout and "of a 1.0 GiB cap" in text.stdout and "kept 0 days" in text.stdout
        figures = json.loads(fray("controller", "status", "--runtime-file", runtime, "--json").stdout)
        assert figures["pid"] == controller.process.pid and figures["uptime_s"] >= 0
        assert figures["jobs"] == 1 and figures["tasks_running"] == 0 and figures["jobs_queued"] == 0
        assert figures["state_bytes"] > 0 and figures["policy"]["max_bytes"] == 2**30
        gc = fray("controller", "gc", "--runtime-file", runtime)
        assert gc.returncode == 0 and "removed the files of 1 finished job and" in gc.stdout, gc.stdout + gc.stderr
        stopped = fray("controller", "stop", "--runtime-file", runtime)
        assert stopped.returncode == 0 and f"pid {controller.process.pid}" in stopped.stdout
        assert controller.process.wait(timeout=5) == 0 and not controller.runtime_file.exists()
        none = fray("controller", "status", "--runtime-file", runtime)
        assert none.returncode == 1 and none.stdout.startswith("no controller is running")
        assert fray("controller", "stop", "--runtime-file", runtime).stdout == "no controller is running\n"
    finally:
        stop_quietly(controller)


def test_the_auto_started_controller_stops_when_idle_and_comes_back_with_its_history(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv(URL_ENV, raising=False)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.setenv(IDLE_ENV, "1.5")
    request = launch_request("idle", "sleep 2; echo survived")  # planned first: the idle clock starts at connect
    with connect() as client:
        first = discovery._started[-1]
        job_id = client.submit(request)
        assert first.poll() is None
        assert first.wait(timeout=30) == 0  # the exit event: idle 1.5 s after the 2 s task ended
    assert read_runtime_file() is None
    with connect() as client:  # the next use starts it again, history intact
        second = discovery._started[-1]
        assert second is not first and second.poll() is None
        assert client.status(job_id).state == J.JOB_STATE_SUCCEEDED
        assert [entry.data for entry in client.logs(job_id).entries] == ["survived"]
    info = read_runtime_file()
    if info is not None:
        os.kill(info.pid, signal.SIGTERM)
    second.wait(timeout=20)
