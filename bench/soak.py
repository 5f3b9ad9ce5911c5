"""Soak the embedded controller the way a notebook user does: re-run the same cell again and again.

Run: ``.venv/bin/python bench/soak.py [--runs N]`` (default 300; ``--runs 2000`` for the full soak).

One controller (4 slots, a 64 MiB state-dir cap, retention every 2 s) on a fresh state dir. Each
run re-submits the same cell-shaped job (``/soak/cell``, the task's Python printing one line, with
``existing_job_policy=RECREATE``) and waits for it to end; every 10th run first submits a version
whose task ignores SIGTERM, waits for it to run, and replaces it at once (so its replacement
starts while the old task is still stopping). Afterwards: jobs that did not end SUCCEEDED within
30 s (stuck), runs whose log is not exactly their own line (lost or mixed logs), the state dir
against its cap after a retention pass, and the controller's threads and task processes before,
half-way and after (its thread pool grows towards its bound, ``POOL_BOUND``, as the runs go: a
leak is growth past that bound, and, after a first half long enough to fill the pool, growth during
the second half). Goals: 0 stuck, 0 lost logs, state dir under its cap, no leaked threads or
processes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import Figure, record
from fray_jupyter.client import FrayClient
from fray_jupyter.controller.manage import admin_call
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.runtime_file import read_runtime_file

C = controller_pb2.Controller
J = job_pb2
CAP = 64 * 2**20
CELL = "exec $IRIS_PYTHON -c 'import os; print(\"run\", os.environ[\"RUN\"])'"
STUBBORN = "trap '' TERM; echo stubborn-$RUN; sleep 30"
POOL_BOUND = min(32, (os.cpu_count() or 1) + 4)
"""Threads asyncio's default executor may start (``asyncio.to_thread``): the controller's pool."""
TERMINAL = {J.JOB_STATE_SUCCEEDED, J.JOB_STATE_FAILED, J.JOB_STATE_KILLED, J.JOB_STATE_WORKER_FAILED,
            J.JOB_STATE_UNSCHEDULABLE}


def request(command: str, run: int) -> C.LaunchJobRequest:
    job = JobRequest(name="cell", entrypoint=Entrypoint.from_binary("bash", ["-c", command]),
                     resources=ResourceConfig(cpu=1, ram="256m", disk="1g"))
    launch = plan(job, user="soak").request
    launch.environment.env_vars["RUN"] = str(run)
    launch.existing_job_policy = J.EXISTING_JOB_POLICY_RECREATE
    return launch


def descendants(pid: int) -> list[int]:
    """Live processes below ``pid`` (tasks run in their own sessions but stay its children)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def threads(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


def wait_end(client: FrayClient, job_id: str, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while (state := client.status(job_id).state) not in TERMINAL and time.monotonic() < deadline:
        time.sleep(0.01)
    return int(state)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fray-soak-"))
    runtime_file = root / "runtime.json"
    log = (root / "controller.log").open("ab")
    process = subprocess.Popen([sys.executable, "-m", "fray_jupyter.controller", "--state-dir", str(root / "state"),
                                "--runtime-file", str(runtime_file), "--slots", "4", "--max-state-size", str(CAP),
                                "--gc-interval", "2"], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while (info := read_runtime_file(runtime_file)) is None:
        assert process.poll() is None and time.monotonic() < deadline, (root / "controller.log").read_text()
        time.sleep(0.05)
    stuck = lost = 0
    try:
        with FrayClient(info.url, info.token, timeout=30) as client:
            client.list()
            threads_before, processes_before = threads(process.pid), len(descendants(process.pid))
            started = time.perf_counter()
            for run in range(args.runs):
                if run % 10 == 5:
                    job_id = client.submit(request(STUBBORN, run))
                    while client.status(job_id).state not in (J.JOB_STATE_RUNNING, *TERMINAL):
                        time.sleep(0.005)
                job_id = client.submit(request(CELL, run))
                if wait_end(client, job_id) != J.JOB_STATE_SUCCEEDED:
                    stuck += 1
                    print(f"  run {run}: stuck or failed: {client.status(job_id)}", flush=True)
                lines = [entry.data for entry in client.logs(job_id).entries]
                if lines != [f"run {run}"]:
                    lost += 1
                    print(f"  run {run}: log {lines[:3]}", flush=True)
                if run == args.runs // 2:
                    threads_middle = threads(process.pid)
                if run and run % 100 == 0:
                    print(f"  {run} runs, {time.perf_counter() - started:.0f} s", flush=True)
            elapsed = time.perf_counter() - started
            deadline = time.monotonic() + 15
            while descendants(process.pid) and time.monotonic() < deadline:  # the last stubborn task ends
                time.sleep(0.1)
            admin_call(info, "gc")
            status = admin_call(info, "status")
            threads_after, processes_after = threads(process.pid), len(descendants(process.pid))
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()
    state_ok = status["state_bytes"] <= CAP
    figures = [
        Figure("soak", f"re-runs of one cell ({args.runs}, every 10th replaced while stopping)",
               f"{elapsed:.0f} s ({elapsed / args.runs * 1000:.0f} ms per run)"),
        Figure("soak", "stuck jobs", str(stuck), "0", stuck == 0),
        Figure("soak", "runs with lost or mixed logs", str(lost), "0", lost == 0),
        Figure("soak", "state dir after retention", f"{status['state_bytes'] / 2**20:.1f} MiB of {CAP / 2**20:.0f} MiB",
               "under cap", state_ok),
        Figure("soak", "controller threads before / half-way / after",
               f"{threads_before} / {threads_middle} / {threads_after}",
               f"<= max(half-way, before + pool {POOL_BOUND})", threads_after <= max(threads_middle, threads_before + POOL_BOUND)),
        Figure("soak", "task processes before / after", f"{processes_before} / {processes_after}", "no leak",
               processes_after <= processes_before),
    ]
    for figure in figures:
        goal = f"  [goal {figure.goal}: {figure.verdict}]" if figure.goal else ""
        print(f"{figure.name}: {figure.value}{goal}")
        record(figure)
    print(json.dumps({key: status[key] for key in ("jobs", "jobs_cleaned", "log_lines")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
