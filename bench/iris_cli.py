"""Marin's ``iris`` CLI end to end against the embedded controller and a genuine Iris local
controller, and the uv cache's effect on a workspace job.

Run: ``.venv/bin/python bench/iris_cli.py [--runs N]``

1. ``iris --controller-url URL job run -- true`` from an empty directory, wall time of the CLI
   process from start to exit (submit, stream logs, wait for SUCCEEDED), median of ``--runs``
   after one warm-up run, on the embedded controller and on a genuine Iris local controller
   (marin-iris[controller]; skipped with one line when it is not installed), both up at once and
   their runs taken in turn, so the machine's load falls on both alike; the ratio.
2. The same command from a small uv project (the client's default setup: ``uv sync`` of the
   workspace into the task's venv, plus Iris's runtime deps) on the embedded controller: the
   first run (empty uv cache: downloads) and the median of the next runs (cache warm).
Goals: (1) the embedded controller no slower than genuine Iris (ratio >= 1x); (2) a warm run
under 15 s. Figures are recorded for ``bench/run`` (``bench/results.py``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import Figure, record, skipped
from fray_jupyter.controller import iris_local
from tests.controller_harness import start_controller, stop_quietly

BENCH = "iris_cli"
IRIS = Path(sys.executable).with_name("iris")
RATIO_GOAL = 1.0
WARM_GOAL_S = 15.0
PROJECT = '[project]\nname = "bench-demo"\nversion = "0.1.0"\nrequires-python = ">=3.11"\ndependencies = []\n'


def run_job(url: str, cwd: Path, index: int) -> float:
    """Seconds for one ``iris job run -- true``; raises when the CLI fails."""
    env = {key: value for key, value in os.environ.items() if key != "MARIN_CLUSTER_TOKEN"}
    env["IRIS_USER"] = "bench"
    started = time.perf_counter()
    done = subprocess.run([str(IRIS), "--controller-url", url, "job", "run", "--job-name",
                           f"cli-{os.getpid()}-{cwd.name}-{index}", "--", "true"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"iris job run exited {done.returncode}: {done.stderr.strip().splitlines()[-1:]}")
    return elapsed


def samples(url: str, cwd: Path, runs: int) -> tuple[float, list[float]]:
    """(warm-up seconds, the next ``runs`` in seconds)."""
    return run_job(url, cwd, 0), [run_job(url, cwd, index) for index in range(1, runs + 1)]


def interleaved(urls: list[str], cwd: Path, runs: int) -> list[tuple[float, list[float]]]:
    """(warm-up seconds, ``runs`` timed runs) for each controller in ``urls``, the runs taken in
    turn (one on each, then again), so a machine that gets busier slows every controller alike."""
    warm_up = [run_job(url, cwd, 0) for url in urls]
    timed: list[list[float]] = [[] for _ in urls]
    for index in range(1, runs + 1):
        for times, url in zip(timed, urls):
            times.append(run_job(url, cwd, index))
    return list(zip(warm_up, timed))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    name = "iris job run -- true: embedded vs genuine Iris local"
    if not IRIS.exists():
        skipped(BENCH, name, f">= {RATIO_GOAL:.0f}x", f"no iris CLI at {IRIS} (needs marin-iris, Python 3.12)")
        return 0
    reason = iris_local.unavailable_reason("genuine Iris")
    with tempfile.TemporaryDirectory(prefix="fray-bench-iris-cli-") as scratch, ExitStack() as stack:
        root = Path(scratch)
        empty, project = root / "empty", root / "project"
        empty.mkdir()
        project.mkdir()
        (project / "pyproject.toml").write_text(PROJECT)
        controller = start_controller(root / "state")
        stack.callback(stop_quietly, controller)
        urls = [controller.info.url]
        if reason is None:
            urls.append(stack.enter_context(iris_local.iris_local_cluster(root / "genuine")))
        (cold, ours), *peer = interleaved(urls, empty, args.runs)
        ours_median = statistics.median(ours)
        print(f"1. embedded: median {ours_median:.2f} s over {len(ours)} runs (warm-up {cold:.2f} s)")
        record(Figure(BENCH, "iris job run -- true, embedded (median)", f"{ours_median:.2f} s"))
        if peer:
            (cold, theirs), = peer
            theirs_median = statistics.median(theirs)
            ratio = theirs_median / ours_median
            print(f"   genuine Iris local: median {theirs_median:.2f} s (warm-up {cold:.2f} s), runs taken in turn "
                  f"with the embedded ones; the embedded controller is {ratio:.2f}x as fast (goal >= {RATIO_GOAL:.0f}x)")
            record(Figure(BENCH, "iris job run -- true, genuine Iris local (median)", f"{theirs_median:.2f} s"))
            record(Figure(BENCH, name, f"{ratio:.2f}x", f">= {RATIO_GOAL:.0f}x", ratio >= RATIO_GOAL))
        else:
            skipped(BENCH, name, f">= {RATIO_GOAL:.0f}x", reason or "")
        first, warm = samples(controller.info.url, project, max(1, args.runs // 2))
        warm_median = statistics.median(warm)
        print(f"2. workspace job (uv sync): first run {first:.2f} s (empty uv cache), then median "
              f"{warm_median:.2f} s (goal < {WARM_GOAL_S:.0f} s)")
        record(Figure(BENCH, "workspace job, first run (empty uv cache)", f"{first:.2f} s"))
        record(Figure(BENCH, "workspace job, uv cache warm (median)", f"{warm_median:.2f} s",
                      f"< {WARM_GOAL_S:.0f} s", warm_median < WARM_GOAL_S))
    return 0


if __name__ == "__main__":
    sys.exit(main())
