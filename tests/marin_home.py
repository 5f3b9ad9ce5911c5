"""A private Marin HOME for tests of named clusters: ``~/.config/marin/clusters/<name>.yaml``
manifests (read by Iris's own ``connect_controller``) and ``~/.config/marin/credentials/<name>.json``
records (rigging's credential store).

rigging fixes the credential dir from HOME when it is imported, so code that resolves clusters runs
in a child process started with this HOME (``run_child``): a script in ``tests/cluster_child.py``
that prints one JSON line of results.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

REPO: Final[Path] = Path(__file__).resolve().parents[1]

TWIN_MANIFEST: Final[str] = """\
# A local-kind Iris cluster: resolving it by name starts a genuine Iris local cluster.
name: twin
platform: {local: {}}
controller: {local: {}}
worker_provider: {}
scale_groups:
  cpu:
    num_vms: 1
    buffer_slices: 0
    max_slices: 2
    resources: {cpu: 4, ram: 16GB, disk: 100GB, device_type: cpu, capacity_type: on-demand}
    slice_template: {local: {}}
"""


EDGE_DASHBOARD: Final[str] = "https://iris.example.dev"
"""The public dashboard origin ``iap_manifest`` declares (Iris's ``dashboard_url``)."""


def iap_manifest(name: str, edge_url: str) -> str:
    """An IAP-fronted cluster whose edge is ``edge_url`` (Iris connects to it directly) and whose public
    dashboard is ``EDGE_DASHBOARD``."""
    return (f"name: {name}\nplatform: {{local: {{}}}}\ncontroller: {{local: {{}}}}\nauth:\n  iap:\n    url: {edge_url}\n"
            f"dashboard_url: {EDGE_DASHBOARD}/\n")


def marin_home(root: Path, manifests: dict[str, str], records: dict[str, dict[str, Any]] | None = None) -> Path:
    """``root/home`` with the given cluster manifests and credential records; returns the HOME."""
    home = root / "home"
    clusters = home / ".config" / "marin" / "clusters"
    clusters.mkdir(parents=True, exist_ok=True)
    for name, text in manifests.items():
        (clusters / f"{name}.yaml").write_text(text)
    credentials = home / ".config" / "marin" / "credentials"
    for name, record in (records or {}).items():
        credentials.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = credentials / f"{name}.json"
        path.write_text(json.dumps({"cluster": name, "metadata": {}, **record}))
        path.chmod(0o600)
    return home


def child_env(home: Path, **extra: str) -> dict[str, str]:
    """This environment with HOME and TMPDIR private, no cluster or controller chosen by the caller's
    environment, and the repository importable."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("FRAY_CLUSTER", "MARIN_CLUSTER", "FRAY_CONTROLLER_URL", "FRAY_CONTROLLER_TOKEN",
                        "MARIN_CLUSTER_TOKEN")}
    tmp = home.parent / "tmp"
    tmp.mkdir(exist_ok=True)
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONPATH=os.pathsep.join(
        [str(REPO), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]), **extra)
    return env


def run_child(scenario: str, home: Path, *, timeout: float = 180, **extra: str) -> dict[str, Any]:
    """Run ``tests/cluster_child.py SCENARIO`` with ``home`` and return its JSON line."""
    result = subprocess.run([sys.executable, str(REPO / "tests" / "cluster_child.py"), scenario], check=False,
                            env=child_env(home, **extra), capture_output=True, text=True, timeout=timeout)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    assert result.returncode == 0 and lines, f"child failed ({result.returncode}): {result.stderr[-3000:]}"
    return json.loads(lines[-1])  # type: ignore[no-any-return]
