"""A session host's side of a workspace sync: write what changed into the host's work dir, remove
what was deleted, and reload the modules those files are.

Rules:

* **Inside the work dir only.** Every name sent is checked before anything is written: a relative
  POSIX path of plain parts (no ``..``, no absolute path, no empty or ``.`` part, no NUL), whose
  directory resolves inside the work dir (a symlinked directory pointing out of it is refused). One
  bad name refuses the whole sync with a ``SessionError`` naming it; nothing is written.
* **Never a torn file.** Each file is written beside its target and moved over it with
  ``os.replace``: a reader (a cell, an import) sees the old bytes or the new ones, never a mix. A
  deleted file is unlinked (a symlink itself, never what it points to); one already gone is fine.
  A stale byte-code cache of a written or deleted ``.py`` file is removed, so a same-size edit
  within the same second is never imported from the old ``.pyc``.
* **Reload, as IPython's ``%autoreload 2``.** Every loaded module whose file was written is
  reloaded by IPython's ``superreload`` (classes and functions the namespace already holds are
  updated in place, so old objects run the new code), deepest module first; without IPython,
  ``importlib.reload``. A module whose reload raises keeps its old code and is listed with the
  error; a module whose file was deleted is dropped from ``sys.modules`` (a later import fails as it
  would on a fresh host) and listed so.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import sys
import types
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from fray_jupyter.session.outputs import SessionError

Reload = Callable[[types.ModuleType], object]


@dataclass(frozen=True)
class SyncReply:
    """What one host did: files written and deleted, modules reloaded, and those it could not
    reload with why (``(module, reason)``)."""

    host: int
    written: int
    deleted: int
    reloaded: tuple[str, ...] = ()
    not_reloaded: tuple[tuple[str, str], ...] = ()


def target(root: Path, name: object) -> Path:
    """Where ``name`` goes under ``root`` (the module rules); ``SessionError`` naming a bad one."""
    if not isinstance(name, str) or not name or "\0" in name or "\\" in name:
        raise SessionError(f"workspace path {name!r} refused: a relative path of plain parts is allowed")
    if PurePosixPath(name).is_absolute() or any(part in ("", ".", "..") for part in name.split("/")):
        raise SessionError(f"workspace path {name!r} refused: only relative paths inside the work dir are "
                           "allowed (no '..', no absolute path)")
    path = root / name
    if not path.parent.resolve().is_relative_to(root.resolve()):
        raise SessionError(f"workspace path {name!r} refused: its directory leads outside the work dir {root}")
    return path


def _drop_bytecode(path: Path) -> None:
    if path.suffix == ".py":
        try:
            Path(importlib.util.cache_from_source(str(path))).unlink(missing_ok=True)
        except (OSError, NotImplementedError, ValueError):
            pass


def apply(root: Path, files: Mapping[str, bytes], deleted: Sequence[str]) -> tuple[list[Path], list[Path]]:
    """Write ``files`` and remove ``deleted`` under ``root`` (the module rules); the paths written
    and removed. Every name is checked first; an ``OSError`` while writing is a ``SessionError``
    naming the file."""
    if not isinstance(files, Mapping) or not all(isinstance(data, bytes) for data in files.values()):
        raise SessionError("a workspace sync sends a mapping of path to bytes")
    if isinstance(deleted, (str, bytes)) or not isinstance(deleted, Sequence):
        raise SessionError(f"a workspace sync names deleted files as a list of paths, not {type(deleted).__name__}")
    written = [(target(root, name), data) for name, data in files.items()]
    removed = [target(root, name) for name in deleted]
    for path, data in written:
        temporary = path.with_name(f".{path.name}.fray-sync-{os.getpid()}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary.write_bytes(data)
            os.replace(temporary, path)
        except OSError as error:
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
            raise SessionError(f"cannot write {path.relative_to(root)}: {error.strerror or error}") from None
        _drop_bytecode(path)
    for path in removed:
        try:
            path.unlink(missing_ok=True)
        except OSError as error:
            raise SessionError(f"cannot remove {path.relative_to(root)}: {error.strerror or error}") from None
        _drop_bytecode(path)
    return [path for path, _ in written], removed


def _reloader(old_objects: dict[Any, Any]) -> Reload:
    try:
        from IPython.extensions.autoreload import superreload
    except ImportError:
        return importlib.reload
    return lambda module: superreload(module, old_objects=old_objects)  # type: ignore[no-untyped-call]


def _loaded_from(paths: Sequence[Path]) -> dict[str, types.ModuleType]:
    """The loaded modules whose file is one of ``paths``, by name."""
    wanted = {os.path.realpath(path) for path in paths}
    found = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and module is not None and os.path.realpath(file) in wanted:
            found[name] = module
    return found


def reload_changed(written: Sequence[Path], removed: Sequence[Path],
                   old_objects: dict[Any, Any]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Reload the modules of ``written`` and drop those of ``removed`` (the module rules); the
    modules reloaded and the ``(module, why)`` of those that were not."""
    reload = _reloader(old_objects)
    reloaded, not_reloaded = [], []
    for name in _loaded_from(removed):
        sys.modules.pop(name, None)
        not_reloaded.append((name, "its file was deleted: dropped from sys.modules"))
    for name, module in sorted(_loaded_from(written).items(), key=lambda item: (-item[0].count("."), item[0])):
        try:
            reload(module)
        except BaseException as error:  # noqa: BLE001 - the user's module may raise anything
            not_reloaded.append((name, f"{type(error).__name__}: {error} (it keeps its old code)"))
        else:
            reloaded.append(name)
    importlib.invalidate_caches()
    return tuple(sorted(reloaded)), tuple(not_reloaded)
