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
* A caller's ``exclude`` regular expression (``iris job run --exclude``, the patterns OR'd) takes
  paths out of the listing and out of everything added back; a caller's ``include`` globs
  (``--include``) are added last, over Iris's default exclusions (tests, docs) but never over
  ``ALWAYS_EXCLUDE`` or the caller's ``exclude``.
* A path that resolves outside the directory (a symlink to ``~/.ssh``, to ``/etc``) is never
  bundled: it is skipped and ``note`` names it.
* Entries are stored relative to the directory, deflated, in sorted order, each with the sha256 of
  the bytes stored (``hashes``) and its fingerprint (``marks``: size, mtime, ctime, inode). A file
  is read whole and its fingerprint looked at before and after: a file that changes while it is
  read is read again, and one that keeps changing is a ``ValueError`` naming it (never a torn copy).
  A file deleted after it was listed is left out.
* The zip must not exceed ``MAX_BUNDLE_SIZE_BYTES`` (25 MiB, Iris's controller cap): building stops
  as soon as it does, and the ``BundleTooLarge`` error names the directory, the size reached and the
  cap.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import re
import stat
import subprocess
import tomllib
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
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
    """The zip's bytes, the relative paths it holds, a note on how they were chosen, and the sha256
    of each file's bytes as stored."""

    blob: bytes
    files: tuple[str, ...]
    note: str
    hashes: Mapping[str, str] = field(default_factory=dict)
    marks: Mapping[str, tuple[int, int, int, int]] = field(default_factory=dict)
    """Each file's fingerprint when it was read (``fingerprint``)."""

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


def workspace_files(directory: Path, *, include: Sequence[str] = (),
                    exclude: re.Pattern[str] | None = None) -> tuple[list[str], str]:
    """The relative paths to bundle (sorted, existing regular files inside ``directory``) and the
    note saying how, with the caller's ``include`` globs and ``exclude`` pattern (module rules)."""
    listing, note = workspace_listing(directory, include=include, exclude=exclude)
    return list(listing), note


def workspace_listing(directory: Path, *, include: Sequence[str] = (),
                      exclude: re.Pattern[str] | None = None) -> tuple[dict[str, os.stat_result], str]:
    """``workspace_files`` with each file's ``os.stat`` result, in the same (sorted) order: one
    system call per file, so a caller that compares fingerprints needs none of its own."""
    root = directory.resolve()
    listed = _git_files(directory)
    if listed is None:
        listed = _walk(directory)
        note = f"{directory} is not a git work tree: bundled every file under it (minus caches and venvs)"
    else:
        note = f"bundled the files git lists in {directory} (tracked and not ignored)"

    def refused(name: str) -> bool:
        return bool(ALWAYS_EXCLUDE.search(name) or (exclude is not None and exclude.search(name)))

    chosen = {name for name in listed  # EXCLUDE holds ALWAYS_EXCLUDE: one (remembered) search each
              if not _excluded(name) and not (exclude is not None and exclude.search(name))}
    includes, excludes = project_bundle_table(directory)
    for pattern in (*GENERATED_GLOBS, *includes):
        chosen.update(name for name in _globbed(directory, pattern) if not refused(name))
    if excludes is not None:
        chosen = {name for name in chosen if not excludes.search(name)}
    chosen.update(name for pattern in include for name in _globbed(directory, pattern) if not refused(name))
    if includes or excludes is not None:
        note += "; with [tool.iris.bundle] from pyproject.toml"
    if include or exclude is not None:
        note += "; with --include/--exclude"
    files, outside = _regular_files_inside(str(root), str(directory), chosen)
    if outside:
        shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if len(outside) > 3 else "")
        note += f"; skipped {len(outside)} link(s) pointing outside the workspace: {shown}"
    return files, note


def _regular_files_inside(root: str, directory: str,
                          names: set[str]) -> tuple[dict[str, os.stat_result], list[str]]:
    """Of ``names`` (relative to ``directory``, whose real path is ``root``): the regular files
    whose real path is inside ``root``, and those that lead outside it, both sorted. A directory's
    real path is looked up once, and a file's only when it is a symlink (os-level calls: a 2,000-file
    workspace is listed in a few milliseconds)."""
    def inside(real: str) -> bool:
        return real == root or real.startswith(root + os.sep)

    folders: dict[str, bool] = {}
    files: dict[str, os.stat_result] = {}
    outside: list[str] = []
    for name in sorted(names):
        folder = name.rpartition("/")[0]
        if folder not in folders:
            folders[folder] = inside(os.path.realpath(os.path.join(directory, folder)))
        path = f"{directory}{os.sep}{name}"
        try:
            status = os.lstat(path)
            if stat.S_ISLNK(status.st_mode):
                if not inside(os.path.realpath(path)):
                    outside.append(name)
                    continue
                status = os.stat(path)
        except OSError:
            continue  # gone, or a link to nothing
        if not folders[folder]:
            outside.append(name)
        elif stat.S_ISREG(status.st_mode):
            files[name] = status
    return files, outside


@functools.lru_cache(maxsize=1 << 16)
def _excluded(name: str) -> bool:
    """Whether ``EXCLUDE`` leaves ``name`` out, remembered: a workspace checked before every cell
    lists the same names each time."""
    return bool(EXCLUDE.search(name))


def _globbed(directory: Path, pattern: str) -> list[str]:
    """The relative paths ``pattern`` matches under ``directory``; a bad glob is a ``ValueError`` naming it."""
    try:
        return [path.relative_to(directory).as_posix() for path in directory.glob(pattern)]
    except (ValueError, NotImplementedError) as error:
        raise ValueError(f"include glob {pattern!r}: {error}") from None


def caller_exclude(patterns: Sequence[str]) -> re.Pattern[str] | None:
    """``--exclude`` patterns OR'd into one regular expression (None for none), as ``iris job run``
    joins them; a bad one is a ``ValueError`` naming it."""
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"--exclude {pattern!r} is not a regular expression: {error}") from None
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns)) if patterns else None


Fingerprint = tuple[int, int, int, int]
"""A file's size, mtime, ctime and inode (ns): what changes when anything writes it."""


def fingerprint(status: os.stat_result) -> Fingerprint:
    """The ``Fingerprint`` of a stat result."""
    return status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino


def read_marked(path: Path, attempts: int = 3) -> tuple[bytes, Fingerprint]:
    """``path``'s bytes, read whole while it did not change (module rules), and its fingerprint
    then; ``ValueError`` naming a file that kept changing."""
    for _ in range(attempts):
        before = fingerprint(path.stat())
        data = path.read_bytes()
        if fingerprint(path.stat()) == before and len(data) == before[0]:
            return data, before
    raise ValueError(f"{path} kept changing while it was being read ({attempts} tries): "
                     "let whatever writes it finish, then send the workspace again")


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


def create_workspace_zip(directory: str | Path, *, max_bytes: int | None = None, include: Sequence[str] = (),
                         exclude: re.Pattern[str] | None = None) -> WorkspaceBundle:
    """Bundle ``directory`` by the module's rules; ``max_bytes`` defaults to ``MAX_BUNDLE_SIZE_BYTES``.
    Raises ``ValueError`` when the directory is missing or a file keeps changing, ``BundleTooLarge``
    when the zip would be too big."""
    root = Path(directory).expanduser()
    if not root.is_dir():
        raise ValueError(f"workspace {str(directory)!r} is not a directory")
    root = root.resolve()
    cap = MAX_BUNDLE_SIZE_BYTES if max_bytes is None else max_bytes
    files, note = workspace_files(root, include=include, exclude=exclude)
    hashes: dict[str, str] = {}
    marks: dict[str, Fingerprint] = {}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for done, name in enumerate(files, 1):
            try:
                data, marks[name] = read_marked(root / name)
            except FileNotFoundError:
                continue  # deleted since it was listed: not in the workspace any more
            hashes[name] = hashlib.sha256(data).hexdigest()
            archive.writestr(zipfile.ZipInfo.from_file(root / name, name), data, zipfile.ZIP_DEFLATED)
            if buffer.tell() > cap:
                so_far = "" if done == len(files) else f" after {done} of {len(files)} files"
                raise BundleTooLarge(root, f"{mib(buffer.tell())}{so_far}", cap)
    blob = buffer.getvalue()
    if len(blob) > cap:
        raise BundleTooLarge(root, mib(len(blob)), cap)
    return WorkspaceBundle(blob, tuple(name for name in files if name in hashes), note, hashes, marks)
