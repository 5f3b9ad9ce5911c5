"""The labextension's TypeScript unit suite (state → badge, refresh back-off, change detection,
formatting), run with Node's built-in test runner: ``npm test`` in ``labextension/``."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

LABEXTENSION = Path(__file__).resolve().parents[1] / "labextension"


def test_typescript_unit_suite_passes() -> None:
    assert (LABEXTENSION / "node_modules").is_dir(), (
        "labextension/node_modules is missing: `pip install -e .` (or `npm install` in labextension/) installs it")
    done = subprocess.run(["npm", "test", "--silent"], cwd=LABEXTENSION, capture_output=True, text=True, timeout=120, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    passed = re.search(r"^# pass (\d+)$", output, re.MULTILINE)
    failed = re.search(r"^# fail (\d+)$", output, re.MULTILINE)
    assert passed and failed and int(passed.group(1)) >= 15 and failed.group(1) == "0", output[-2000:]
