"""Time the conformance oracle: wall time per ``Oracle.capture`` over a mix of Fray configs (goal:
median at most ``GOAL_MEDIAN_MS``, so the conformance suite's hundreds of captures stay cheap).

Run: ``.venv/bin/python bench/oracle_capture.py [N]`` (default N = 2000 captures).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "conformance"))

from fray.types import ANY_REGION, Entrypoint, EnvironmentConfig, JobRequest, ResourceConfig
from oracle import Oracle

from bench.results import Figure, record

BENCH = "oracle_capture"
GOAL_MEDIAN_MS = 25.0


def _configs() -> list[JobRequest]:
    echo = Entrypoint.from_binary("echo", ["hello"])
    resources = [
        ResourceConfig(),
        ResourceConfig.with_tpu("v5p-8", slice_count=2),
        ResourceConfig.with_tpu("v4-32"),
        ResourceConfig.with_tpu(["v6e-16", "v5litepod-16"]),
        ResourceConfig.with_gpu("H100", count=8, cpu=32, ram="512g", disk="256g", replicas=2),
        ResourceConfig.with_cpu(cpu=0.5, ram="6g", disk="16g", regions=[ANY_REGION], preemptible=False),
        ResourceConfig(
            regions=["us-central1", "us-central2"], zone="us-central1-a", target_cluster="cw-east"
        ),
    ]
    jobs = [JobRequest(name=f"bench-{i}", entrypoint=echo, resources=r) for i, r in enumerate(resources)]
    jobs.append(
        JobRequest(
            name="bench-env",
            entrypoint=echo,
            environment=EnvironmentConfig(workspace=".", env_vars={"A": "1"}, extras=["tpu"]),
        )
    )
    jobs.append(JobRequest(name="bench-callable", entrypoint=Entrypoint.from_callable(len, args=("abc",))))
    return jobs


def main(n: int) -> None:
    start = time.perf_counter()
    with Oracle() as oracle:
        ready = time.perf_counter() - start
        jobs = _configs()
        times: list[float] = []
        for i in range(n):
            job = jobs[i % len(jobs)]
            t0 = time.perf_counter()
            oracle.capture(job, user="bench")
            times.append(time.perf_counter() - t0)
        assert oracle.unexpected_calls() == []
    times.sort()
    ms = [t * 1000 for t in times]
    print(f"oracle start (imports + server + client + warm-up): {ready:.3f} s")
    print(
        f"{n} captures over {len(jobs)} configs: total {sum(times):.2f} s, "
        f"median {statistics.median(ms):.2f} ms, p95 {ms[int(0.95 * (n - 1))]:.2f} ms, max {ms[-1]:.2f} ms"
    )
    median = statistics.median(ms)
    passed = median <= GOAL_MEDIAN_MS
    print(f"capture (median): {median:.2f} ms [goal ≤ {GOAL_MEDIAN_MS:g} ms: {'pass' if passed else 'MISS'}]")
    record(Figure(BENCH, "capture (median)", f"{median:.2f} ms", f"≤ {GOAL_MEDIAN_MS:g} ms", passed))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
