"""``python -X importtime -c "import fray_jupyter.server"``: what the Jupyter server extension
costs to import and whether it loads pydantic or the planning tables (goal: neither; it only
proxies Iris messages to the sidebar).

Each sample is a fresh process that imports ``jupyter_server.serverapp`` first (the server has it
loaded before it loads any extension; on a busy machine it alone takes seconds, in jsonschema's
format checkers) and then the extension; the figure is the median of the cumulative import time
Python reports for ``fray_jupyter.server`` — what the extension adds to the server's start-up —
and the modules the goal forbids among all those the process imported.

Run: .venv/bin/python bench/importtime.py [runs]   (default 7)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path
from typing import Final

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import Figure, record

ROOT = Path(__file__).resolve().parents[1]
MODULE: Final[str] = "fray_jupyter.server"
FORBIDDEN: Final[tuple[str, ...]] = ("pydantic", "fray_jupyter.planning")


def sample() -> tuple[float, list[str]]:
    """One fresh process: the module's cumulative import time (ms) and every module it imported."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import jupyter_server.serverapp; import {MODULE}"], capture_output=True,
                            text=True, cwd=ROOT, check=True, timeout=120)
    cumulative_us, names = 0, []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line or "cumulative" in line:
            continue
        _, cumulative, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        names.append(name)
        if name == MODULE:
            cumulative_us = int(cumulative)
    return cumulative_us / 1000, names


def main(runs: int) -> None:
    sample()  # warm the OS file cache and .pyc files
    samples = [sample() for _ in range(runs)]
    median = statistics.median(ms for ms, _ in samples)
    loaded = samples[-1][1]
    forbidden = [name for name in FORBIDDEN if any(n == name or n.startswith(name + ".") for n in loaded)]
    verdict = "pass" if not forbidden else "MISS"
    print(f"python -X importtime -c 'import {MODULE}' (after jupyter_server.serverapp): median {median:.0f} ms "
          f"over {runs} fresh processes; loads {', '.join(forbidden) or 'no pydantic, no planning'}  "
          f"[goal no pydantic, no planning: {verdict}]")
    record(Figure("importtime", f"import {MODULE} over jupyter_server (-X importtime, median of {runs})",
                  f"{median:.0f} ms, {', '.join(forbidden) or 'no pydantic/planning'}", "no pydantic, no planning",
                  not forbidden))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
