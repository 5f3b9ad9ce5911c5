"""fray_jupyter's own import graph, read from the source (``ast``), for the layer and import-budget
tests: which modules each module imports, all of them or only those run when it is imported."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from functools import cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent / "fray_jupyter"
PACKAGE = "fray_jupyter"


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name)."""
    found = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _statements(body: list[ast.stmt], at_import: bool) -> Iterator[ast.stmt]:
    """The statements of ``body`` and, nested, of its blocks; with ``at_import`` only those that run
    when the module is imported (not function bodies, not ``if TYPE_CHECKING:``)."""
    for statement in body:
        yield statement
        if at_import and isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if at_import and isinstance(statement, ast.If) and _is_type_checking(statement.test):
            yield from _statements(statement.orelse, at_import)
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(statement, field, None)
            if isinstance(block, list):
                yield from _statements([s for s in block if isinstance(s, ast.stmt)] + [
                    s for h in block if isinstance(h, ast.ExceptHandler) for s in h.body], at_import)


def _package_of(name: str) -> str:
    return name if modules()[name].name == "__init__.py" else name.rpartition(".")[0]


@cache
def imports(name: str, *, at_import: bool) -> frozenset[str]:
    """The dotted names ``name`` imports (ours and third-party): a ``from X import Y`` names
    ``X.Y`` when that is one of our modules, else ``X``."""
    tree = ast.parse(modules()[name].read_text())
    found: set[str] = set()
    for statement in _statements(tree.body, at_import):
        if isinstance(statement, ast.Import):
            found.update(alias.name for alias in statement.names)
        elif isinstance(statement, ast.ImportFrom):
            base = statement.module or ""
            if statement.level:
                package = _package_of(name).split(".")
                package = package[: len(package) - statement.level + 1]
                base = ".".join([*package, base] if base else package)
            for alias in statement.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules() else base)
    return frozenset(found)


def own(names: frozenset[str]) -> frozenset[str]:
    """Only our modules, each with the packages above it (importing ``a.b.c`` runs ``a`` and ``a.b``)."""
    result = set()
    for imported in names:
        if imported == PACKAGE or imported.startswith(PACKAGE + "."):
            parts = imported.split(".")
            result.update(".".join(parts[:i]) for i in range(1, len(parts) + 1) if ".".join(parts[:i]) in modules())
    return frozenset(result)


@cache
def loaded_by(name: str) -> frozenset[str]:
    """Every module (ours and the top-level names of third-party ones) that importing ``name`` runs,
    following our modules' import-time imports."""
    seen: set[str] = set()
    external: set[str] = set()
    todo = [name, *own(frozenset({name}))]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        names = imports(current, at_import=True)
        external.update(n for n in names if not (n == PACKAGE or n.startswith(PACKAGE + ".")))
        todo.extend(own(names) - seen)
    return frozenset(seen | external)
