"""Benchmark the usage path: the sampler's cost, the dashboard's query, how soon a change shows, and
the sparkline's draw.

Run: ``.venv/bin/python bench/usage.py [--tasks N] [--passes P] [--query-tasks T] [--samples S] [--twin]
[--lab] [--steps K] [--spark-repeat R]``

1. Sampling cost: ``N`` task-like processes (default 100, each ``sleep`` leading its own session, as
   the runner starts attempts) sampled ``P`` times by ``controller.stats.sampler.Sampler`` into a fresh
   store; the sampler's CPU time per pass over its interval, as % of one core. Goal: <= 1%.
2. The dashboard's latest-per-task query (``client.usage.latest_usage_sql``, ``QUALIFY``) over
   ``T`` tasks (default 10,000) with ``S`` samples each (default 5), through ``controller.stats.stats``
   (DataFusion over the in-memory batches), warm, median of 9 runs. Goal: <= 50 ms.
3. With ``--twin``: the same query, the same rows, over the wire (``FrayClient.query_stats``) to a
   real embedded controller and to a genuine Iris local cluster (rows written to its finelog with
   finelog's own client), median of 9 each, and their ratio. Goal: the embedded one no slower.
4. With ``--lab``: ``bench/usage_sidebar.py``'s figures in a real JupyterLab and Chromium: a task's
   memory change shown by the REST route and by the sidebar (goal: <= 2 s each, the worst of ``K``
   changes; peer: the controller's sample interval), and an hour of samples drawn as the sidebar's
   sparklines (goal: <= 16 ms, first draw and redraw, median of ``R``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "ui"))

from bench.results import Figure, record, skipped
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.usage import latest_usage_sql
from fray_jupyter.controller.stats.sampler import INTERVAL_S, Sampler, Target
from fray_jupyter.controller.stats.stats import Stats
from fray_jupyter.controller.store.store import Store

BENCH = "usage"
COST_GOAL_PCT = 1.0
WRITE_CHUNK = 2500
QUERY_GOAL_MS = 50.0


def _report(name: str, value: float, unit: str, goal: float, peer: str = "") -> None:
    passed = value <= goal
    shown = f"{value:.2f} {unit}" + (f" ({peer})" if peer else "")
    print(f"  {name}: {shown} [goal <= {goal:g} {unit}: {'pass' if passed else 'MISS'}]")
    record(Figure(BENCH, name, shown, f"<= {goal:g} {unit}", passed))


def sampling_cost(root: Path, tasks: int, passes: int) -> float:
    """% of one core the sampler spends on ``tasks`` running tasks at its interval."""
    processes = [subprocess.Popen(["sleep", "600"], start_new_session=True) for _ in range(tasks)]
    store = Store(root / "cost.sqlite3")
    try:
        targets = [Target(f"uid-{i}", "/bench/usage", i, 0, process.pid, root) for i, process in enumerate(processes)]
        sampler = Sampler(lambda: targets, Stats(store))
        sampler.sample_once()
        started = time.process_time()
        for _ in range(passes):
            sampler.sample_once()
        per_pass = (time.process_time() - started) / passes
    finally:
        for process in processes:
            process.kill()
            process.wait()
        store.close()
    return per_pass / INTERVAL_S * 100


def query_ms(root: Path, tasks: int, samples: int) -> float:
    """Median warm milliseconds of the dashboard's latest-per-task query over ``tasks`` tasks."""
    store = Store(root / "query.sqlite3")
    stats = Stats(store)
    now = int(time.time() * 1000)
    for sample in range(samples):
        stats.append("iris.task", "/bench/big", [
            {"task_id": f"/bench/big/{task}", "attempt_id": 0, "worker_id": "w", "ts": now - 1000 * (samples - sample),
             "cpu_millicores": task % 1000, "memory_mb": sample, "disk_mb": 0, "memory_peak_mb": sample}
            for task in range(tasks)])
    sql = latest_usage_sql(f"/bench/big/{task}" for task in range(tasks))
    stats.query(sql)  # warm: the batches are read into memory once
    times = []
    for _ in range(9):
        started = time.perf_counter()
        _, rows = stats.query(sql)
        times.append((time.perf_counter() - started) * 1000)
        assert rows == tasks
    store.close()
    return statistics.median(times)


def _rows(tasks: int, samples: int) -> list[list[dict[str, object]]]:
    now = int(time.time() * 1000)
    return [[{"task_id": f"/bench/big/{task}", "attempt_id": 0, "worker_id": "w", "ts": now - 1000 * (samples - sample),
              "cpu_millicores": task % 1000, "memory_mb": sample, "disk_mb": 0, "memory_peak_mb": sample}
             for task in range(tasks)] for sample in range(samples)]


def _median_ms(client: FrayClient, sql: str, tasks: int) -> float:
    assert len(client.query_stats(sql)) == tasks  # warm, and every task answered
    times = []
    for _ in range(9):
        started = time.perf_counter()
        client.query_stats(sql)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def over_the_wire(root: Path, tasks: int, samples: int) -> tuple[float, float]:
    """Median ms of the query on a real embedded controller and on the twin, the same rows on both."""
    from datetime import UTC, datetime

    from finelog.client import LogClient
    from iris.cluster.stats.tables import IrisTaskStat

    from fray_jupyter.controller import iris_local
    from tests.controller_harness import start_controller, stop_quietly

    batches = _rows(tasks, samples)
    sql = latest_usage_sql(f"/bench/big/{task}" for task in range(tasks))
    store = Store(root / "state" / "controller.sqlite3")
    for batch in batches:
        Stats(store).append("iris.task", "/bench/big", batch)
    store.close()
    controller = start_controller(root / "state")
    try:
        with FrayClient(controller.info.url, controller.info.token) as client:
            embedded = _median_ms(client, sql, tasks)
    finally:
        stop_quietly(controller)
    with iris_local.iris_local_cluster(root / "twin") as url:
        finelog = LogClient.connect(url + "/proxy/system.log-server")
        table = finelog.get_table("iris.task", IrisTaskStat)
        rows = [row for batch in batches for row in batch]
        for start in range(0, len(rows), WRITE_CHUNK):  # the client buffers at most 10,000 rows: never overflow it
            table.write([IrisTaskStat(**{**row, "ts": datetime.fromtimestamp(int(row["ts"]) / 1000, UTC)  # type: ignore[arg-type]
                                         .replace(tzinfo=None)}) for row in rows[start:start + WRITE_CHUNK]])
            if (flushed := table.flush(timeout=120)) != "succeeded":
                raise RuntimeError(f"the twin's finelog did not take the rows: {flushed}")
        finelog.close()
        with FrayClient(url) as client:
            held = client.query_stats('SELECT count(*) AS n FROM "iris.task"')[0]["n"]
            if held != len(rows):
                raise RuntimeError(f"the twin holds {held} of the {len(rows)} rows written")
            twin = _median_ms(client, sql, tasks)
    return embedded, twin


def in_the_lab(root: Path, steps: int, repeat: int) -> None:
    """``bench/usage_sidebar.py``'s figures (module docstring, 4.), recorded."""
    from labserver import running_lab

    from bench import usage_sidebar
    from fray_jupyter.controller.stats.sampler import INTERVAL_S as SAMPLE_S
    from fray_jupyter.runtime_file import RUNTIME_FILE_NAME
    from tests.controller_harness import start_controller, stop_quietly

    with running_lab(root / "lab") as lab:
        controller = start_controller(root / "lab-state", runtime_file=lab.root.parent / "runtime" / RUNTIME_FILE_NAME)
        try:
            with FrayClient(controller.info.url, controller.info.token) as client:
                folder = root / "grower"
                folder.mkdir()
                rest, sidebar = usage_sidebar.freshness(lab, client, folder, steps)
        finally:
            stop_quietly(controller)
    goal = usage_sidebar.FRESH_GOAL_S
    for where, seconds in (("REST (GET /fray/jobs/<id>/usage)", rest), ("the sidebar's job view", sidebar)):
        print(f"  {where}: {', '.join(f'{s:.2f}' for s in seconds)} s after each change")
        _report(f"memory change shown by {where}, worst of {len(seconds)}", max(seconds), "s", goal,
                f"sampled every {SAMPLE_S:g} s")
    try:
        first, redraw, points = usage_sidebar.sparkline_ms(repeat)
    except FileNotFoundError as error:
        skipped(BENCH, "an hour of samples drawn as sparklines", f"<= {usage_sidebar.DRAW_GOAL_MS:g} ms", str(error))
        return
    for what, value in (("first draw", first), ("redraw", redraw)):
        _report(f"an hour of samples as the sidebar's sparklines ({points} points each), {what}, median of {repeat}",
                value, "ms", usage_sidebar.DRAW_GOAL_MS, "Chromium")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--query-tasks", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--twin", action="store_true", help="also compare with a genuine Iris local cluster")
    parser.add_argument("--lab", action="store_true", help="also the REST, sidebar and sparkline figures (Chromium)")
    parser.add_argument("--steps", type=int, default=5, help="--lab: memory changes watched")
    parser.add_argument("--spark-repeat", type=int, default=20, help="--lab: sparkline draws timed")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        _report(f"sampling {args.tasks} running tasks (% of one core)", sampling_cost(root, args.tasks, args.passes),
                "%", COST_GOAL_PCT)
        _report(f"latest-per-task query over {args.query_tasks:,} tasks", query_ms(root, args.query_tasks, args.samples),
                "ms", QUERY_GOAL_MS)
        if args.twin:
            embedded, twin = over_the_wire(root, args.query_tasks, args.samples)
            print(f"  over the wire: embedded {embedded:.1f} ms, twin {twin:.1f} ms")
            _report("latest-per-task query, embedded / twin", embedded / twin, "x", 1.0)
        if args.lab:
            in_the_lab(root, args.steps, args.spark_repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
