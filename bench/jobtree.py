"""Benchmark ListJobs over a store of job trees: what the sidebar's tree asks the controller.

Run: ``.venv/bin/python bench/jobtree.py [--jobs N]``

The store is seeded (before the controller starts) with ``N`` finished 4-task jobs (default 10,000),
of which a tenth are roots and the rest children: one root has 500 children (the parent the sidebar
expands), the other children are spread over the remaining roots, a few of them with grandchildren.
Then, through ``FrayClient.list`` (Connect, binary proto: the call the server's ``/fray/jobs`` makes),
40 calls each, median wall time:

1. a ROOTS page of 50 (the sidebar's first view), against the flat page of 50 (scope ALL) measured
   in the same run;
2. the CHILDREN of the 500-child parent in one page of 500 (the ListJobs half of expanding it),
   against a flat page of 500.

Goals: (1) <= 20 ms; (2) <= 100 ms, the whole budget of expanding a 500-child parent to the DOM
(the sidebar's half is measured with it). Ratios are printed and recorded without goals: a scope
should cost about what the flat listing costs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import Figure, record
from fray_jupyter.client.client import FrayClient, JobPage
from tests.controller_harness import start_controller, stop_quietly
from tests.seeded_store import Seed, seed_store

BENCH = "jobtree"
ROOTS_GOAL_MS = 20.0
EXPAND_GOAL_MS = 100.0
WIDE = 500
CALLS = 40
BIG_PARENT = "/user0/coordinator-00000"


def tree_ids(count: int) -> list[tuple[str, str]]:
    """``(job id, parent id)`` of ``count`` jobs, parents first: a tenth are roots, ``WIDE``
    children under the first root, the rest spread over the others (every tenth with a child of
    its own)."""
    roots = [f"/user{i % 7}/coordinator-{i:05d}" for i in range(max(count // 10, 2))]
    jobs = [(root, "") for root in roots]
    jobs += [(f"{roots[0]}/step-{i:03d}", roots[0]) for i in range(min(WIDE, count - len(jobs)))]
    index = 0
    while len(jobs) < count:
        parent = roots[1 + index % (len(roots) - 1)]
        step = f"{parent}/step-{index:05d}"
        jobs.append((step, parent))
        if index % 10 == 0 and len(jobs) < count:
            jobs.append((f"{step}/sub", step))
        index += 1
    return jobs


def seed(state_dir: Path, count: int) -> None:
    """Store the tree as finished 4-task jobs, directly (what ``count`` earlier launches leave)."""
    now = int(time.time() * 1000)
    seed_store(state_dir, (Seed(job_id, parent, now - count + index)
                           for index, (job_id, parent) in enumerate(tree_ids(count))), replicas=4)


def median_ms(call: Callable[[], JobPage], expected: int) -> float:
    times = []
    for _ in range(CALLS):
        started = time.perf_counter()
        page = call()
        times.append(time.perf_counter() - started)
        assert len(page.jobs) == expected, (len(page.jobs), expected)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=10_000, help="jobs in the store (default 10,000)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fray-bench-jobtree-") as scratch:
        state = Path(scratch) / "state"
        seed(state, args.jobs)
        controller = start_controller(state)
        try:
            with FrayClient(controller.info.url, controller.info.token) as client:
                client.list(limit=1)  # open the connection
                flat = median_ms(lambda: client.list(user=None, scope="all", limit=50), 50)
                roots = median_ms(lambda: client.list(user=None, scope="roots", limit=50), 50)
                flat_wide = median_ms(lambda: client.list(user=None, scope="all", limit=WIDE), WIDE)
                children = median_ms(lambda: client.list(scope="children", parent=BIG_PARENT, limit=WIDE), WIDE)
                total = client.list(user=None, scope="roots", limit=1).total
        finally:
            stop_quietly(controller)
    children_total = args.jobs - total
    print(f"  store: {args.jobs:,} jobs, {total:,} roots, {children_total:,} children")
    print(f"  ROOTS page of 50:            median {roots:6.2f} ms   (flat page of 50: {flat:6.2f} ms, "
          f"ratio {roots / flat:.2f}) [goal <= {ROOTS_GOAL_MS:.0f} ms: {'pass' if roots <= ROOTS_GOAL_MS else 'MISS'}]")
    print(f"  CHILDREN of a 500-child job: median {children:6.2f} ms   (flat page of 500: {flat_wide:6.2f} ms, "
          f"ratio {children / flat_wide:.2f}) [goal <= {EXPAND_GOAL_MS:.0f} ms: "
          f"{'pass' if children <= EXPAND_GOAL_MS else 'MISS'}]")
    over = f"over {args.jobs:,} jobs ({children_total:,} children)"
    record(Figure(BENCH, f"ListJobs ROOTS page of 50 {over} (median)", f"{roots:.2f} ms",
                  f"<= {ROOTS_GOAL_MS:.0f} ms", roots <= ROOTS_GOAL_MS))
    record(Figure(BENCH, "ROOTS page vs flat page of 50, same run", f"{roots / flat:.2f}x ({flat:.2f} ms flat)"))
    record(Figure(BENCH, f"ListJobs CHILDREN of a {WIDE}-child job, one page (median)", f"{children:.2f} ms",
                  f"<= {EXPAND_GOAL_MS:.0f} ms (whole expand to DOM)", children <= EXPAND_GOAL_MS))
    record(Figure(BENCH, f"CHILDREN page vs flat page of {WIDE}, same run",
                  f"{children / flat_wide:.2f}x ({flat_wide:.2f} ms flat)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
