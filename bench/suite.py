"""Run every bench in ``bench/`` that exists and print one table of figures with goal and verdict.

Run: ``bench/run [--full] [--only NAME,…]`` (a wrapper that picks the repo's ``.venv`` Python;
``--only usage,inspection`` runs just those benches, by script name, and its wall time has no goal).

Rules: the default run measures every goal, each figure beside its peer measured in the same run,
with shorter windows and fewer repeats, so that it ends within ``DEFAULT_GOAL_S`` on 2 cores; its
last row is its own wall time against that goal. ``--full`` runs the long soak and idle windows and
the full repeats. A bench's time limit (about twice its time on a quiet 2-core machine) stops it if
it hangs; the default run's limits add up to at most ``LIMITS_CAP_S``. Each entry of
``BENCHES`` whose script exists runs in its own process, in order, with ``$FRAY_BENCH_RESULTS``
naming a file where it records its figures (``bench/results.py``); its own output is shown as it
runs. A bench that records nothing still gets rows: each output line carrying
``[goal ...: pass|MISS]`` becomes one. A bench that fails, or runs past its time limit, gets an
``error`` row and the rest still run. Peers that are not installed are the benches' business: they
record a ``skipped`` row with the reason. The exit status is 1 when a bench failed, else 0 (a
missed goal is a finding, not a failure).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import RESULTS_ENV, Figure, read

BENCH_DIR: Final[Path] = Path(__file__).resolve().parent
GRACE_S: Final[float] = 30.0
GOAL_LINE: Final[re.Pattern[str]] = re.compile(r"^\s*(?P<name>.*?):?\s*(?P<value>[^:]*?)\s*\[goal (?P<goal>[^:\]]+): "
                                               r"(?P<verdict>pass|MISS)\]")


@dataclass(frozen=True)
class Bench:
    """A bench script, its arguments in the default run and with ``--full``, and the time limit
    in seconds of each."""

    script: str
    args: tuple[str, ...]
    full_args: tuple[str, ...]
    limit: float
    full_limit: float


DEFAULT_GOAL_S: Final[float] = 600.0
"""The default run ends within this on the project's 2-core machine (10 minutes): its table's last row."""
LIMITS_CAP_S: Final[float] = 1200.0
"""The default run's time limits add up to at most this, so even a machine other work slows ends it
within 20 minutes."""

BENCHES: Final[tuple[Bench, ...]] = (
    # script, its arguments in the default run and with --full, and the time limit (s) of each
    Bench("plan.py", (), (), 5, 60),
    Bench("picker.py", ("--tcp-nodelay", "--changes", "20"), ("--tcp-nodelay",), 60, 180),
    Bench("loadext.py", ("8",), (), 12, 120),
    Bench("importtime.py", ("3",), (), 15, 60),
    Bench("controller.py", ("--real-iris", "--ray", "--runs", "10", "--ray-runs", "2"), ("--real-iris", "--ray"),
          100, 360),
    Bench("jobtree.py", (), (), 5, 120),
    Bench("panel.py", (), (), 10, 60),
    Bench("client.py", (), (), 30, 120),
    Bench("iris_cli.py", ("--runs", "2"), (), 90, 420),
    Bench("fit.py", (), (), 10, 120),
    Bench("oracle_capture.py", ("500",), (), 10, 60),
    Bench("twin.py", ("--quick",), (), 50, 300),
    Bench("actors.py", ("--calls", "300"), (), 90, 300),
    Bench("sessions.py", ("--cells", "10", "--cold-runs", "1", "--no-twin"), (), 30, 420),
    Bench("usage.py", ("--passes", "10", "--twin", "--lab", "--steps", "3", "--spark-repeat", "10"),
          ("--twin", "--lab"), 150, 300),
    Bench("inspection.py", ("--rounds", "3", "--execs", "20", "--calls", "10", "--lab", "--paints", "3"), ("--lab",),
          140, 280),
    Bench("sidebar.py", ("--watch", "30", "--window", "20", "--jobs", "20", "--scale-repeat", "1"), (), 60, 300),
    Bench("logview.py", ("--step", "1000"), ("--baseline",), 60, 600),
    Bench("soak.py", ("--runs", "200"), ("--runs", "2000"), 20, 1200),
    Bench("live.py", ("--jobs", "3", "--rounds", "1", "--window", "20"), (), 120, 720),
    Bench("live.py", ("--real-iris", "--jobs", "3", "--rounds", "1", "--window", "20"), ("--real-iris",), 130, 780),
)


def run(bench: Bench, full: bool, results: Path) -> list[Figure]:
    """Run one bench; its figures (recorded, else scraped from goal lines, else an error row)."""
    name = bench.script.removesuffix(".py")
    args, limit = (bench.full_args, bench.full_limit) if full else (bench.args, bench.limit)
    print(f"\n=== {bench.script} {' '.join(args)}".rstrip(), flush=True)
    started = time.perf_counter()
    env = dict(os.environ, **{RESULTS_ENV: str(results), "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []
    error = ""
    with subprocess.Popen([sys.executable, str(BENCH_DIR / bench.script), *args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True) as process:
        assert process.stdout is not None
        expired = threading.Event()
        timer = threading.Timer(limit, _interrupt, (process, expired))
        timer.start()
        for line in process.stdout:
            print(line, end="", flush=True)
            lines.append(line.rstrip("\n"))
        status = process.wait()
        timer.cancel()
    if expired.is_set():
        error = f"stopped at its {limit:.0f} s limit"
    elif status != 0:
        last = next((line for line in reversed(lines) if line.strip()), "(no output)")
        error = f"exit status {status}: {last.strip()[:200]}"
    print(f"=== {bench.script}: {time.perf_counter() - started:.1f} s", flush=True)
    figures = read(results)
    if not figures:
        figures = [Figure(name, match["name"].strip() or name, match["value"].strip().rstrip(",;"),
                          match["goal"].strip(), match["verdict"] == "pass")
                   for line in lines if (match := GOAL_LINE.search(line))]
    if error:
        figures.append(Figure(name, "(bench failed)", "", "", False, error))
    return figures


def _interrupt(process: subprocess.Popen[str], expired: threading.Event) -> None:
    """Time is up: SIGINT (the bench's ``finally`` blocks stop what it started), then SIGKILL
    to its process group after ``GRACE_S``."""
    expired.set()
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def wall_time(elapsed: float, full: bool, only: bool = False) -> Figure:
    """The run's own row: its wall time, against ``DEFAULT_GOAL_S`` for the whole default run."""
    cores = f"{elapsed:.0f} s on {os.cpu_count()} cores"
    if full or only:
        return Figure("suite", f"{'full' if full else 'default'}{' partial' if only else ''} run, wall time", cores)
    return Figure("suite", "default run, wall time", cores, f"<= {DEFAULT_GOAL_S:.0f} s", elapsed <= DEFAULT_GOAL_S)


def table(figures: list[Figure]) -> str:
    """The figures as one aligned text table."""
    header = ("bench", "figure", "value", "goal", "verdict")
    rows = [(f.bench, f.name, f.value or f.note, f.goal, "error" if f.name == "(bench failed)" else f.verdict)
            for f in figures]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    widths[2] = min(widths[2], 60)
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def chosen_benches(only: str) -> tuple[Bench, ...]:
    """The benches ``--only`` names (script names without ``.py``, comma-separated), in the table's
    order; all of them for ""; an unknown name is an error naming the known ones."""
    if not only:
        return BENCHES
    names = {name.strip().removesuffix(".py") for name in only.split(",") if name.strip()}
    known = {bench.script.removesuffix(".py") for bench in BENCHES}
    if unknown := sorted(names - known):
        raise SystemExit(f"--only {only}: no bench {', '.join(unknown)}; the benches are {', '.join(sorted(known))}")
    return tuple(bench for bench in BENCHES if bench.script.removesuffix(".py") in names)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--full", action="store_true",
                        help="the long soak and idle windows and the full repeats (the default run's goal: "
                             f"{DEFAULT_GOAL_S / 60:.0f} minutes)")
    parser.add_argument("--only", default="", metavar="NAME,…",
                        help="run only these benches, by script name (usage,inspection); the wall time has no goal")
    args = parser.parse_args()
    chosen = chosen_benches(args.only)
    started = time.perf_counter()
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="fray-bench-run-") as scratch:
        for index, bench in enumerate(chosen):
            if (BENCH_DIR / bench.script).exists():
                figures += run(bench, args.full, Path(scratch) / f"{index}.jsonl")
    elapsed = time.perf_counter() - started
    figures.append(wall_time(elapsed, args.full, bool(args.only)))
    print(f"\nAll benches in {elapsed:.0f} s on {os.cpu_count()} cores ({'full' if args.full else 'default'} run)\n")
    print(table(figures))
    return 1 if any(f.name == "(bench failed)" for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
