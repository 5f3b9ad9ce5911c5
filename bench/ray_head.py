"""A local Ray head for the benches: ``ray start --head --block`` in a child process, all on
127.0.0.1, and a ``JobSubmissionClient`` for its dashboard.

Rules (the Ray gotchas of the environment notes, G7-G9):

* Every port is a free loopback port picked here (never Ray's fixed defaults, which another Ray
  on the machine may hold); ``--temp-dir`` and HOME are inside a scratch dir, so nothing is
  written to ``/tmp/ray`` or ``~/.ray``.
* ``RAY_AUTH_MODE=disabled`` for the head and for this process's client (they must match),
  ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` (keeps Ray on 127.0.0.1 instead of the eth0 address),
  ``RAY_USAGE_STATS_ENABLED=0``; the venv's ``bin`` leads PATH, so entrypoints find its Python.
* It is stopped by SIGTERM to the ``ray start`` process (its children exit with it), then
  SIGKILL to its process group if it is still there after ``STOP_TIMEOUT``; never ``ray stop``,
  which kills every Ray process on the machine by name.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ray.job_submission import JobSubmissionClient

START_TIMEOUT: Final[float] = 120.0
STOP_TIMEOUT: Final[float] = 20.0
RAY_ENV: Final[dict[str, str]] = {
    "RAY_AUTH_MODE": "disabled",
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
}
PORT_FLAGS: Final[tuple[str, ...]] = (
    "port", "dashboard-port", "ray-client-server-port", "dashboard-agent-listen-port",
    "dashboard-agent-grpc-port", "node-manager-port", "object-manager-port", "metrics-export-port",
    "runtime-env-agent-port",
)


def unavailable_reason() -> str | None:
    """None when ``ray[default]`` (with its ``ray`` command) is installed here, else why not."""
    try:
        importlib.metadata.version("ray")
    except importlib.metadata.PackageNotFoundError:
        return "ray is not installed: pip install 'ray[default]>=2.50'"
    if not _ray_command().exists():
        return f"no `ray` command next to {sys.executable}"
    try:
        importlib.metadata.version("aiohttp_cors")  # what [default] adds for the dashboard
    except importlib.metadata.PackageNotFoundError:
        return "ray has no dashboard (Jobs API): pip install 'ray[default]>=2.50'"
    return None


def _ray_command() -> Path:
    return Path(sys.executable).parent / "ray"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def local_ray_head(scratch: Path, num_cpus: int = 2) -> Iterator[JobSubmissionClient]:
    """Start the head (see the module rules), yield a Jobs client once it has run a first
    (no-op) job, stop it at the end of the block. Raises ``RuntimeError`` (quoting its log) if it does not
    come up within ``START_TIMEOUT`` seconds."""
    from ray.job_submission import JobSubmissionClient

    home, log_path = scratch / "home", scratch / "ray-head.log"
    home.mkdir(parents=True, exist_ok=True)
    ports = {flag: _free_port() for flag in PORT_FLAGS}
    command = [str(_ray_command()), "start", "--head", "--block", "--node-ip-address=127.0.0.1",
               "--dashboard-host=127.0.0.1", "--include-dashboard=true", f"--num-cpus={num_cpus}",
               f"--temp-dir={scratch / 'ray'}", "--disable-usage-stats",
               *(f"--{flag}={port}" for flag, port in ports.items())]
    env = dict(os.environ, **RAY_ENV, HOME=str(home),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    with _environment(RAY_ENV), log_path.open("w") as log:
        head = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            client = _connect(JobSubmissionClient, f"http://127.0.0.1:{ports['dashboard-port']}", head, log_path)
            _await_job_agent(client, time.monotonic() + START_TIMEOUT)
            yield client
        finally:
            _stop(head)


def _connect(client_type: type[JobSubmissionClient], address: str, head: subprocess.Popen[bytes],
             log_path: Path) -> JobSubmissionClient:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            return client_type(address)
        except Exception as error:  # noqa: BLE001 - the dashboard is not up yet (connection refused, 5xx)
            if head.poll() is not None or time.monotonic() > deadline:
                state = f"exited with {head.returncode}" if head.poll() is not None else f"not up after {START_TIMEOUT:g} s"
                tail = log_path.read_text(errors="replace")[-1500:]
                raise RuntimeError(f"the Ray head {state} ({type(error).__name__}); {log_path}: {tail}") from None
        time.sleep(0.2)


def _await_job_agent(client: JobSubmissionClient, deadline: float) -> None:
    """Submit a no-op job until the head has a job agent (its dashboard answers before that with
    "No available agent to submit job"), and wait for that job to end."""
    while True:
        try:
            job_id = client.submit_job(entrypoint="true")
            break
        except RuntimeError as error:
            if "No available agent" not in str(error) or time.monotonic() > deadline:
                raise
        time.sleep(0.2)
    while not client.get_job_status(job_id).is_terminal():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the Ray head's first job {job_id} did not finish in time")
        time.sleep(0.05)


def _stop(head: subprocess.Popen[bytes]) -> None:
    if head.poll() is None:
        head.send_signal(signal.SIGTERM)
    try:
        head.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(head.pid, signal.SIGKILL)  # anything of its session still running
    head.wait()
