"""The genuine Iris twin (``fray-jupyter controller --iris-local``, built-in profile) against the embedded
controller: the twin's start-up time and memory, and submit → first task RUNNING for a TPU job on a cold
slice (the autoscaler brings one up) and on a warm one (the slice is still up from the job before), beside
the embedded controller with the same profile.

Run: ``python bench/twin.py [--quick]`` (``--quick``: one variant instead of three, 2 warm runs each).
Also ``fit()`` against the twin (goal ≤ 50 ms uncached, ≤ 1 ms cached). The latencies are figures only
(no goals): the twin is the correctness oracle, not a competitor; the embedded controller's own latency
goal is in ``controller.py``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil

from bench.fit import CACHED_GOAL_MS, measure
from bench.results import Figure, record, skipped
from fray_jupyter.client.client import FrayClient
from fray_jupyter.controller import iris_local
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.planning import Plan, plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.environment import EnvironmentConfig
from tests.controller_harness import start_controller, stop_quietly

BENCH: Final[str] = "twin"
VARIANTS: Final[tuple[str, ...]] = ("v5p-8", "v4-8", "v6e-8")
POLL_S: Final[float] = 0.005
TIMEOUT_S: Final[float] = 60.0
TWIN_FIT_GOAL_MS: Final[float] = 50.0


def _plan(variant: str, index: int, workspace: Path) -> Plan:
    job = JobRequest(name=f"bench-{variant}-{index}-{time.time_ns()}", entrypoint=Entrypoint.from_binary("sleep", ["2"]),
                     resources=ResourceConfig.with_tpu(variant),
                     environment=EnvironmentConfig(workspace=str(workspace), setup_scripts=[]))
    return plan(job, user="bench")


def time_to_running(client: FrayClient, p: Plan) -> float:
    """Seconds from LaunchJob to the job's first RUNNING; the job (``sleep 2``) is then waited for, so the
    next one finds its slice idle (a terminated task keeps its worker busy while Iris cleans it up)."""
    started = time.perf_counter()
    job_id = client.submit(p)
    while (state := client.status(job_id).state) == job_pb2.JOB_STATE_PENDING:
        if time.perf_counter() - started > TIMEOUT_S:
            raise RuntimeError(f"{job_id} still PENDING after {TIMEOUT_S:.0f} s: {client.status(job_id).pending_reason}")
        time.sleep(POLL_S)
    elapsed = time.perf_counter() - started
    if state != job_pb2.JOB_STATE_RUNNING:
        raise RuntimeError(f"{job_id} ended {job_pb2.JobState.Name(state)} before RUNNING")
    final = client.wait(job_id, timeout=TIMEOUT_S)
    if final.state != job_pb2.JOB_STATE_SUCCEEDED:
        raise RuntimeError(f"{job_id} ended {job_pb2.JobState.Name(final.state)}")
    return elapsed


def samples(client: FrayClient, variants: tuple[str, ...], warm_runs: int, workspace: Path) -> tuple[list[float], list[float]]:
    """(first job of each variant, the warm runs after it) in seconds."""
    cold: list[float] = []
    warm: list[float] = []
    for variant in variants:
        cold.append(time_to_running(client, _plan(variant, 0, workspace)))
        warm.extend(time_to_running(client, _plan(variant, i, workspace)) for i in range(1, warm_runs + 1))
    return cold, warm


def fit_latency(client: FrayClient, job: Plan, calls: int) -> None:
    """``fit()`` against the twin, uncached and cached (``bench/fit.py`` measures the embedded controller)."""
    for cached, goal in ((False, TWIN_FIT_GOAL_MS), (True, CACHED_GOAL_MS)):
        median = measure(client, job, calls, cached=cached)
        name = f"fit() {'cached' if cached else 'uncached'}, twin, default profile"
        passed = median <= goal
        print(f"  {name}: {median:.3f} ms [goal ≤ {goal:g} ms: {'pass' if passed else 'MISS'}]")
        record(Figure(BENCH, f"{name} (median)", f"{median:.3f} ms", f"≤ {goal:g} ms", passed))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _report(label: str, cold: list[float], warm: list[float], first: Callable[[], str]) -> None:
    print(f"  {label}: cold {', '.join(_ms(c) for c in cold)}; warm median {_ms(statistics.median(warm))} "
          f"over {len(warm)} ({first()})")
    record(Figure(BENCH, f"submit -> RUNNING, {label}, cold slice (median of {len(cold)})", _ms(statistics.median(cold))))
    record(Figure(BENCH, f"submit -> RUNNING, {label}, warm slice (median of {len(warm)})", _ms(statistics.median(warm))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    variants = VARIANTS[:1] if args.quick else VARIANTS
    warm_runs = 2 if args.quick else 5
    reason = iris_local.unavailable_reason("the twin bench")
    if reason is not None:
        for name in ("twin start-up", "twin RSS", "submit -> RUNNING, twin"):
            skipped(BENCH, name, "", reason)
        return 0
    with tempfile.TemporaryDirectory(prefix="fray-bench-twin-") as scratch:
        root = Path(scratch)
        workspace = root / "workspace"
        workspace.mkdir()
        started = time.perf_counter()
        twin = iris_local.start(root / "iris.log", home=root / "home", tmp=root / "tmp")
        startup = time.perf_counter() - started
        try:
            process = psutil.Process(twin.process.pid)
            idle_rss = process.memory_info().rss
            print(f"  twin start-up {startup:.2f} s (process start, Iris import, LocalCluster.start); "
                  f"RSS {idle_rss / 2**20:.0f} MiB idle")
            record(Figure(BENCH, "twin start-up (built-in profile)", f"{startup:.2f} s"))
            record(Figure(BENCH, "twin RSS, idle", f"{idle_rss / 2**20:.0f} MiB"))
            with FrayClient(twin.url) as client:
                fit_latency(client, _plan("v5p-16", 0, workspace), 10 if args.quick else 50)
                cold, warm = samples(client, variants, warm_runs, workspace)
            busy_rss = process.memory_info().rss
            record(Figure(BENCH, f"twin RSS, {len(variants)} TPU slices up", f"{busy_rss / 2**20:.0f} MiB"))
            _report("twin", cold, warm, lambda: f"RSS {busy_rss / 2**20:.0f} MiB with the slices up")
        finally:
            twin.stop()
        controller = start_controller(root / "embedded", "--cluster-config", "default")
        try:
            with FrayClient(controller.info.url, controller.info.token) as client:
                cold, warm = samples(client, variants, warm_runs, workspace)
            _report("embedded", cold, warm, lambda: "no slice to boot: every task starts on a local slot")
        finally:
            stop_quietly(controller)
    return 0


if __name__ == "__main__":
    sys.exit(main())
