"""Looking inside a running task on the embedded controller: how long a profile and an exec take, what
profiling costs the profiled task, and the capacity answer for a cluster of 1,000 workers.

Run: ``.venv/bin/python bench/inspection.py [--rounds R] [--window S] [--execs N] [--calls C]``

One controller (``tests/controller_harness``) whose cluster profile has ``WORKERS`` CPU workers up (a
scale group of 1-VM slices, all warm: ``ListWorkers`` lists each), running one busy task: a pure-Python
loop that appends ``(time, iterations)`` to a file every ``MARK_S`` s. Measured:

1. A 5 s CPU profile (``client.profile(task, "cpu", 5)``, py-spy's SVG flamegraph): wall time, median
   of ``--rounds``. Goal: <= 6 s. Peer, same run: ``py-spy record`` for 5 s on the same process with
   the controller's flags, run here directly.
2. Exec round trip (``client.exec(task, ["true"])``): median of ``--execs``. Goal: <= 100 ms. Peer:
   ``true`` started here (``subprocess.run``), the floor of starting a process.
3. What profiling costs the task: its iterations/s while py-spy samples it (each profile of 1., from
   1 s after the call until it returns) against the windows without py-spy just before and just
   after it (``--window`` s each; profiles and windows alternate); the slowdown, median of
   ``--rounds``. Goal: <= 10 %. The machine's load average is shown beside it: other work on the
   machine takes CPU from the task too.
4. The capacity answer for 1,000 workers: ``ListWorkers`` (every worker) plus ``GetAutoscalerStatus``,
   median of ``--calls``. Goal: <= 100 ms. Peer: the same two calls on a controller with the built-in
   profile (a few warm workers).
5. With ``--lab``: the sidebar's capacity view first opened on those 1,000 workers, to its first
   painted frame, in a real JupyterLab and Chromium (``bench/capacity_view.py``), median of
   ``--paints``. Goal: <= 300 ms. Peer: the same on the built-in profile.
"""

from __future__ import annotations

import argparse
import bisect
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from bench.actors import median_call_ms
from bench.results import Figure, record
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.inspection import InspectionFailed
from fray_jupyter.controller.runtime import profiling
from tests.controller_harness import launch_request, start_controller, stop_quietly

BENCH: Final[str] = "inspection"
WORKERS: Final[int] = 1000
PROFILE_S: Final[int] = 5
PROFILE_GOAL_S: Final[float] = 6.0
EXEC_GOAL_MS: Final[float] = 100.0
SLOWDOWN_GOAL_PCT: Final[float] = 10.0
CAPACITY_GOAL_MS: Final[float] = 100.0
MARK_S: Final[float] = 0.05
START_S: Final[float] = 120.0
"""Seconds the busy task may take to start before the bench gives up (a hang guard)."""
SETTLE_S: Final[float] = 1.0
"""Seconds after a profile call starts before its window counts (py-spy attaching)."""
PROFILE_YAML: Final[str] = f"""\
name: bench-{WORKERS}-workers
platform: {{local: {{}}}}
worker_provider: {{}}
controller: {{local: {{}}}}
scale_groups:
  cpu:
    num_vms: 1
    buffer_slices: {WORKERS}
    max_slices: {WORKERS}
    resources: {{cpu: 16, ram: 64GB, disk: 100GB, device_type: cpu, capacity_type: on-demand}}
    slice_template: {{local: {{}}}}
"""
BUSY: Final[str] = """
import os, sys, time
count, mark = 0, time.time()
with open(sys.argv[1], "a", buffering=1) as out:
    out.write(f"pid {os.getpid()}\\n")
    while True:
        for _ in range(2000):
            count += 1
        now = time.time()
        if now >= mark:
            out.write(f"{now} {count}\\n")
            mark = now + MARK
"""
"""The busy task: a pure-Python loop, its iteration count written every ``MARK_S`` s."""


def _report(name: str, value: float, unit: str, goal: float, peer: str) -> None:
    passed = value <= goal
    print(f"  {name}: {value:.2f} {unit} ({peer}) [goal <= {goal:g} {unit}: {'pass' if passed else 'MISS'}]")
    record(Figure(BENCH, name, f"{value:.2f} {unit} ({peer})", f"<= {goal:g} {unit}", passed))


class Counter:
    """The busy task's file of ``(time, iterations)`` marks."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def marks(self) -> tuple[list[float], list[int]]:
        times, counts = [], []
        for line in self.path.read_text().splitlines()[1:]:
            stamp, _, count = line.partition(" ")
            if count:
                times.append(float(stamp))
                counts.append(int(count))
        return times, counts

    @property
    def pid(self) -> int:
        return int(self.path.read_text().split("\n", 1)[0].split()[1])

    def rate(self, start: float, end: float) -> float:
        """Iterations per second between the marks nearest after ``start`` and before ``end``."""
        times, counts = self.marks()
        first, last = bisect.bisect_left(times, start), bisect.bisect_right(times, end) - 1
        if last <= first:
            raise RuntimeError(f"no marks between {start:.2f} and {end:.2f}")
        return (counts[last] - counts[first]) / (times[last] - times[first])

    def wait_until(self, moment: float) -> None:
        """Return once the task has written a mark after ``moment``."""
        while True:
            times, _ = self.marks()
            if times and times[-1] > moment:
                return
            time.sleep(MARK_S)


def profiled_rounds(client: FrayClient, task: str, counter: Counter, rounds: int,
                    window: float) -> list[tuple[float, float]]:
    """Per round, (seconds a ``PROFILE_S`` s CPU profile took, slowdown % of the task while it sampled):
    windows without py-spy (``window`` s) and profiles alternate, so each profile is compared with the
    window just before it and the one just after."""
    quiet = [time.time()]
    counter.wait_until(quiet[0] + window)
    profiled = []
    for _ in range(rounds):
        started, clock = time.time(), time.perf_counter()
        captured = client.profile(task, "cpu", PROFILE_S)
        took, ended = time.perf_counter() - clock, time.time()
        if b"<script" not in captured.data:
            raise RuntimeError(f"the profile of {task} is not a flamegraph (py-spy could not sample it)")
        profiled.append((started + SETTLE_S, ended, took))
        quiet.append(ended)
        counter.wait_until(ended + window)
    found = []
    for index, (start, end, took) in enumerate(profiled):
        without = statistics.mean(counter.rate(at, at + window) for at in quiet[index:index + 2])
        found.append((took, (1 - counter.rate(start, end) / without) * 100))
    return found


def wait_for_loop(client: FrayClient, task: str, counter: Counter) -> None:
    """Return once the task marks its count and py-spy sees its loop (within ``START_S``)."""
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if counter.path.exists() and counter.marks()[0]:
            try:
                if "<module>" in client.profile(task, "threads").text():
                    return
            except InspectionFailed:
                pass  # not running yet
        time.sleep(MARK_S)
    raise RuntimeError(f"{task} did not start its loop within {START_S:.0f} s")


def py_spy_alone(pid: int, scratch: Path) -> float:
    """Seconds ``py-spy record`` takes for ``PROFILE_S`` s on ``pid`` with the controller's flags."""
    py_spy = profiling.tool("py-spy")
    if py_spy is None:
        raise RuntimeError("py-spy is not installed")
    started = time.perf_counter()
    subprocess.run([py_spy, "record", "--pid", str(pid), "--duration", str(PROFILE_S), "--rate",
                    str(profiling.DEFAULT_RATE_HZ), "--format", "flamegraph", "--output", str(scratch / "alone.svg"),
                    "--subprocesses", "--native"], check=True, capture_output=True)
    took = time.perf_counter() - started
    subprocess.run(["kill", "-CONT", str(pid)], check=False)  # as the controller does after py-spy
    return took


def capacity_ms(client: FrayClient, calls: int) -> tuple[float, int]:
    """(median ms of ListWorkers + GetAutoscalerStatus, workers listed)."""
    listed = len(client.workers().workers)

    def answer() -> None:
        client.workers()
        client.autoscaler_status()

    return median_call_ms(answer, calls, warmup=1), listed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=5, help="profiles, each between two windows without py-spy")
    parser.add_argument("--window", type=float, default=PROFILE_S - SETTLE_S,
                        help="seconds of each window without py-spy")
    parser.add_argument("--execs", type=int, default=50)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--lab", action="store_true", help="also the capacity view's first paint (Chromium)")
    parser.add_argument("--paints", type=int, default=5, help="--lab: first opens timed, each on a fresh page")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fray-bench-inspect-") as scratch:
        root = Path(scratch)
        (root / "workers.yaml").write_text(PROFILE_YAML)
        controller = start_controller(root / "state", "--cluster-config", str(root / "workers.yaml"))
        try:
            with FrayClient(controller.info.url, controller.info.token) as client:
                counter = Counter(root / "marks.txt")
                code = BUSY.replace("MARK", repr(MARK_S))
                job = client.submit(launch_request("busy", f"exec {shlex.quote(sys.executable)} -c "
                                                           f"{shlex.quote(code)} {shlex.quote(str(counter.path))}"))
                task = f"{job}/0"
                wait_for_loop(client, task, counter)
                rounds = profiled_rounds(client, task, counter, args.rounds, args.window)
                alone = py_spy_alone(counter.pid, root)
                exec_ms = median_call_ms(lambda: client.exec(task, ["true"]), args.execs, warmup=1)
                local_ms = median_call_ms(lambda: subprocess.run(["true"], check=True), args.execs, warmup=1)
                big_ms, listed = capacity_ms(client, args.calls)
                client.terminate(job)
        finally:
            stop_quietly(controller)
        small = start_controller(root / "small")
        try:
            with FrayClient(small.info.url, small.info.token) as client:
                small_ms, small_listed = capacity_ms(client, args.calls)
        finally:
            stop_quietly(small)
    took = statistics.median(seconds for seconds, _ in rounds)
    slowdown = statistics.median(pct for _, pct in rounds)
    print(f"  slowdown per round (%): {', '.join(f'{pct:.1f}' for _, pct in rounds)}")
    load = os.getloadavg()[0]
    _report(f"{PROFILE_S} s CPU profile, call to answer (median of {len(rounds)})", took, "s", PROFILE_GOAL_S,
            f"py-spy alone {alone:.2f} s")
    _report(f"exec round trip, embedded (median of {args.execs})", exec_ms, "ms", EXEC_GOAL_MS,
            f"a local `true` {local_ms:.2f} ms")
    _report("profiled task slowed while py-spy samples it", slowdown, "%", SLOWDOWN_GOAL_PCT,
            f"median of {len(rounds)}, iterations/s against the windows before and after; "
            f"load {load:.1f} on {os.cpu_count()} cores")
    if listed != WORKERS:
        raise RuntimeError(f"the controller listed {listed} workers, not {WORKERS}")
    _report(f"capacity answer, {WORKERS:,} workers (ListWorkers + GetAutoscalerStatus)", big_ms, "ms",
            CAPACITY_GOAL_MS, f"{small_listed} workers: {small_ms:.2f} ms")
    if args.lab:
        capacity_paint(args.paints)
    return 0


def capacity_paint(rounds: int) -> None:
    """``bench/capacity_view.py``'s figure (module docstring, 5.), recorded."""
    from bench import capacity_view

    with tempfile.TemporaryDirectory(prefix="fray-bench-capacity-") as scratch:
        root = Path(scratch)
        (root / "workers.yaml").write_text(PROFILE_YAML)
        big_ms, drawn = capacity_view.in_the_lab(root / "big", ("--cluster-config", str(root / "workers.yaml")), rounds)
        small_ms, _ = capacity_view.in_the_lab(root / "small", (), rounds)
    _report(f"capacity view first painted, {WORKERS:,} workers ({drawn} rows in the page; median of {rounds})",
            big_ms, "ms", capacity_view.GOAL_MS, f"built-in profile: {small_ms:.0f} ms")


if __name__ == "__main__":
    sys.exit(main())
