"""Python environments holding another Marin release, for the conformance matrix and the version tests.

``marin_python(release)`` is the Python of a uv venv with that release of marin-fray and
marin-iris[controller] (the finelog pins its local clusters need), this project's dependencies (read
from pyproject.toml, the project itself is not installed: run it with ``PYTHONPATH=REPO``) and
hypothesis. Each venv is made once, under ``CACHE``, and reused by later sessions until its
requirements change (they key its directory); a lock makes concurrent sessions share one build.
``FOLLOWED`` (the release the test command installs) is this Python itself.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

from fray_jupyter.file_lock import exclusive
from fray_jupyter.iris.marin_versions import FOLLOWED

REPO: Final[Path] = Path(__file__).resolve().parents[1]
RELEASES: Final[dict[str, str]] = {
    "0.2.227": "0.2.227.dev40316220070",
    "0.2.200": "0.2.200.dev39117391147",
    "0.2.150": "0.2.150.dev37843708094",
}
"""The matrix: the followed release and two older ones that show the listed differences."""
FINELOG: Final[tuple[str, ...]] = ("marin-finelog==0.2.71.dev40003900277", "marin-finelog-server==0.2.71.dev40003900277")
CACHE: Final[Path] = Path(os.environ.get("FRAY_TEST_ENVS") or Path(tempfile.gettempdir()) / "fray-jupyter-test-envs")
BUILD_TIMEOUT: Final[float] = 900.0


def uv(*args: str) -> None:
    """Run ``uv`` (a dependency of the project; its binary, never ``python -m uv``, which points
    ``uv pip`` at the calling interpreter) and fail with its output when it fails."""
    from uv import find_uv_bin

    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV" and not k.startswith("UV_INTERNAL")}
    done = subprocess.run([find_uv_bin(), *args], capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"uv {' '.join(args)} failed: {done.stderr[-3000:]}")


def _requirements(release: str) -> list[str]:
    version = RELEASES[release]
    return [f"marin-fray=={version}", f"marin-iris[controller]=={version}", *FINELOG, "hypothesis"]


def marin_python(release: str) -> Path:
    """The Python of the environment for ``release`` (module doc), built if the cache lacks it."""
    if release == FOLLOWED:
        return Path(sys.executable)
    requirements = _requirements(release)
    key = hashlib.sha256("\n".join([sys.version, *requirements, (REPO / "pyproject.toml").read_text()])
                         .encode()).hexdigest()[:12]
    root = CACHE / f"marin-{release}-{key}"
    python = root / "bin" / "python"
    CACHE.mkdir(parents=True, exist_ok=True)
    with exclusive(CACHE / f"marin-{release}.lock", BUILD_TIMEOUT):
        if (root / ".complete").exists():
            return python
        shutil.rmtree(root, ignore_errors=True)
        uv("venv", "--quiet", "--python", sys.executable, str(root))
        uv("pip", "install", "--quiet", "--python", str(python), *requirements, "-r", str(REPO / "pyproject.toml"))
        (root / ".complete").touch()
    return python


def run_in(python: Path, *args: str, home: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` from the repository root with the repository importable (and ``home`` as HOME)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if home is not None:
        env["HOME"] = str(home)
    return subprocess.run([str(python), *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
