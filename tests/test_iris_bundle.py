"""Workspace bundles as Iris builds them, and ``plan(bundle=...)`` sending one as ``bundle_blob``."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
from google.protobuf import text_format

from fray_jupyter.iris.bundle import MAX_BUNDLE_SIZE_BYTES, BundleTooLarge, create_workspace_zip
from fray_jupyter.iris.request import LaunchJobRequest
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from tests.assertions import one_line_value_error


def _tree(root: Path) -> None:
    for name, text in {"pkg/mod.py": "X = 1\n", "main.py": "print(1)\n", "notes.ipynb": "{}",
                       "pkg/__pycache__/mod.cpython-312.pyc": "", "tests/test_x.py": "", ".venv/bin/python": "",
                       "build/out.bin": "big", ".gitignore": "build/\n"}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def _names(blob: bytes) -> list[str]:
    with zipfile.ZipFile(io.BytesIO(blob)) as archive:
        return sorted(archive.namelist())


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_git_work_tree_bundles_what_git_lists_minus_irises_exclusions(tmp_path: Path) -> None:
    _tree(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "main.py"], cwd=tmp_path, check=True)  # pkg/ stays untracked, not ignored
    bundle = create_workspace_zip(tmp_path)
    assert bundle.files == (".gitignore", "main.py", "pkg/mod.py")  # build/ ignored; tests, notebooks excluded
    assert _names(bundle.blob) == list(bundle.files) and "git lists" in bundle.note


def test_a_plain_directory_bundles_every_file_and_says_so(tmp_path: Path) -> None:
    _tree(tmp_path)
    bundle = create_workspace_zip(tmp_path)
    assert bundle.files == (".gitignore", "build/out.bin", "main.py", "pkg/mod.py")
    assert "is not a git work tree" in bundle.note


def test_the_cap_names_the_directory_the_size_and_the_cap(tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(os.urandom(100_000))
    with pytest.raises(BundleTooLarge) as raised:
        create_workspace_zip(tmp_path, max_bytes=1000)
    error = raised.value
    assert isinstance(error, ValueError) and "\n" not in str(error)
    assert str(tmp_path) in str(error) and "more than the 0.0 MiB cap (0.1 MiB)" in str(error)
    assert (error.directory, error.cap, error.reached) == (tmp_path.resolve(), 1000, "0.1 MiB")
    assert MAX_BUNDLE_SIZE_BYTES == 25 * 2**20


def test_a_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as raised:
        create_workspace_zip(tmp_path / "nope")
    one_line_value_error(raised, "nope", "is not a directory")


def test_plan_sends_the_bundle_as_bundle_blob(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("A = 1\n")
    bundle = create_workspace_zip(tmp_path)
    job = JobRequest(name="b", entrypoint=Entrypoint.from_cell("import helper"), resources=ResourceConfig())
    with_bundle, without = plan(job, user="u", bundle=bundle.blob), plan(job, user="u")
    assert with_bundle.request.bundle_blob == bundle.blob and with_bundle.bundle_size == len(bundle.blob)
    assert without.request.bundle_blob == b"" and without.bundle_size == 0
    assert bundle.summary == f"{bundle.note}: 1 files, 0.0 MiB zipped"


def test_the_request_text_shows_a_bundle_as_its_size_not_its_bytes(tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(os.urandom(50_000))
    bundle = create_workspace_zip(tmp_path)
    job = JobRequest(name="b", entrypoint=Entrypoint.from_cell("x = 1"), resources=ResourceConfig())
    shown = plan(job, user="u", bundle=bundle.blob)
    assert f'\nbundle_blob: ""  # {len(bundle.blob)} bytes: the workspace zip, not shown\n' in shown.request_text
    assert len(shown.request_text) < 2000  # the zip is not in it
    parsed = text_format.Parse(shown.request_text, LaunchJobRequest())
    assert parsed == plan(job, user="u").request  # the rest of the request, as sent


def _marin_checkout(root: Path) -> None:
    """A workspace using what Iris's bundler adds back and takes out beyond its defaults."""
    for name, text in {"lib/iris/src/iris/rpc/job_pb2.py": "", "lib/iris/src/iris/rpc/job.proto": "",
                       "web/dist/app.js": "", "data/big.bin": "", "main.py": "", "tests/keep.txt": "",
                       "web/node_modules/x.js": "",
                       ".gitignore": "lib/iris/src/iris/rpc/*_pb2.py\nweb/dist/\n",
                       "pyproject.toml": '[tool.iris.bundle]\ninclude = ["web/dist/*.js", "tests/keep.txt", '
                                         '"web/node_modules/*.js"]\nexclude = ["^data/"]\n'}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.mark.parametrize("git", [True, False], ids=["git work tree", "plain directory"])
def test_generated_code_and_the_projects_bundle_table_as_iris_s_own_bundler(tmp_path: Path, git: bool) -> None:
    """Iris's own ``collect_workspace_files`` is the oracle: gitignored generated protobuf code and
    ``[tool.iris.bundle]`` includes come back (never what is always excluded), its excludes go."""
    from iris.cluster.client import bundle as bundler
    if git and shutil.which("git") is None:
        pytest.skip("needs git")
    _marin_checkout(tmp_path)
    if git:
        subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    ours = create_workspace_zip(tmp_path)
    theirs = [path.relative_to(tmp_path).as_posix() for path in bundler.collect_workspace_files(tmp_path)]
    assert list(ours.files) == sorted(theirs)
    assert {"lib/iris/src/iris/rpc/job_pb2.py", "web/dist/app.js", "tests/keep.txt"} <= set(ours.files)
    assert not {"data/big.bin", "web/node_modules/x.js"} & set(ours.files)
    assert "[tool.iris.bundle]" in ours.note


def test_a_bad_bundle_table_is_one_line_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.iris.bundle]\nexclude = "data"\n')
    with pytest.raises(ValueError) as excinfo:
        create_workspace_zip(tmp_path)
    one_line_value_error(excinfo, "pyproject.toml", "exclude", "list of strings, got 'data'")
    (tmp_path / "pyproject.toml").write_text('[tool.iris.bundle]\nexclude = ["(unclosed"]\n')
    with pytest.raises(ValueError) as excinfo:
        create_workspace_zip(tmp_path)
    one_line_value_error(excinfo, "pyproject.toml", "bad regular expression")
