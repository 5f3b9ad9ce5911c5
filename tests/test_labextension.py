"""The labextension's TypeScript unit suite (state → badge, refresh back-off, change detection,
formatting, the log renderer's shared vectors), run with Node's built-in test runner: ``npm test`` in
``labextension/``; and the sidebar's ANSI palette is the status panel's."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from fray_jupyter.views.ansi import PALETTE

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


def test_the_sidebar_log_palette_is_the_panels() -> None:
    css = (LABEXTENSION / "style" / "logs.css").read_text()
    for part, prop in (("fg", "color"), ("bg", "background-color")):
        found = dict(re.findall(rf"\.fj-ansi-{part}-(\d+) {{ {prop}: (#[0-9a-f]{{6}}); }}", css))
        assert [found.get(str(index)) for index in range(16)] == list(PALETTE), part
