"""The quick tier (``scripts/test --quick``, ``pytest -m quick``): the tests of modules that start no
process, so they run in seconds each.

A test module is quick when it is not under a folder of ``SLOW_FOLDERS``, and neither it nor a
``tests`` helper it imports (followed through) imports one of ``SLOW_IMPORTS`` (what starts a
controller, a genuine Iris cluster, a kernel or any other process) or asks for a fixture of
``SLOW_FIXTURES``. A new module is placed by the same rule, with no list to update.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Final

TESTS: Final[Path] = Path(__file__).resolve().parent
SLOW_FOLDERS: Final[frozenset[str]] = frozenset({"differential", "ui"})
"""The genuine-Iris twin's suite and the browser suite."""
SLOW_IMPORTS: Final[frozenset[str]] = frozenset({"subprocess", "multiprocessing", "nbclient"})
SLOW_FIXTURES: Final[frozenset[str]] = frozenset({"jp_fetch", "jp_serverapp", "docs_build", "controller"})
"""pytest-jupyter's server, the run's docs build, and the conftest's embedded controller."""


def _imports_and_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Every module name a source imports (``from a.b import c`` counts ``a.b`` and ``a.b.c``), and
    every argument name of its functions (where fixtures are asked for)."""
    imports: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imports.add(node.module)
            imports.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.update(arg.arg for arg in node.args.args)
    return imports, names


def _helper(name: str) -> Path | None:
    """The source of the ``tests`` helper module ``name``, or None for any other module."""
    if not name.startswith("tests."):
        return None
    base = TESTS.parent.joinpath(*name.split("."))
    return next((path for path in (base.with_suffix(".py"), base / "__init__.py") if path.is_file()), None)


@functools.cache
def _starts_processes(path: Path) -> bool:
    """Whether the source at ``path``, or a ``tests`` helper it imports, imports or asks for what is slow."""
    imports, names = _imports_and_names(ast.parse(path.read_text(), filename=str(path)))
    if imports & SLOW_IMPORTS or names & SLOW_FIXTURES:
        return True
    helpers = {helper for helper in map(_helper, imports) if helper is not None and helper != path}
    return any(_starts_processes(helper) for helper in sorted(helpers))


@functools.cache
def is_quick(path: Path) -> bool:
    """Whether the test module at ``path`` belongs to the quick tier (module rule)."""
    path = path.resolve()
    if not path.is_relative_to(TESTS) or SLOW_FOLDERS & set(path.relative_to(TESTS).parts):
        return False
    return not _starts_processes(path)


def quick_modules() -> list[Path]:
    """Every test module of the quick tier, in path order."""
    return sorted(path for path in TESTS.rglob("test_*.py") if is_quick(path))


if __name__ == "__main__":  # scripts/test --quick: the modules to name, so pytest imports no other
    print("\n".join(str(path.relative_to(TESTS.parent)) for path in quick_modules()))
