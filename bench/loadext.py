"""``%load_ext fray_jupyter`` cost over a bare kernel (goal: median <= 150 ms).

Each sample is a fresh Python process in which IPython is already imported and an
``InteractiveShell`` exists (as in a kernel; nothing of fray_jupyter is loaded); it times
``shell.run_line_magic("load_ext", "fray_jupyter")``. Median and max over the runs. For reference,
the same processes also time the first ``%%fray --dry-run`` after it (no goal): what registering
no longer pays moves to the first magic call (client, models, views).

Run: .venv/bin/python bench/loadext.py [runs]   (default 15)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import Figure, record

GOAL_MS = 150.0
ROOT = Path(__file__).resolve().parents[1]
SAMPLE = """
import json, time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
started = time.perf_counter()
shell.run_line_magic("load_ext", "fray_jupyter")
loaded = time.perf_counter()
shell.run_cell_magic("fray", "--tpu v5p-8 --slices 2 --dry-run --name bench", "print('hi')")
done = time.perf_counter()
print(json.dumps({"load_ext": (loaded - started) * 1000, "first_dry_run": (done - loaded) * 1000}))
"""


def sample() -> dict[str, float]:
    """One fresh process's timings in milliseconds."""
    result = subprocess.run([sys.executable, "-c", SAMPLE], capture_output=True, text=True, cwd=ROOT, check=True,
                            env={**os.environ, "IRIS_USER": "bench"}, timeout=120)
    timings: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return timings


def main(runs: int) -> None:
    sample()  # warm the OS file cache and .pyc files
    samples = [sample() for _ in range(runs)]
    load = [s["load_ext"] for s in samples]
    first = [s["first_dry_run"] for s in samples]
    median = statistics.median(load)
    verdict = "pass" if median <= GOAL_MS else "MISS"
    print(f"%load_ext fray_jupyter over a bare IPython shell: median {median:.1f} ms, max {max(load):.1f} ms "
          f"over {runs} fresh processes  [goal <= {GOAL_MS:.0f} ms: {verdict}]")
    print(f"then the first %%fray --dry-run (loads the client, models and views): median "
          f"{statistics.median(first):.0f} ms")
    record(Figure("loadext", f"%load_ext fray_jupyter, fresh kernel (median of {runs})",
                  f"{median:.1f} ms (max {max(load):.1f})", f"<= {GOAL_MS:.0f} ms", median <= GOAL_MS))
    record(Figure("loadext", "then the first %%fray --dry-run (median)", f"{statistics.median(first):.0f} ms"))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
