"""The package installs and plans on every supported Python (3.11-3.13), not only the test one.

Each found interpreter gets a fresh venv with this checkout's wheel (``tests.wheels``: built once per
run, as a fresh clone builds it) and its dependencies installed by uv (no test extras), then runs
the CLI and ``plan()`` for real. Versions absent from this machine are skipped, by name.
"""

from __future__ import annotations

import glob
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.marin_envs import uv
from tests.wheels import clean_wheel

OTHER_VERSIONS = [v for v in ("3.11", "3.13") if v != f"{sys.version_info.major}.{sys.version_info.minor}"]
SCRIPT = (
    "from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, plan\n"
    "p = plan(JobRequest(name='v', entrypoint=Entrypoint.from_binary('true'),"
    " resources=ResourceConfig.with_tpu('v4-32', slice_count=2)), user='u')\n"
    "assert (p.replicas, p.group_by, p.cpu_millicores) == (8, 'tpu-name', 120000), p\n"
    "print('ok', p.request_size)\n"
)


def _interpreter(version: str) -> str | None:
    for candidate in [f"python{version}", *glob.glob(f"/root/.pyenv/versions/{version}*/bin/python{version}")]:
        found = shutil.which(candidate) or (candidate if Path(candidate).exists() else None)
        if found and subprocess.run([found, "-c", "pass"], capture_output=True, check=False).returncode == 0:
            return found
    return None


def _install_and_run(version: str, root: Path, wheel: Path) -> str:
    python = _interpreter(version)
    if python is None:
        return f"skip: no Python {version} on this machine"
    venv = root / f"venv{version}"
    uv("venv", "--quiet", "--python", python, str(venv))
    uv("pip", "install", "--quiet", "--python", str(venv / "bin/python"), str(wheel))
    run = subprocess.run([str(venv / "bin/python"), "-c", SCRIPT], capture_output=True, text=True, timeout=120,
                         check=False)
    assert run.returncode == 0 and run.stdout.startswith("ok"), run.stderr
    cli = subprocess.run([str(venv / "bin/fray-jupyter"), "plan", "--gpu", "H100x8", "--json"], capture_output=True,
                         text=True, timeout=120, check=False)
    assert cli.returncode == 0 and '"cpuMillicores": 4000' in cli.stdout, cli.stderr
    return "ok"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root, wheel = tmp_path_factory.mktemp("pythons"), clean_wheel(tmp_path_factory)
    with ThreadPoolExecutor(len(OTHER_VERSIONS)) as pool:
        return dict(zip(OTHER_VERSIONS, pool.map(lambda v: _install_and_run(v, root, wheel), OTHER_VERSIONS)))


@pytest.mark.parametrize("version", OTHER_VERSIONS)
def test_installs_and_plans(version: str, results: dict[str, str]) -> None:
    if results[version].startswith("skip"):
        pytest.skip(results[version])
    assert results[version] == "ok"
