"""A researcher's workspace on a session's hosts, end to end from a real IPython shell, on the
embedded controller and on the genuine Iris twin: from a notebook directory holding ``my_exp/`` (a
git repository) and no workspace flag, both hosts import it from their own work dirs, and so does a
plain ``%%fray`` cell; an edit and a deletion reach every host with ``%fray session sync`` (old
variables kept, imported functions running the new code); with ``--sync`` an edit is simply there
in the next cell, and a host that misses the sync fails the cell by name; ``--setup`` runs on every
host with its output shown per host; the hostile cases say what they did."""

from __future__ import annotations

import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.testing import globalipapp
from IPython.utils.capture import capture_output

from fray_jupyter.magics.session import SESSIONS
from fray_jupyter.session.outputs import SessionError
from tests.assertions import one_usage_line
from tests.controller_harness import start_controller, stop_quietly
from tests.real_iris import real_iris_controller

USER = "workspace-magic"
HOSTS = "--replicas 2 --cpu 0.5 --memory 256m --disk 1g"


@pytest.fixture(scope="module", params=["embedded", "twin"])
def where(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``(controller URL, token)`` of the embedded controller, then of the genuine Iris twin."""
    root = tmp_path_factory.mktemp(request.param)
    if request.param == "twin":
        with real_iris_controller(root) as url:
            yield url, ""
        return
    process = start_controller(root / "state", "--slots", "8", "--pass-env", "PYTHONPATH")
    try:
        yield process.info.url, process.info.token
    finally:
        stop_quietly(process)


@pytest.fixture
def ip(where: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[InteractiveShell]:
    monkeypatch.setenv("IRIS_USER", USER)
    monkeypatch.setenv("FRAY_CONTROLLER_TOKEN", where[1])
    shell = globalipapp.start_ipython() or globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "fray_jupyter.magics")
    yield shell
    for name in list(SESSIONS):
        SESSIONS.pop(name).stop()


@pytest.fixture
def notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A notebook's directory holding the researcher's ``my_exp`` package, a git repository."""
    root = tmp_path / "nb"
    for name, text in {"my_exp/__init__.py": "", "my_exp/model.py": "def f():\n    return 1\n",
                       "my_exp/old.py": "OLD = True\n", "analysis.ipynb": "{}"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    monkeypatch.chdir(root)
    return root


def _start(ip: InteractiveShell, where: tuple[str, str], flags: str = "") -> tuple[str, str]:
    name = f"ws-{uuid.uuid4().hex[:6]}"
    with capture_output() as captured:
        ip.run_line_magic("fray", f"session start {name} --controller {where[0]} {HOSTS} {flags}")
    assert f"session {name}: 2/2 hosts ready" in captured.stdout, captured.stdout
    return name, captured.stdout


def _cell(ip: InteractiveShell, name: str, source: str) -> str:
    with capture_output() as captured:
        result = ip.run_cell(f"%%fray --session {name}\n{source}")
    assert result.success, captured.stdout + captured.stderr
    return captured.stdout


def _by_host(text: str, tag: str) -> dict[int, str]:
    return {int(host): rest for host, rest in re.findall(rf"^\[host (\d)\] {tag} (.*)$", text, re.MULTILINE)}


def test_my_code_reaches_every_host_and_stays_current(ip: InteractiveShell, where: tuple[str, str],
                                                       notebook: Path) -> None:
    name, started = _start(ip, where)
    assert f"workspace {notebook} (bundled the files git lists in {notebook} (tracked and not ignored): " \
           "3 files" in started  # the notebook itself is not shipped
    first = _by_host(_cell(ip, name, "import os, my_exp.model, my_exp.old\nfrom my_exp.model import f\n"
                                     "kept = 'still here'\nprint('where', f(), os.getcwd())\n"), "where")
    assert sorted(first) == [0, 1] and all(line.startswith("1 ") for line in first.values())
    workdirs = {line.split(" ", 1)[1] for line in first.values()}
    assert len(workdirs) == 2 and str(notebook) not in workdirs  # each host in its own work dir

    (notebook / "my_exp" / "model.py").write_text("def f():\n    return 2\n")
    (notebook / "my_exp" / "old.py").unlink()
    with capture_output() as captured:
        ip.run_line_magic("fray", f"session sync {name}")
    assert f"session {name}: 2 files to 2 hosts (1 deleted), reloaded my_exp.model" in captured.stdout
    assert "not reloaded: my_exp.old: its file was deleted: dropped from sys.modules" in captured.stdout

    after = _by_host(_cell(ip, name, "import os\nprint('after', f(), kept, os.path.exists('my_exp/old.py'))\n"),
                     "after")
    assert after == {0: "2 still here False", 1: "2 still here False"}
    with capture_output() as captured:
        ip.run_line_magic("fray", f"session sync {name}")
    assert f"session {name}: workspace unchanged since the last sync" in captured.stdout

    with capture_output() as captured:  # a plain cell ships the same directory, with no flag
        ip.run_cell_magic("fray", f"--wait --controller {where[0]} --cpu 0.5 --memory 256m",
                          "import my_exp.model\nprint('plain', my_exp.model.f())\n")
    assert "plain 2" in captured.stdout

    (notebook / "my_exp" / "model.py").write_text("def f():\n    return 5\n")
    with capture_output() as captured:
        ip.run_line_magic("fray", f"session restart {name}")
        ip.run_line_magic("fray", f"session status {name}")
    assert f"session {name}: 2 files to 2 hosts (1 deleted), no loaded module to reload" in captured.stdout
    assert f"  workspace {notebook}: %fray session sync {name} sends edits" in captured.stdout
    restarted = _cell(ip, name, "import os, my_exp.model\nprint('new', my_exp.model.f(), 'kept' in dir(), "
                                "os.path.exists('my_exp/old.py'))\n")
    assert _by_host(restarted, "new") == {0: "5 False False", 1: "5 False False"}


def test_with_per_cell_sync_an_edit_is_there_and_a_host_that_misses_it_fails_the_cell(
        ip: InteractiveShell, where: tuple[str, str], notebook: Path) -> None:
    name, _ = _start(ip, where, "--sync")
    assert _by_host(_cell(ip, name, "from my_exp.model import f\nprint('v', f())\n"), "v") == {0: "1", 1: "1"}
    (notebook / "my_exp" / "model.py").write_text("def f():\n    return 3\n")
    shown = _cell(ip, name, "print('v', f())\n")
    assert "[sync] 1 file to 2 hosts, reloaded my_exp.model" in shown
    assert _by_host(shown, "v") == {0: "3", 1: "3"}

    _cell(ip, name, "import os\nif int(os.environ['IRIS_TASK_ID'].split('/')[-1].split(':')[0]) == 1:\n"
                    "    os.remove('my_exp/model.py')\n    os.mkdir('my_exp/model.py')\n")
    (notebook / "my_exp" / "model.py").write_text("def f():\n    return 4\n")
    with capture_output() as captured:
        result = ip.run_cell(f"%%fray --session {name}\nprint('ran', f())\n")
    assert not result.success and "ran" not in captured.stdout
    shown = captured.stdout + captured.stderr
    assert f"session {name}: the workspace sync failed on host 1: cannot write my_exp/model.py: " in shown


def test_hostile_workspaces_say_what_they_did_and_write_nothing_outside(
        ip: InteractiveShell, where: tuple[str, str], notebook: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("token")
    (notebook / "creds.txt").symlink_to(secret)
    subprocess.run(["git", "add", "creds.txt"], cwd=notebook, check=True)
    with capture_output() as captured:
        ip.run_line_magic("fray", f"session start dry --controller {where[0]} {HOSTS} --dry-run --exclude ^my_exp/old")
    assert "skipped 1 link(s) pointing outside the workspace: creds.txt" in captured.stdout
    assert re.findall(r"^  (\S+)$", captured.stdout, re.MULTILINE) == ["my_exp/__init__.py", "my_exp/model.py"]
    assert "dry" not in SESSIONS

    (notebook / "big.bin").write_bytes(__import__("os").urandom(26 * 2**20))
    with pytest.raises(UsageError) as raised:
        ip.run_line_magic("fray", f"session start big --controller {where[0]} {HOSTS}")
    one_usage_line(raised, "bundles to more than the 25.0 MiB cap", "%fray session start")
    (notebook / "big.bin").unlink()

    name, _ = _start(ip, where)
    with pytest.raises(SessionError, match=r"'\.\./escape\.py' refused"):
        SESSIONS[name].handles[0].sync_workspace({"../escape.py": b"owned"}, [])
    escaped = _cell(ip, name, "import os\nprint('escaped', os.path.exists('../escape.py'))\n")
    assert _by_host(escaped, "escaped") == {0: "False", 1: "False"}


def test_setup_runs_on_every_host_once_with_its_output_per_host(ip: InteractiveShell, where: tuple[str, str],
                                                                notebook: Path, request: pytest.FixtureRequest) -> None:
    if "twin" in request.node.callspec.id:
        pytest.skip("Iris's local process runtime skips setup_commands (iris.cluster.runtime.entrypoint: "
                    "'ProcessRuntime skips it'); its Docker runtime runs them, as the embedded controller does")
    name, started = _start(ip, where, "--setup 'echo set up in $PWD > setup.txt; echo setup-ran'")
    assert len(re.findall(r"^\[[^\]]*[01]\] setup-ran$", started, re.MULTILINE)) == 2, started
    done = _by_host(_cell(ip, name, "print('setup', open('setup.txt').read().startswith('set up in'))\n"), "setup")
    assert done == {0: "True", 1: "True"}
    with capture_output() as captured:
        result = ip.run_cell(f"%fray session start bad --controller {where[0]} {HOSTS} --setup 'exit 3'")
    assert not result.success
    assert "setup command 1/1 failed with exit code 3" in captured.stdout + captured.stderr


def _shipped_files() -> list[str]:
    """What a task finds in its work dir besides the runner's own files (runs in the task)."""
    import os
    from pathlib import Path as TaskPath

    root = TaskPath(os.environ["IRIS_WORKDIR"])
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*")
                  if p.is_file() and not p.name.startswith("_callable") and "__pycache__" not in p.parts)


def test_include_and_exclude_choose_what_a_job_ships_as_iris_job_run_s_do(
        ip: InteractiveShell, where: tuple[str, str], notebook: Path) -> None:
    from fray_jupyter import submit
    from fray_jupyter.client import FrayClient

    (notebook / "tests").mkdir()
    (notebook / "tests" / "fixture.py").write_text("")  # left out by default, as Iris leaves tests/ out
    with capture_output():
        ip.run_cell_magic("fray", "--dry-run --include 'tests/*.py' --exclude ^my_exp/old -o planned", "x = 1\n")
    import io
    import zipfile
    with zipfile.ZipFile(io.BytesIO(ip.user_ns["planned"].request.bundle_blob)) as archive:
        assert sorted(archive.namelist()) == ["my_exp/__init__.py", "my_exp/model.py", "tests/fixture.py"]
    with pytest.raises(UsageError) as raised:
        ip.run_cell_magic("fray", "--dry-run --exclude '(unclosed'", "x = 1\n")
    one_usage_line(raised, "--exclude '(unclosed' is not a regular expression", "%%fray")

    with FrayClient(*where) as client:
        job = submit(_shipped_files, client=client, workspace=notebook, workspace_include=["tests/*.py"],
                     workspace_exclude=["^my_exp/old"], resources=None)
        assert job.result() == ["my_exp/__init__.py", "my_exp/model.py", "tests/fixture.py"]
        assert submit(_shipped_files, client=client).result() == []  # submit(fn) ships only what it is given


def _tiny_wheel(directory: Path) -> Path:
    """A pure-Python wheel of ``tinypkg`` (``VALUE = 7``), built here: no index is reached."""
    import base64
    import hashlib
    import zipfile

    files = {"tinypkg/__init__.py": b"VALUE = 7\n",
             "tinypkg-0.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: tinypkg\nVersion: 0.1\n",
             "tinypkg-0.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                            b"Tag: py3-none-any\n"}
    record = "".join(f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip('=')},"
                     f"{len(data)}\n" for name, data in files.items()) + "tinypkg-0.1.dist-info/RECORD,,\n"
    wheel = directory / "tinypkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        archive.writestr("tinypkg-0.1.dist-info/RECORD", record)
    return wheel


def test_pip_adds_a_package_on_every_host_and_keeps_their_state(
        ip: InteractiveShell, where: tuple[str, str], notebook: Path, tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    """Each host gets its own venv from ``--setup`` (seeing this test's packages through a ``.pth``,
    as a ``uv sync`` venv would hold them), so pip installs there and nowhere shared."""
    import sysconfig

    if "twin" in request.node.callspec.id:
        pytest.skip("needs --setup, which Iris's local process runtime skips")
    (notebook / "make_venv.sh").write_text(
        'set -e\n"$IRIS_PYTHON" -m venv --without-pip .venv\nsite=$(ls -d .venv/lib/python3*/site-packages)\n'
        f"echo \"import site; site.addsitedir('{sysconfig.get_paths()['purelib']}')\" > \"$site/parent.pth\"\n")
    wheel = _tiny_wheel(tmp_path)
    name, _ = _start(ip, where, "--setup 'bash make_venv.sh'")
    _cell(ip, name, "kept = 'still here'\n")
    with capture_output() as captured:
        ip.run_line_magic("fray", f"session pip {name} install --no-index --no-deps {wheel}")
    assert "[host 0] Successfully installed tinypkg-0.1" in captured.stdout
    assert "[host 1] Successfully installed tinypkg-0.1" in captured.stdout
    assert f"session {name}: pip install --no-index --no-deps {wheel} done on 2 host(s)" in captured.stdout
    shown = _by_host(_cell(ip, name, "import sys, tinypkg\nprint('tiny', tinypkg.VALUE, kept, "
                                     "tinypkg.__file__.startswith(sys.prefix))\n"), "tiny")
    assert shown == {0: "7 still here True", 1: "7 still here True"}
    with pytest.raises(UsageError) as raised:
        ip.run_line_magic("fray", f"session pip {name} install --no-index no-such-package-here")
    one_usage_line(raised, "failed on host(s) 0 (exit code 1), 1 (exit code 1)", "%fray session pip")
