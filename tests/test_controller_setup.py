"""Task setup as on a real Iris worker (``controller.runtime.task_setup``): the steps, the environment (uv and
this Python on PATH, the shared uv cache, IRIS_VENV), the command run in the venv setup left, and
a failed setup's error naming its command and output (real processes through ``runner.Attempt``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from fray_jupyter.controller.kernel.exits import Outcome
from fray_jupyter.controller.runtime.runner import Attempt
from fray_jupyter.controller.runtime.task_setup import (
    TAIL_LINES,
    is_default_sync,
    setup_failure,
    task_steps,
    tool_dirs,
    worker_environment,
)
from fray_jupyter.iris.proto import job_pb2

# The shape of the setup Marin's client sends by default (iris.cluster.setup_scripts).
DEFAULT_SYNC = ("set -e\ncd \"$IRIS_WORKDIR\"\necho 'syncing deps'\n"
                "uv sync $([ -f uv.lock ] && echo '--frozen' || echo '') --python 3.12 --all-packages --no-dev\n")


def _run(steps: list[list[str]], workdir: Path, state: Path) -> tuple[Outcome, list[str]]:
    workdir.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(state), "IRIS_WORKDIR": str(workdir), "IRIS_PYTHON": sys.executable,
           **worker_environment(workdir, state, os.environ["PATH"], setup=True)}
    lines: list[str] = []
    attempt = Attempt(steps=steps, workdir=workdir, env=env, timeout_s=60,
                      sink=lambda source, line: lines.append(line), on_spawn=lambda pid, token: None)
    return asyncio.run(attempt.run()), lines


def test_steps_wrap_setup_and_run_the_command_in_the_venv() -> None:
    assert task_steps([], ["python", "x.py"]) == [["python", "x.py"]]  # no setup: the command as sent
    steps = task_steps(["echo one", DEFAULT_SYNC], ["python", "x.py"])
    assert [step[:2] for step in steps[:2]] == [["bash", "-c"], ["bash", "-c"]]
    assert steps[0][2].endswith("echo one") and "pyproject.toml" not in steps[0][2]
    assert "pyproject.toml" in steps[1][2] and steps[1][2].endswith(DEFAULT_SYNC)
    assert steps[2][:2] == ["bash", "-c"] and steps[2][-2:] == ["python", "x.py"]
    assert is_default_sync(DEFAULT_SYNC) and not is_default_sync("uv sync") and not is_default_sync("echo hi")


def test_worker_environment_and_tools(tmp_path: Path) -> None:
    workdir = tmp_path / "work" / "job-1" / "0.0"
    env = worker_environment(workdir, tmp_path, "/usr/bin", setup=False)
    assert env["IRIS_VENV"] == env["UV_PROJECT_ENVIRONMENT"] == str(workdir / ".venv")
    assert env["UV_CACHE_DIR"] == str(tmp_path / "uv-cache")
    assert env["UV_PYTHON_INSTALL_DIR"] == str(tmp_path / "uv-cache" / "python")
    assert "PATH" not in env  # no setup: the base PATH as it is
    uv_dir, python_dir = tool_dirs()
    with_setup = worker_environment(workdir, tmp_path, f"/usr/bin{os.pathsep}{uv_dir}", setup=True)
    assert with_setup["PATH"].split(os.pathsep) == ["/usr/bin", str(uv_dir), *([str(python_dir)] if python_dir != uv_dir
                                                                              else [])]
    version = subprocess.run([str(uv_dir / "uv"), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith("uv ")
    python = python_dir / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    assert subprocess.run([str(python), "-c", "import sys; print(sys.prefix == sys.base_prefix)"],
                          capture_output=True, text=True, check=True).stdout.strip() == "True"  # outside any venv


def test_the_command_runs_in_the_venv_setup_left(tmp_path: Path) -> None:
    make_venv = 'mkdir -p "$IRIS_VENV/bin" && echo "export VIRTUAL_ENV=$IRIS_VENV" > "$IRIS_VENV/bin/activate"'
    outcome, lines = _run(task_steps([make_venv], ["sh", "-c", 'echo "$VIRTUAL_ENV|$IRIS_PYTHON"']),
                          tmp_path / "w", tmp_path)
    venv = tmp_path / "w" / ".venv"
    assert outcome.state == job_pb2.TASK_STATE_SUCCEEDED and lines == [f"{venv}|{venv}/bin/python"]


def test_without_a_workspace_the_default_sync_is_skipped(tmp_path: Path) -> None:
    outcome, lines = _run(task_steps([DEFAULT_SYNC], ["sh", "-c", 'echo "python=$IRIS_PYTHON"']),
                          tmp_path / "w", tmp_path)
    assert outcome.state == job_pb2.TASK_STATE_SUCCEEDED
    assert "no pyproject.toml in the work dir" in lines[0] and lines[-1] == f"python={sys.executable}"


def test_a_failed_setup_names_the_failing_command_and_its_output(tmp_path: Path) -> None:
    script = "set -e\necho preparing\nfor i in $(seq 30); do echo noise-$i; done\nfalse --flag\necho never"
    outcome, lines = _run(task_steps(["echo first", script], ["echo", "not run"]), tmp_path / "w", tmp_path)
    assert outcome.state == job_pb2.TASK_STATE_FAILED and outcome.exit_code == 1
    head, _, tail = outcome.error.partition("\nlast output:\n")
    assert head == "setup command 2/2 failed with exit code 1: false --flag"
    assert tail.splitlines() == [f"noise-{i}" for i in range(11, 31)] and len(tail.splitlines()) == TAIL_LINES
    assert "not run" not in lines and "never" not in lines


def test_setup_failure_without_a_trace_quotes_the_script() -> None:
    message = setup_failure(1, 1, 127, ["bash", "-c", "uv sync --frozen\necho done"], [])
    assert message == "setup command 1/1 failed with exit code 127: in 'uv sync --frozen'\nlast output:\n(no output)"
