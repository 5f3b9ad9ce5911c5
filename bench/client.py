"""Round-trip time of ``FrayClient.status()`` against the embedded controller (Connect and gRPC)
and a real Iris local controller (Connect only: it refuses HTTP/2), side by side in one run.

Run: ``.venv/bin/python bench/client.py [N]`` (default N = 200 calls per row, after 50 warm-up calls).

Rules: both controllers run at the same time and the rows are measured in interleaved rounds of
``ROUND`` calls each, so a busy machine slows every row alike and the ratio stays fair. Each row
polls one job submitted first, on one kept-alive connection. The ``stock httpx`` row sends the
same ``GetJobStatus`` to the real Iris controller through a plain ``httpx.Client`` (what the client
did before ``transport.PromptStream``): it shows the ~40 ms delayed-ACK stalls that the prompt
stream removes. The ``Iris's own client`` row sends it through Iris's generated Connect client
(``iris.rpc.controller_connect.ControllerServiceClientSync``, what Marin's tools use): the peer. It
stalls on the same delayed ACKs as stock httpx (~44 ms a call, measured), so the goal is: our client
against the real Iris ≤ ``RATIO_GOAL`` × Iris's own client against the same controller, medians — a
regression to the stalls would be ~1×. The embedded controller's row is shown beside them (how much
of a call is Iris's server).
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import Figure, record, skipped
from fray_jupyter.client import FrayClient
from fray_jupyter.client.discovery import start_controller
from fray_jupyter.controller.iris_local import unavailable_reason
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.environment import EnvironmentConfig
from tests.real_iris import real_iris_controller

BENCH = "client"
PEER = "real Iris, Iris's own client"
WARM_UP = 50
ROUND = 10
STOCK_CALLS = 30
RATIO_GOAL = 0.5


def submit(client: FrayClient, scratch: Path) -> str:
    job = JobRequest(name="bench-status", entrypoint=Entrypoint.from_binary("true"),
                     resources=ResourceConfig(cpu=1, ram="512m", disk="1g"),
                     environment=EnvironmentConfig(workspace=str(scratch), setup_scripts=[]))
    return client.submit(plan(job, user="bench"))


def status_call(client: FrayClient, scratch: Path) -> Callable[[], object]:
    job_id = submit(client, scratch)
    return lambda: client.status(job_id)


def stock_httpx_call(url: str, job_id: str) -> tuple[Callable[[], object], httpx.Client]:
    """``GetJobStatus`` as the client sent it before ``PromptStream``: a default ``httpx.Client``."""
    http = httpx.Client(trust_env=False, headers={"connect-protocol-version": "1",
                                                   "content-type": "application/proto"})
    body = Controller.GetJobStatusRequest(job_id=job_id).SerializeToString()
    target = f"{url}/iris.cluster.ControllerService/GetJobStatus"
    return (lambda: http.post(target, content=body).raise_for_status()), http


def iris_own_call(url: str, job_id: str) -> Callable[[], object]:
    """``GetJobStatus`` through Iris's own generated Connect client (its classes, not ours)."""
    from iris.rpc import controller_pb2 as iris_controller
    from iris.rpc.controller_connect import ControllerServiceClientSync

    client = ControllerServiceClientSync(address=url, timeout_ms=30_000)
    request = iris_controller.Controller.GetJobStatusRequest(job_id=job_id)
    return lambda: client.get_job_status(request)


def sample(call: Callable[[], object], count: int, into: list[float]) -> None:
    for _ in range(count):
        started = time.perf_counter()
        call()
        into.append((time.perf_counter() - started) * 1e6)


def interleaved(rows: dict[str, Callable[[], object]], calls: int) -> dict[str, list[float]]:
    """Samples (µs) per row: ``WARM_UP`` calls each, then rounds of ``ROUND`` calls per row."""
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for call in rows.values():
        sample(call, WARM_UP, [])
    for _ in range(max(1, calls // ROUND)):
        for name, call in rows.items():
            sample(call, ROUND, samples[name])
    return samples


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
    real_name, embedded_name = "real Iris, Connect", "embedded, Connect"
    with tempfile.TemporaryDirectory() as scratch_dir, contextlib.ExitStack() as stack:
        scratch = Path(scratch_dir)
        url, grpc_url, token, up = stack.enter_context(embedded_controller(scratch / "embedded"))
        print(f"embedded controller auto-started in {up:.2f} s at {url} and {grpc_url}")
        rows = {embedded_name: status_call(stack.enter_context(FrayClient(url, token)), scratch),
                "embedded, gRPC": status_call(stack.enter_context(FrayClient(grpc_url, token)), scratch)}
        stock: list[float] = []
        if (reason := unavailable_reason("a real Iris local controller")) is not None:
            skipped(BENCH, "status() real Iris / embedded", f"≤ {RATIO_GOAL:g}×", reason)
        else:
            started = time.perf_counter()
            iris_url = stack.enter_context(real_iris_controller(scratch / "iris"))
            print(f"real Iris local controller up in {time.perf_counter() - started:.2f} s at {iris_url}")
            iris = stack.enter_context(FrayClient(iris_url))
            job_id = submit(iris, scratch)
            rows[real_name] = lambda: iris.status(job_id)
            rows[PEER] = iris_own_call(iris_url, job_id)
            stock_call, http = stock_httpx_call(iris_url, job_id)
            stack.callback(http.close)
            sample(stock_call, 3, [])
            sample(stock_call, STOCK_CALLS, stock)
        samples = interleaved(rows, calls)

    print(f"\nstatus() round trip, {calls} calls per row in rounds of {ROUND} (µs)")
    print(f"{'controller, transport':<34}{'median':>9}{'p90':>9}")
    medians = {}
    for name, values in [*samples.items(), *([("real Iris, Connect, stock httpx", stock)] if stock else [])]:
        median, p90 = statistics.median(values), statistics.quantiles(values, n=10)[-1]
        medians[name] = median
        print(f"{name:<34}{median:>9.0f}{p90:>9.0f}")
        record(Figure(BENCH, f"status() round trip, {name} (median)", f"{median:,.0f} µs"))
    if real_name in medians:
        server = medians[real_name] / medians[embedded_name]
        print(f"status() real Iris / embedded (Connect medians): {server:.1f}× (Iris's server does more per call)")
        ratio = medians[real_name] / medians[PEER]
        passed = ratio <= RATIO_GOAL
        print(f"status() against the real Iris, ours / Iris's own client: {ratio:.2f}× "
              f"[goal ≤ {RATIO_GOAL:g}×: {'pass' if passed else 'MISS'}]")
        record(Figure(BENCH, "status() against a real Iris: ours / Iris's own client (medians)",
                      f"{medians[real_name] / 1000:.2f} ms / {medians[PEER] / 1000:.2f} ms = {ratio:.2f}× "
                      f"(embedded: {medians[embedded_name] / 1000:.2f} ms)", f"≤ {RATIO_GOAL:g}×", passed))

if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
