"""Run the labextension's compiled TypeScript in Node from Python tests: compile it once for Node
(``tsconfig.test.json``, into ``labextension/lib/unit``) and call one of its modules on values."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

LABEXTENSION = Path(__file__).resolve().parents[1] / "labextension"


def compile_for_node() -> Path:
    """The labextension compiled for Node: its ``lib/unit`` folder (fails the test with tsc's words)."""
    assert (LABEXTENSION / "node_modules").is_dir(), (
        "labextension/node_modules is missing: `pip install -e .` (or `npm install` in labextension/) installs it")
    compiled = subprocess.run(["npx", "tsc", "-p", "tsconfig.test.json"], cwd=LABEXTENSION, capture_output=True,
                              text=True, timeout=120, check=False)
    assert compiled.returncode == 0, compiled.stdout[-2000:]
    return LABEXTENSION / "lib" / "unit"


def node(unit: Path, module: str, call: str, values: object) -> object:
    """``call`` (a JavaScript expression over ``m``, the compiled ``module``, and ``values``) in Node."""
    script = (f"const m = require({json.dumps(str(unit / 'src' / module))});"
              f"const values = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
              f"process.stdout.write(JSON.stringify({call}));")
    done = subprocess.run(["node", "-e", script], input=json.dumps(values), capture_output=True, text=True,
                          timeout=60, check=True)
    return json.loads(done.stdout)
