""""Will it fit?" latency: ``fit(plan, client)`` against the embedded controller, uncached (the two
capacity RPCs and the verdict) and cached (within ``CACHE_SECONDS``), with the built-in profile and
with Marin's 82-group manifest (``--cluster-config marin``, when marin-iris is installed).

Run: ``.venv/bin/python bench/fit.py [N]`` (default N = 100 calls per row). Goals: uncached ≤ 20 ms,
cached ≤ 1 ms (medians).
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import Figure, record, skipped
from fray_jupyter.client import FrayClient
from fray_jupyter.client.fit import CACHE, fit
from fray_jupyter.planning import Plan, plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from tests.controller_harness import start_controller, stop_quietly

BENCH = "fit"
UNCACHED_GOAL_MS, CACHED_GOAL_MS = 20.0, 1.0


@contextlib.contextmanager
def controller(scratch: Path, profile: str) -> Iterator[FrayClient]:
    started = start_controller(scratch / profile, "--cluster-config", profile, timeout=60)
    try:
        with FrayClient(started.info.url, started.info.token) as client:
            yield client
    finally:
        stop_quietly(started)


def measure(client: FrayClient, job: Plan, calls: int, *, cached: bool) -> float:
    """Median milliseconds of one ``fit()``; uncached calls clear the cache first."""
    fit(job, client)
    samples = []
    for _ in range(calls):
        if not cached:
            CACHE.clear()
        started = time.perf_counter()
        fit(job, client)
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main(calls: int) -> None:
    job = plan(JobRequest(name="fit", entrypoint=Entrypoint.from_binary("true"),
                          resources=ResourceConfig.with_tpu("v5p-16")), user="bench")
    with tempfile.TemporaryDirectory() as scratch:
        for profile in ("default", "marin"):
            if profile == "marin":
                try:
                    import iris.cluster.config  # noqa: F401
                except ImportError:
                    skipped(BENCH, "fit() uncached, marin profile", f"≤ {UNCACHED_GOAL_MS:g} ms", "needs marin-iris")
                    continue
            with controller(Path(scratch), profile) as client:
                for cached, goal in ((False, UNCACHED_GOAL_MS), (True, CACHED_GOAL_MS)):
                    median = measure(client, job, calls, cached=cached)
                    name = f"fit() {'cached' if cached else 'uncached'}, embedded controller, {profile} profile"
                    passed = median <= goal
                    print(f"{name}: {median:.3f} ms [goal ≤ {goal:g} ms: {'pass' if passed else 'MISS'}]")
                    record(Figure(BENCH, f"{name} (median)", f"{median:.3f} ms", f"≤ {goal:g} ms", passed))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
