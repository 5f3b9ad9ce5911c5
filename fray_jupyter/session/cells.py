"""A cell's code: compiled as IPython runs a cell, and its exceptions described for the notebook.

Rules:

* A cell is compiled under the file name ``<cell ID>`` and its source is kept in ``linecache``
  for the life of the process, so tracebacks show the cell's lines, also for functions a cell
  defined and a later cell calls.
* As in IPython, when the cell's last statement is an expression its value is the cell's value,
  unless the cell ends with ``;`` (which hides it); every other statement only runs.
* An exception is described by :func:`remote_error`: the frames the engine itself ran, before the
  cell's code and after it (the signal handler that raised ``KeyboardInterrupt``), are left out,
  so the traceback is the cell's own code (a ``SyntaxError`` has no frames: its text points at
  the line and column).
"""

from __future__ import annotations

import ast
import io
import linecache
import tokenize
import traceback
from dataclasses import dataclass
from types import CodeType

from fray_jupyter.session.outputs import Frame, RemoteError

_SILENT_TOKENS = frozenset({tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER,
                            tokenize.INDENT, tokenize.DEDENT})


@dataclass(frozen=True)
class CompiledCell:
    """A cell ready to run: ``body`` (every statement but a final expression) and ``last`` (that
    expression, whose value is the cell's), both compiled under ``filename``."""

    filename: str
    body: CodeType
    last: CodeType | None


def cell_filename(cell_id: str) -> str:
    """The file name a cell's code is compiled under: ``<cell ID>``."""
    return f"<cell {cell_id}>"


def ends_with_semicolon(source: str) -> bool:
    """The cell's last code token is ``;`` (comments and blank lines after it do not count)."""
    last = None
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type not in _SILENT_TOKENS:
                last = token
    except (tokenize.TokenError, SyntaxError):
        return False
    return last is not None and last.type == tokenize.OP and last.string == ";"


def compile_cell(cell_id: str, source: str) -> CompiledCell:
    """Compile ``source`` as cell ``cell_id`` (see the module rules); a ``SyntaxError`` is raised as
    Python raises it, naming ``<cell ID>`` and the line."""
    filename = cell_filename(cell_id)
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    tree = ast.parse(source, filename, mode="exec")
    last = None
    final = tree.body[-1] if tree.body else None
    if isinstance(final, ast.Expr) and not ends_with_semicolon(source):
        tree.body.pop()
        last = compile(ast.Expression(final.value), filename, "eval")
    return CompiledCell(filename, compile(tree, filename, "exec"), last)


def qualified_name(kind: type[BaseException]) -> str:
    """``ZeroDivisionError`` for a builtin, ``module.Class`` otherwise."""
    module = kind.__module__
    return kind.__qualname__ if module in ("builtins", "__main__") else f"{module}.{kind.__qualname__}"


def remote_error(exc: BaseException, skip_files: frozenset[str] = frozenset()) -> RemoteError:
    """Describe ``exc`` for the notebook; the leading and trailing frames whose code lives in
    ``skip_files`` (the engine's own modules) are left out of both the frames and the text."""
    described = traceback.TracebackException.from_exception(exc)
    stack = list(described.stack)
    while stack and stack[0].filename in skip_files:
        stack.pop(0)
    while stack and stack[-1].filename in skip_files:
        stack.pop()
    described.stack = traceback.StackSummary.from_list(stack)
    frames = tuple(Frame(entry.filename, entry.lineno or 0, entry.name, entry.line or "") for entry in stack)
    return RemoteError(qualified_name(type(exc)), str(exc), frames, "".join(described.format()))
