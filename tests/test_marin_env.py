"""fray-jupyter works inside a researcher's Marin environment: its data stack (marin-zephyr, whose
vortex-data → substrait holds protobuf below 7) and its training stack (marin-levanter), installed
before or after our wheel, without forcing either side's pins.

For each order, one environment per session (uv, from the wheel built once): ``pip check`` is clean,
installing fray-jupyter last changes nothing Marin's stack installed (protobuf stays 6.33.x there), the
generated code loads on the protobuf each install settled on, and a script there plans a job,
submits it to an embedded controller started from that environment, reads its logs, and runs the
browser-free magics (``%%fray --dry-run`` and ``%%fray --wait``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from tests.marin_envs import uv
from tests.wheels import clean_wheel

MARIN: Final[str] = "0.2.227.dev40316220070"
STACK: Final[tuple[str, ...]] = (f"marin-zephyr=={MARIN}", f"marin-levanter=={MARIN}")

SCRIPT: Final[str] = textwrap.dedent("""
    import json
    import google.protobuf
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    import fray_jupyter
    from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, connect, plan
    from fray_jupyter.client.discovery import start_controller

    planned = plan(JobRequest(name="env-job", entrypoint=Entrypoint.from_binary("echo", ["from-the-env"]),
                              resources=ResourceConfig(cpu=1, ram="64m", disk="64m")), user="alice")
    start_controller(timeout=300)  # the embedded controller, from this environment (a loaded machine is slow)
    with connect() as client:
        job = client.submit(planned)
        state = client.wait(job, timeout=120).state
        logs = [entry.data for entry in client.logs(job).entries]
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "fray_jupyter")
    with capture_output() as dry:
        shell.run_cell_magic("fray", "--dry-run --name env-dry", "print('dry')\\n")
    with capture_output() as waited:
        shell.run_cell_magic("fray", "--wait --name env-magic", "print('from-the-magic')\\n")
    print(json.dumps({"package": fray_jupyter.__file__, "protobuf": google.protobuf.__version__, "state": state,
                      "logs": logs, "waited": waited.stdout + waited.stderr,
                      "dry": "".join(shown.data.get("text/plain", "") for shown in dry.outputs) + dry.stdout}))
""")


def _env(home: Path) -> dict[str, str]:
    """A private HOME (the embedded controller's runtime file and state live under it), nothing of
    this checkout on the path: the environment's installed wheel is what runs."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "FRAY_CONTROLLER_URL", "FRAY_CONTROLLER_TOKEN", "FRAY_CLUSTER",
            "MARIN_CLUSTER")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith(("JUPYTER_", "XDG_"))}
    return {**env, "HOME": str(home), "IRIS_USER": "alice", "FRAY_CONTROLLER_IDLE_TIMEOUT": "60"}


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's wheel as a fresh clone builds it, built once per run (``tests.wheels``)."""
    return clean_wheel(tmp_path_factory)


ORDERS: Final[dict[str, tuple[str, ...]]] = {"fray-jupyter first": ("wheel", *STACK), "Marin first": (*STACK, "wheel")}
"""Each environment's ``uv pip install`` steps, one package each (a user adding a package to a working
environment; Marin's stack alone settles on protobuf 6.33.x)."""


def _freeze(python: Path) -> dict[str, str]:
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format", "json"], capture_output=True,
                            text=True, timeout=120, check=True).stdout
    return {entry["name"].lower(): entry["version"] for entry in json.loads(listed)}


@pytest.fixture(scope="session", params=sorted(ORDERS))
def marin_env(request: pytest.FixtureRequest, wheel: Path,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, str], dict[str, str]]]:
    """An environment where our wheel and Marin's stack were installed in the order ``request.param``
    names; with it, the versions before and after the last step."""
    order = str(request.param)
    root = tmp_path_factory.mktemp("marin-env")
    python = root / "venv" / "bin" / "python"
    uv("venv", "--quiet", "--seed", "--python", sys.executable, str(root / "venv"))
    before: dict[str, str] = {}
    for i, step in enumerate(ORDERS[order]):
        if i == len(ORDERS[order]) - 1:
            before = _freeze(python)
        uv("pip", "install", "--quiet", "--python", str(python), str(wheel) if step == "wheel" else step)
    yield python, before, _freeze(python)
    subprocess.run([str(python), "-m", "fray_jupyter.cli", "controller", "stop"], env=_env(root / "home"),
                   cwd=root, capture_output=True, timeout=60, check=False)


def _run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), *args], env=_env(cwd / "home"), cwd=cwd, capture_output=True, text=True,
                          timeout=600, check=False)


def test_the_joint_install_is_consistent(marin_env: tuple[Path, dict[str, str], dict[str, str]],
                                         request: pytest.FixtureRequest) -> None:
    """pip check is clean; installing fray-jupyter into Marin's environment changes none of its versions;
    the Marin-first environment keeps Marin's protobuf below 7, where our generated code must load."""
    python, before, after = marin_env
    checked = _run(python, "-m", "pip", "check", cwd=python.parents[2])
    assert checked.returncode == 0, checked.stdout + checked.stderr
    if request.node.callspec.params["marin_env"] == "Marin first":
        changed = {name: (version, after[name]) for name, version in before.items() if after.get(name) != version}
        assert not changed, f"installing fray-jupyter changed Marin's environment: {changed}"
        assert after["protobuf"].startswith("6.33."), after["protobuf"]
    imported = _run(python, "-c", "import substrait, fray_jupyter.iris.proto.controller_pb2", cwd=python.parents[2])
    assert imported.returncode == 0, imported.stderr[-2000:]


def test_plan_submit_and_the_magics_work_there(marin_env: tuple[Path, dict[str, str], dict[str, str]]) -> None:
    python = marin_env[0]
    root = python.parents[2]
    done = _run(python, "-c", SCRIPT, cwd=root)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["package"].startswith(str(root / "venv")), result["package"]  # the wheel, not this checkout
    assert result["state"] == 4 and result["logs"] == ["from-the-env"], result  # JOB_STATE_SUCCEEDED
    assert "LaunchJobRequest" in result["dry"] and "/alice/env-dry" in result["dry"], result["dry"]
    assert "from-the-magic" in result["waited"], result["waited"]
