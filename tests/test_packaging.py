"""Packaging of the Jupyter extensions: ``pip wheel`` on a clean tree (no ``node_modules``, no
build output, as a fresh clone) builds the labextension with npm and ships it prebuilt, with the
server extension's auto-enable file; the dev install shows both extensions OK; build output stays
out of git."""

from __future__ import annotations

import json
import re
import sys
import zipfile
from pathlib import Path

import pytest

import fray_jupyter
from tests.wheels import clean_wheel, run

ROOT = Path(__file__).resolve().parents[1]
DATA = f"fray_jupyter-{fray_jupyter.__version__}.data/data"
LABEXTENSION = f"{DATA}/share/jupyter/labextensions/fray-jupyter"
SERVER_CONFIG = f"{DATA}/etc/jupyter/jupyter_server_config.d/fray_jupyter.json"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    """The wheel ``pip wheel .`` builds from the files git would commit (``tests.wheels``)."""
    return zipfile.ZipFile(clean_wheel(tmp_path_factory))


def test_the_wheel_ships_the_prebuilt_labextension(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    package = json.loads(wheel.read(f"{LABEXTENSION}/package.json"))
    assert package["name"] == "fray-jupyter"
    entry = package["jupyterlab"]["_build"]["load"]
    assert re.fullmatch(r"static/remoteEntry\.[0-9a-f]+\.js", entry)
    assert f"{LABEXTENSION}/{entry}" in names
    assert f"{LABEXTENSION}/static/style.js" in names
    assert json.loads(wheel.read(f"{LABEXTENSION}/install.json"))["packageName"] == "fray-jupyter"
    schema = json.loads(wheel.read(f"{LABEXTENSION}/schemas/fray-jupyter/plugin.json"))
    assert set(schema["properties"]) == {"refreshInterval", "maxRefreshInterval", "notifications", "silenceSeconds"}


def test_the_wheel_enables_the_server_extension(wheel: zipfile.ZipFile) -> None:
    config = json.loads(wheel.read(SERVER_CONFIG))
    assert config == {"ServerApp": {"jpserver_extensions": {"fray_jupyter": True}}}
    assert {"fray_jupyter/server/handlers.py", "fray_jupyter/server/extension.py"} <= set(wheel.namelist())


def test_the_wheel_is_typed_licensed_and_versioned_from_the_package(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    dist_info = f"fray_jupyter-{fray_jupyter.__version__}.dist-info"
    metadata = wheel.read(f"{dist_info}/METADATA").decode()
    assert f"\nVersion: {fray_jupyter.__version__}\n" in metadata and "License-Expression: Apache-2.0" in metadata
    assert "fray_jupyter/py.typed" in names and f"{dist_info}/licenses/LICENSE" in names


def test_one_version_for_the_package_and_the_labextension() -> None:
    """``pyproject.toml`` reads the version from ``fray_jupyter.__version__``; the labextension's
    ``package.json`` (which npm needs literally) must say the same."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and not re.search(r"^version\s*=", pyproject, re.MULTILINE)
    assert json.loads((ROOT / "labextension" / "package.json").read_text())["version"] == fray_jupyter.__version__
    assert (ROOT / "LICENSE").read_text().lstrip().startswith("Apache License")


def test_the_wheel_holds_no_sources_or_node_modules(wheel: zipfile.ZipFile) -> None:
    names = wheel.namelist()
    assert not [n for n in names if "node_modules" in n or n.endswith((".ts", ".tsx")) or "/lib/" in n]
    static = [n for n in names if n.startswith(f"{LABEXTENSION}/static/") and n.endswith(".js")]
    assert sum(wheel.getinfo(n).file_size for n in static) < 200_000  # JupyterLab's packages are shared, not bundled


def test_the_dev_install_lists_both_extensions_ok() -> None:
    jupyter = str(Path(sys.executable).with_name("jupyter"))
    labextensions = run(jupyter, "labextension", "list")
    assert re.search(r"fray-jupyter v0\.1\.0 enabled OK", labextensions), labextensions
    server = run(jupyter, "server", "extension", "list")
    assert re.search(r"fray_jupyter enabled", server) and re.search(r"fray_jupyter 0\.1\.0 OK", server), server


def test_build_output_and_node_modules_stay_out_of_git() -> None:
    ignored = ["fray_jupyter/labextension/package.json", "labextension/node_modules/x", "labextension/lib/index.js",
               "labextension/tsconfig.tsbuildinfo"]
    assert run("git", "check-ignore", *ignored).split() == ignored
    assert (ROOT / "labextension" / "package-lock.json").is_file()
