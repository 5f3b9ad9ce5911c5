"""Round-trip time of ``FrayClient.status()`` over Connect and gRPC, against a real Iris local
controller (Connect only: it refuses HTTP/2) and, when it is installed, the embedded controller.

Run: ``.venv/bin/python bench/client.py [N]`` (default N = 200 calls per row, after 50 warm-up calls).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import Figure, record, skipped
from fray_jupyter.client import FrayClient
from fray_jupyter.client.discovery import start_controller
from fray_jupyter.controller.iris_local import unavailable_reason
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.environment import EnvironmentConfig
from tests.real_iris import real_iris_controller

WARM_UP = 50


def measure(url: str, token: str | None, calls: int, scratch: Path) -> tuple[float, float]:
    """(median, p90) of ``status()`` in microseconds, on one job submitted first."""
    with FrayClient(url, token) as client:
        job = JobRequest(name="bench-status", entrypoint=Entrypoint.from_binary("true"),
                         resources=ResourceConfig(cpu=1, ram="512m", disk="1g"),
                         environment=EnvironmentConfig(workspace=str(scratch), setup_scripts=[]))
        job_id = client.submit(plan(job, user="bench"))
        for _ in range(WARM_UP):
            client.status(job_id)
        samples = []
        for _ in range(calls):
            started = time.perf_counter()
            client.status(job_id)
            samples.append((time.perf_counter() - started) * 1e6)
    return statistics.median(samples), statistics.quantiles(samples, n=10)[-1]


@contextlib.contextmanager
def embedded_controller(scratch: Path) -> Iterator[tuple[str, str, str, float]]:
    """(Connect URL, gRPC URL, token, seconds to start) of a freshly auto-started embedded controller."""
    started = time.perf_counter()
    info = start_controller(scratch / "runtime.json", scratch / "state")
    elapsed = time.perf_counter() - started
    try:
        yield info.url, info.grpc_url, info.token, elapsed
    finally:
        os.killpg(info.pid, signal.SIGTERM)


def main(calls: int) -> None:
    rows: list[tuple[str, str, float, float]] = []
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        started = time.perf_counter()
        if (reason := unavailable_reason("a real Iris local controller")) is not None:
            skipped("client", "status() round trip, real Iris, Connect", "", reason)
        else:
            with real_iris_controller(scratch / "iris") as url:
                print(f"real Iris local controller up in {time.perf_counter() - started:.2f} s at {url}")
                rows.append(("real Iris", "Connect", *measure(url, None, calls, scratch)))
        if importlib.util.find_spec("fray_jupyter.controller") is None:
            print("embedded controller: not installed, skipped")
        else:
            with embedded_controller(scratch / "embedded") as (url, grpc_url, token, up):
                print(f"embedded controller auto-started in {up:.2f} s at {url} and {grpc_url}")
                rows.append(("embedded", "Connect", *measure(url, token, calls, scratch)))
                rows.append(("embedded", "gRPC", *measure(grpc_url, token, calls, scratch)))
    print(f"\nstatus() round trip, {calls} calls each (µs)")
    print(f"{'controller':<12}{'transport':<10}{'median':>9}{'p90':>9}")
    for controller, transport, median, p90 in rows:
        print(f"{controller:<12}{transport:<10}{median:>9.0f}{p90:>9.0f}")
        record(Figure("client", f"status() round trip, {controller}, {transport} (median)", f"{median:,.0f} µs"))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
