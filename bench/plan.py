"""plan() cost for a multi-slice TPU job (goal: median <= 200 us on one core).

Run: .venv/bin/python bench/plan.py [iterations]
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import Figure, record
from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, plan

GOAL_US = 200.0


def main(iterations: int = 5000) -> None:
    job = JobRequest(
        name="bench", entrypoint=Entrypoint.from_binary("python", ["train.py"]),
        resources=ResourceConfig.with_tpu("v5p-64", slice_count=4, regions=["us-central1", "us-east5"],
                                          preemptible=False),
    )
    for _ in range(200):  # warm caches
        plan(job, user="bench")
    samples = []
    for _ in range(iterations):
        start = time.perf_counter_ns()
        plan(job, user="bench")
        samples.append((time.perf_counter_ns() - start) / 1000)
    median = statistics.median(samples)
    p95 = statistics.quantiles(samples, n=20)[-1]
    verdict = "pass" if median <= GOAL_US else "MISS"
    print(f"plan(v5p-64 x4 slices, 32 tasks): median {median:.1f} us, p95 {p95:.1f} us, "
          f"{1e6 / median:,.0f} plans/s  [goal <= {GOAL_US:.0f} us: {verdict}]")
    record(Figure("plan", "plan(v5p-64 x4 slices, 32 tasks) (median)", f"{median:.1f} µs ({1e6 / median:,.0f}/s)",
                  f"<= {GOAL_US:.0f} µs", median <= GOAL_US))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
