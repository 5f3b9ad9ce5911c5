"""A workspace bundle as Iris's client builds one: a zip of a directory's files, sent as the
request's ``bundle_blob`` and unpacked into every task's work dir before it runs.

Rules (restating ``iris.cluster.client.bundle``):

* Files: what ``git ls-files --cached --others --exclude-standard`` lists (tracked, plus untracked
  files ``.gitignore`` does not ignore). Where the directory is not in a git work tree (or git is
  missing), every file under it, and the bundle says so in ``note``.
* Either way, paths matching ``EXCLUDE`` are left out (caches, virtualenvs, VCS metadata, notebooks,
  ``tests/`` and ``docs/``: Iris's default exclusions).
* Then files matching ``GENERATED_GLOBS`` (Iris's generated protobuf code, gitignored but needed
  at run time) and the ``include`` globs of ``[tool.iris.bundle]`` in the directory's
  ``pyproject.toml`` are added back, unless they match ``ALWAYS_EXCLUDE``; then that table's
  ``exclude`` regular expressions take files out. A ``pyproject.toml`` that does not parse, or a
  table of the wrong shape, is a ``ValueError`` naming the file and the key.
* Entries are stored relative to the directory, deflated, in sorted order.
* The zip must not exceed ``MAX_BUNDLE_SIZE_BYTES`` (25 MiB, Iris's controller cap): building stops
  as soon as it does, and the ``BundleTooLarge`` error names the directory, the size reached and the
  cap.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

MAX_BUNDLE_SIZE_BYTES: Final[int] = 25 * 1024 * 1024
"""Iris's cap on ``bundle_blob`` (``iris.cluster.bundle.MAX_BUNDLE_SIZE_BYTES``)."""

ALWAYS_EXCLUDE: Final[re.Pattern[str]] = re.compile(
    r"""
      \.mov$ | \.pyc$ | \.so$ | \.egg-info(/|$)
    | (^|/)(__pycache__|\.git|\.mypy_cache|\.pytest_cache|\.ruff_cache|\.venv|venv|node_modules|target)(/|$)
    | (^|/)gha-creds-[^/]+\.json$
    """,
    re.VERBOSE,
)
"""Iris's ``ALWAYS_EXCLUDE``: never bundled, not even when a glob asks for it."""

EXCLUDE: Final[re.Pattern[str]] = re.compile(
    ALWAYS_EXCLUDE.pattern + r"""
    | (^|/)(docs|tests|journeys-out)(/|$)
    | (^|/)\.(agents|claude|codex|github)(/|$)
    | (^|/)(AGENTS|TESTING|OPS)\.md$
    | \.ipynb$
    """,
    re.VERBOSE,
)
"""Iris's ``DEFAULT_EXCLUDE``: matched against each path relative to the directory, with '/'."""

GENERATED_GLOBS: Final[tuple[str, ...]] = tuple(
    f"{root}src/iris/rpc/*{suffix}" for root in ("", "lib/iris/") for suffix in ("_pb2.py", "_pb2.pyi", "_connect.py"))
"""Iris's ``GENERATED_ARTIFACT_GLOBS``: build outputs a Marin checkout ignores but its tasks import."""


def mib(num_bytes: int) -> str:
    """``num_bytes`` in MiB with one decimal: ``25.0 MiB``."""
    return f"{num_bytes / 2**20:.1f} MiB"


@dataclass(frozen=True)
class WorkspaceBundle:
    """The zip's bytes, the relative paths it holds, and a note on how they were chosen."""

    blob: bytes
    files: tuple[str, ...]
    note: str

    @property
    def summary(self) -> str:
        """What is sent, in one line: the note, the file count and the zip's size."""
        return f"{self.note}: {len(self.files)} files, {mib(len(self.blob))} zipped"


class BundleTooLarge(ValueError):
    """``directory`` bundles to more than ``cap`` bytes: ``reached`` says how far it got (the size,
    and the files written when it stopped early)."""

    def __init__(self, directory: Path, reached: str, cap: int) -> None:
        self.directory = directory
        self.reached = reached
        self.cap = cap
        super().__init__(f"workspace {directory} bundles to more than the {mib(cap)} cap ({reached}); "
                         ".gitignore large files or bundle a smaller directory")


def _git_files(directory: Path) -> list[str] | None:
    """Paths git would bundle, or None when ``directory`` is not in a git work tree."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                                cwd=directory, capture_output=True, check=True, timeout=60)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None
    return [name for name in listed.stdout.decode(errors="surrogateescape").split("\0") if name]


def _walk(directory: Path) -> list[str]:
    """Every path under ``directory``, relative, without descending into a directory ``EXCLUDE``
    leaves out whole (a venv, ``node_modules``, ``.git``...: a kernel started in ``$HOME`` must
    not list them all before the cap can stop it)."""
    found = []
    for top, dirs, names in os.walk(directory):
        relative = Path(top).relative_to(directory).as_posix()
        prefix = "" if relative == "." else relative + "/"
        dirs[:] = [name for name in dirs if not EXCLUDE.search(f"{prefix}{name}/")]
        found += [prefix + name for name in names]
    return found


def workspace_files(directory: Path) -> tuple[list[str], str]:
    """The relative paths to bundle (sorted, existing regular files) and the note saying how."""
    listed = _git_files(directory)
    if listed is None:
        listed = _walk(directory)
        note = f"{directory} is not a git work tree: bundled every file under it (minus caches and venvs)"
    else:
        note = f"bundled the files git lists in {directory} (tracked and not ignored)"
    chosen = {name for name in listed if not EXCLUDE.search(name)}
    includes, excludes = project_bundle_table(directory)
    for pattern in (*GENERATED_GLOBS, *includes):
        matched = (path.relative_to(directory).as_posix() for path in directory.glob(pattern))
        chosen.update(name for name in matched if not ALWAYS_EXCLUDE.search(name))
    if excludes is not None:
        chosen = {name for name in chosen if not excludes.search(name)}
    if includes or excludes is not None:
        note += "; with [tool.iris.bundle] from pyproject.toml"
    return sorted(name for name in chosen if (directory / name).is_file()), note


def project_bundle_table(directory: Path) -> tuple[tuple[str, ...], re.Pattern[str] | None]:
    """``[tool.iris.bundle]`` of ``directory/pyproject.toml``: its ``include`` globs and its
    ``exclude`` regular expressions joined into one (None without any); ``ValueError`` naming the
    file when it does not parse or the table has the wrong shape."""
    path = directory / "pyproject.toml"
    if not path.is_file():
        return (), None
    try:
        table = tomllib.loads(path.read_text()).get("tool", {}).get("iris", {}).get("bundle", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"cannot read {path} for its [tool.iris.bundle] table: {error}") from None
    includes, excludes = table.get("include", []), table.get("exclude", [])
    for key, value in (("include", includes), ("exclude", excludes)):
        if not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
            raise ValueError(f"[tool.iris.bundle] {key} in {path} must be a list of strings, got {value!r}")
    try:
        joined = re.compile("|".join(f"(?:{pattern})" for pattern in excludes)) if excludes else None
    except re.error as error:
        raise ValueError(f"[tool.iris.bundle] exclude in {path} has a bad regular expression: {error}") from None
    return tuple(includes), joined


def create_workspace_zip(directory: str | Path, *, max_bytes: int | None = None) -> WorkspaceBundle:
    """Bundle ``directory`` by the module's rules; ``max_bytes`` defaults to ``MAX_BUNDLE_SIZE_BYTES``.
    Raises ``ValueError`` when the directory is missing, ``BundleTooLarge`` when the zip would be
    too big."""
    root = Path(directory).expanduser()
    if not root.is_dir():
        raise ValueError(f"workspace {str(directory)!r} is not a directory")
    root = root.resolve()
    cap = MAX_BUNDLE_SIZE_BYTES if max_bytes is None else max_bytes
    files, note = workspace_files(root)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for done, name in enumerate(files, 1):
            archive.write(root / name, name)
            if buffer.tell() > cap:
                so_far = "" if done == len(files) else f" after {done} of {len(files)} files"
                raise BundleTooLarge(root, f"{mib(buffer.tell())}{so_far}", cap)
    blob = buffer.getvalue()
    if len(blob) > cap:
        raise BundleTooLarge(root, mib(len(blob)), cap)
    return WorkspaceBundle(blob, tuple(files), note)
