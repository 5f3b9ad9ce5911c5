"""A script that forgets ``close()`` still exits by itself: every client, transport and in-process
cluster of ours is closed at interpreter exit (``fray_jupyter.client.transport.close_at_exit``).

Each script runs as a user writes it — ``c = connect(...)``, a verb, the end of the file — in its own
process; the test waits for that process to end (the hang guard is generous: it is there so a hang
fails the test instead of stalling the run, not to bound speed) and checks its exit code and output.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fray_jupyter.controller.iris_local import unavailable_reason
from fray_jupyter.iris.proto import job_pb2
from tests.controller_harness import ControllerProcess
from tests.marin_home import TWIN_MANIFEST, child_env, marin_home

HANG_GUARD = 120.0
"""Seconds after which a script that has not exited counts as hung (a hang guard, not a speed goal)."""


def run_script(source: str, tmp_path: Path, *, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``source`` as a script in a fresh Python; fail (killing it) if it has not exited within
    ``HANG_GUARD`` seconds."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    home = home or marin_home(tmp_path, {})
    try:
        return subprocess.run([sys.executable, str(script)], env=child_env(home), capture_output=True,
                              text=True, timeout=HANG_GUARD, check=False)
    except subprocess.TimeoutExpired as hung:
        pytest.fail(f"the script did not exit by itself (killed after {HANG_GUARD:g} s); its output so far: "
                    f"{hung.stdout!r} {hung.stderr!r}")


@pytest.mark.parametrize("transport", ["connect", "grpc"])
def test_a_script_without_close_exits(transport: str, controller: ControllerProcess, tmp_path: Path) -> None:
    """``connect(url=...)``, ``list()`` / ``logs()``, end of file: the script prints and exits 0."""
    url = controller.info.url if transport == "connect" else controller.info.grpc_url
    done = run_script(f"""
        from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, connect, plan

        c = connect(url={url!r}, token={controller.info.token!r})
        job = c.submit(plan(JobRequest(name="exit-{transport}", entrypoint=Entrypoint.from_binary("echo", ["hi"]),
                                       resources=ResourceConfig(cpu=1, ram="64m", disk="64m")), user="{transport}"))
        c.wait(job, timeout=60)
        print("jobs:", len(c.list(user="{transport}").jobs))
        print("logs:", [line.data for line in c.logs(job).entries])
    """, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "jobs: 1" in done.stdout and "logs: ['hi']" in done.stdout, done.stdout


@pytest.mark.skipif(unavailable_reason() is not None, reason="needs marin-iris[controller] (Python 3.12)")
def test_a_script_on_a_named_local_cluster_exits(tmp_path: Path) -> None:
    """``connect(cluster="twin")`` starts Iris's local cluster in the script's process; the job runs to
    SUCCEEDED, the result prints, and the process exits 0 without Iris's threads ticking on."""
    home = marin_home(tmp_path, {"twin": TWIN_MANIFEST})
    done = run_script("""
        from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, connect, plan

        c = connect(cluster="twin")
        job = c.submit(plan(JobRequest(name="exit-twin", entrypoint=Entrypoint.from_binary("echo", ["hi"]),
                                       resources=ResourceConfig(cpu=1, ram="64m", disk="64m")), user="alice"))
        print("state:", c.wait(job, timeout=90).state)
    """, tmp_path, home=home)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"state: {job_pb2.JOB_STATE_SUCCEEDED}" in done.stdout, done.stdout
    assert "cannot schedule new futures after interpreter shutdown" not in done.stderr, done.stderr[-3000:]
