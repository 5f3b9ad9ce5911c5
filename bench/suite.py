"""Run every bench in ``bench/`` that exists and print one table of figures with goal and verdict.

Run: ``bench/run [--quick]`` (a wrapper that picks the repo's ``.venv`` Python).

Rules: each entry of ``BENCHES`` whose script exists runs in its own process, in order, with
``$FRAY_BENCH_RESULTS`` naming a file where it records its figures (``bench/results.py``); its
own output is shown as it runs. A bench that records nothing still gets rows: each output line
carrying ``[goal ...: pass|MISS]`` becomes one. A bench that fails, or runs past its time
limit, gets an ``error`` row and the rest still run. Peers that are not installed are the
benches' business: they record a ``skipped`` row with the reason. The exit status is 1 when a
bench failed, else 0 (a missed goal is a finding, not a failure).
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
    """A bench script, its arguments (full run, and ``--quick``) and a time limit in seconds."""

    script: str
    args: tuple[str, ...] = ()
    quick_args: tuple[str, ...] = ()
    limit: float = 300.0


BENCHES: Final[tuple[Bench, ...]] = (
    Bench("plan.py", quick_args=("1000",), limit=60),
    Bench("picker.py", ("--tcp-nodelay",), ("--python-only",), limit=180),
    Bench("loadext.py", quick_args=("5",), limit=120),
    Bench("importtime.py", quick_args=("3",), limit=60),
    Bench("controller.py", ("--real-iris", "--ray"), ("--real-iris", "--ray", "--runs", "10"), limit=360),
    Bench("client.py", quick_args=("50",), limit=120),
    Bench("iris_cli.py", quick_args=("--runs", "2"), limit=420),
    Bench("fit.py", quick_args=("20",), limit=120),
    Bench("twin.py", quick_args=("--quick",), limit=300),
    Bench("sidebar.py", quick_args=("--watch", "70", "--jobs", "20"), limit=300),
    Bench("logview.py", quick_args=("--lines", "20000"), limit=300),
    Bench("soak.py", ("--runs", "2000"), ("--runs", "100"), limit=1200),
    Bench("live.py", quick_args=("--jobs", "7", "--rounds", "1"), limit=720),
    Bench("live.py", ("--real-iris",), ("--real-iris", "--jobs", "7", "--rounds", "1"), limit=780),
)


def run(bench: Bench, quick: bool, results: Path) -> list[Figure]:
    """Run one bench; its figures (recorded, else scraped from goal lines, else an error row)."""
    name = bench.script.removesuffix(".py")
    args = bench.quick_args if quick else bench.args
    print(f"\n=== {bench.script} {' '.join(args)}".rstrip(), flush=True)
    started = time.perf_counter()
    env = dict(os.environ, **{RESULTS_ENV: str(results), "PYTHONUNBUFFERED": "1"})
    lines: list[str] = []
    error = ""
    with subprocess.Popen([sys.executable, str(BENCH_DIR / bench.script), *args], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True) as process:
        assert process.stdout is not None
        expired = threading.Event()
        timer = threading.Timer(bench.limit, _interrupt, (process, expired))
        timer.start()
        for line in process.stdout:
            print(line, end="", flush=True)
            lines.append(line.rstrip("\n"))
        status = process.wait()
        timer.cancel()
    if expired.is_set():
        error = f"stopped at its {bench.limit:.0f} s limit"
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run, not the figures)")
    args = parser.parse_args()
    started = time.perf_counter()
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="fray-bench-run-") as scratch:
        for index, bench in enumerate(BENCHES):
            if (BENCH_DIR / bench.script).exists():
                figures += run(bench, args.quick, Path(scratch) / f"{index}.jsonl")
    print(f"\nAll benches in {time.perf_counter() - started:.0f} s on {os.cpu_count()} cores "
          f"({'quick' if args.quick else 'full'} run)\n")
    print(table(figures))
    return 1 if any(f.name == "(bench failed)" for f in figures) else 0


if __name__ == "__main__":
    sys.exit(main())
