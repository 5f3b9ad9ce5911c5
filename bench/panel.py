"""Benchmark the status panel's refresh of a coordinator with many running steps: what following a
live tree costs the controller and the kernel.

Run: ``.venv/bin/python bench/panel.py [--children N]``

A real embedded controller (``--slots`` N + 2) runs a coordinator whose task submits ``N`` steps
(default 50, each ``sleep``) through fray-jupyter's Fray client and waits. Once every step runs, a
``JobStatusPanel`` (not displayed, refreshed by hand) is refreshed ``REFRESHES`` times; each refresh's
wall time and RPC calls are counted. Its peer, measured in the same run against the same tree, is
the naive refresh a panel would make without ListJobs scopes: GetJobStatus and ListTasks of every
step. Goals: a refresh makes at most one ListJobs CHILDREN call per parent shown (here 1), whatever
the number of steps, and takes <= 100 ms (median); the ratio against the naive refresh is recorded.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import Figure, record
from fray_jupyter.client.client import FrayClient
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.widgets.status import JobStatusPanel
from tests.controller_harness import start_controller, stop_quietly

BENCH = "panel"
REFRESH_GOAL_MS = 100.0
REFRESHES = 20
COORDINATOR = """
import sys
from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, fray_client
client = fray_client()
steps = [client.submit(JobRequest(name=f"step-{i:03d}", entrypoint=Entrypoint.from_binary("sleep", ["600"]),
                                  resources=ResourceConfig.with_cpu(cpu=1, ram="64m", disk="1g")))
         for i in range(int(sys.argv[1]))]
steps[0].wait()
"""


class Counting:
    """Counts a client's calls: its ControllerService RPCs by method, and its Connect JSON calls (the
    status-text query, the log service) by path's last part."""

    def __init__(self, client: FrayClient) -> None:
        self.calls: Counter[str] = Counter()
        rpc, transport = client._call, client._transport
        json_call = transport.call_json  # type: ignore[attr-defined]

        def counted(method: str, *args: Any, **kwargs: Any) -> Any:
            self.calls[method] += 1
            return rpc(method, *args, **kwargs)

        def counted_json(path: str, *args: Any, **kwargs: Any) -> Any:
            self.calls[path.rsplit("/", 1)[-1]] += 1
            return json_call(path, *args, **kwargs)

        client._call = counted  # type: ignore[method-assign]
        transport.call_json = counted_json  # type: ignore[attr-defined]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--children", type=int, default=50, help="steps of the coordinator (default 50)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fray-bench-panel-") as scratch:
        script = Path(scratch) / "coord.py"
        script.write_text(COORDINATOR)
        controller = start_controller(Path(scratch) / "state", "--slots", str(args.children + 2))
        try:
            with FrayClient(controller.info.url, controller.info.token) as client:
                job = JobRequest(name="bench-coordinator", resources=ResourceConfig(cpu=1, ram="256m", disk="1g"),
                                 entrypoint=Entrypoint.from_binary(sys.executable, [str(script), str(args.children)]))
                root = client.submit(plan(job, user="bench"))
                deadline = time.monotonic() + 120
                while True:
                    steps = client.children(root)
                    if len(steps) == args.children and all(s.state == job_pb2.JOB_STATE_RUNNING for s in steps):
                        break
                    assert time.monotonic() < deadline, f"{len(steps)} steps, not all running after 120 s"
                    time.sleep(0.2)
                counting = Counting(client)
                panel = JobStatusPanel(client, root, start=False)
                panel.refresh()  # the first refresh: the log box's tail, the tree's first pages
                counting.calls.clear()
                times = []
                for _ in range(REFRESHES):
                    started = time.perf_counter()
                    panel.refresh()
                    times.append(time.perf_counter() - started)
                per_refresh = {method: count / REFRESHES for method, count in sorted(counting.calls.items())}
                naive = []
                for _ in range(REFRESHES):
                    started = time.perf_counter()
                    for step in steps:
                        client.status(step.job_id)
                        client.tasks(step.job_id)
                    naive.append(time.perf_counter() - started)
                assert panel.tree is not None and len(panel.tree.jobs()) == args.children
                client.terminate(root)
                panel.close()
        finally:
            stop_quietly(controller)
    refresh_ms, naive_ms = statistics.median(times) * 1000, statistics.median(naive) * 1000
    lists = per_refresh.get("ListJobs", 0)
    calls = sum(per_refresh.values())
    print(f"  RPCs per refresh: {calls:g} ({', '.join(f'{m} {c:g}' for m, c in per_refresh.items())})")
    print(f"  panel refresh, {args.children} running steps: median {refresh_ms:6.2f} ms "
          f"[goal <= {REFRESH_GOAL_MS:.0f} ms: {'pass' if refresh_ms <= REFRESH_GOAL_MS else 'MISS'}]")
    print(f"  naive refresh (GetJobStatus + ListTasks per step): median {naive_ms:6.2f} ms, "
          f"ratio {refresh_ms / naive_ms:.2f}")
    record(Figure(BENCH, f"ListJobs calls per panel refresh, {args.children} running steps", f"{lists:g}",
                  "<= 1 (one CHILDREN page per parent shown)", lists <= 1))
    record(Figure(BENCH, f"panel refresh of a {args.children}-step coordinator (median)", f"{refresh_ms:.2f} ms",
                  f"<= {REFRESH_GOAL_MS:.0f} ms", refresh_ms <= REFRESH_GOAL_MS))
    record(Figure(BENCH, "panel refresh vs naive per-step polling, same run",
                  f"{refresh_ms / naive_ms:.2f}x ({naive_ms:.2f} ms naive, {calls:g} vs "
                  f"{2 * args.children} RPCs)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
