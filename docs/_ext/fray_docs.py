"""The docs' reference pages, generated from the code so they cannot drift from it.

Directives (each renders reStructuredText and parses it in place):

* ``fray-argparse module:function`` — an argparse parser (``%%fray``'s from the one flag table in
  ``fray_jupyter/flags.py``, the CLI's): usage, description, and a table of flags per group;
  ``:command: NAME`` renders one subcommand, ``:subcommands:`` renders each of them.
* ``fray-traits module:Class`` — a class's configurable traitlets (``c.Class.name``).
* ``fray-env`` — one row per content line ``module:CONSTANT | meaning | default``: the variable's
  name is the constant's value, so renaming it in the code breaks the build.
* ``fray-routes module:ROUTES`` — the server extension's REST routes and their handlers' docs.
* ``fray-typeddicts module`` — every ``TypedDict`` of a module, its fields and their docs.
* ``fray-differences`` — the deliberate differences from Marin's client and from the genuine Iris
  scheduler, read from the test suites that enforce them (``tests/conformance``, ``tests/differential``).

The build also copies ``examples/`` into ``docs/examples/`` (generated, ignored by git), runs the
notebooks in private Jupyter dirs (``builder-inited``) and stops the embedded controller they
started when it ends (``build-finished``).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import os
import re
import shutil
import tempfile
import typing
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.pycode import ModuleAnalyzer
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

REPO = Path(__file__).resolve().parents[2]
ISOLATED_ENV = ("JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR")
CLEARED_ENV = ("FRAY_CONTROLLER_URL", "FRAY_CONTROLLER_TOKEN", "FRAY_CLUSTER", "MARIN_CLUSTER")
DOCS_USER = "alice"
"""The user the executed examples submit as, so pages do not depend on who builds them."""


# -- reStructuredText helpers -----------------------------------------------------------------------
def text(value: str) -> str:
    """Plain text as inline reStructuredText: markup characters escaped, except that `x` (a
    Markdown-style code span, as help texts write them) becomes a literal."""
    parts = str(value).split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: keep it as text
        parts = [str(value).replace("`", "'")]
    escaped = [re.sub(r"([\\*_|\[\]])", r"\\\1", part) if i % 2 == 0 else f"``{part}``"
               for i, part in enumerate(parts)]
    return " ".join("".join(escaped).split())


def literal(value: str) -> str:
    """``value`` as an inline literal (nothing inside is markup)."""
    return f"``{value}``" if value else ""


def list_table(headers: Sequence[str], rows: Iterable[Sequence[str]], widths: str = "auto") -> list[str]:
    """A ``list-table``; each cell is inline reStructuredText (an empty cell stays empty)."""
    lines = [".. list-table::", "   :header-rows: 1", f"   :widths: {widths}", ""]
    for row in [headers, *rows]:
        for i, cell in enumerate(row):
            lines.append(f"   {'* -' if i == 0 else '  -'} {cell}".rstrip())
    return [*lines, ""]


def docstring(obj: Any) -> list[str]:
    """``obj``'s docstring, dedented, as reStructuredText lines."""
    return (inspect.getdoc(obj) or "").splitlines()


def resolve(spec: str) -> Any:
    """``module:attribute`` (or a bare module) to the object."""
    module, _, name = spec.partition(":")
    found: Any = importlib.import_module(module)
    for part in filter(None, name.split(".")):
        found = getattr(found, part)
    return found


class GeneratedDirective(SphinxDirective):
    """A directive whose ``lines()`` are parsed in place as reStructuredText."""

    def lines(self) -> list[str]:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        container = nodes.container()
        source = self.get_source_info()[0]
        nested_parse_with_titles(self.state, StringList(self.lines(), source=source), container,
                                 self.content_offset)
        return list(container.children)


# -- argparse ---------------------------------------------------------------------------------------
def _flag(action: argparse.Action) -> str:
    if not action.option_strings:
        return action.metavar if isinstance(action.metavar, str) else action.dest
    metavar = action.metavar if action.metavar is not None else action.dest.upper()
    value = "" if action.nargs == 0 else " ".join(metavar) if isinstance(metavar, tuple) else str(metavar)
    return ", ".join(action.option_strings) + (f" {value}" if value else "")


def _meaning(action: argparse.Action, exclusive: dict[argparse.Action, list[argparse.Action]]) -> str:
    parts = [text(action.help or "")]
    if action.default not in (None, False, [], argparse.SUPPRESS) and action.nargs != 0:
        parts.append(f"(default {literal(str(action.default))})")
    if isinstance(action, argparse._AppendAction):
        parts.append("(repeatable)" if "repeatable" not in (action.help or "") else "")
    others = [other.option_strings[-1] for other in exclusive.get(action, []) if other.option_strings]
    if others:
        parts.append(f"(not with {', '.join(literal(o) for o in others)})")
    return " ".join(part for part in parts if part)


def parser_lines(parser: argparse.ArgumentParser, *, heading: str | None = None) -> list[str]:
    """Usage, description, one table per argument group, the epilog; then each subcommand."""
    lines: list[str] = []
    if heading:
        lines += [heading, "~" * len(heading), ""]
    usage = [line for line in parser.format_usage().splitlines() if line.strip() not in ("", "::")]
    lines += [".. code-block:: text", "", *(f"   {line}" for line in usage), ""]
    for paragraph in (parser.description or "").split("\n\n"):
        lines += [text(paragraph), ""] if paragraph.strip() else []
    exclusive: dict[argparse.Action, list[argparse.Action]] = {}
    for group in parser._mutually_exclusive_groups:
        for action in group._group_actions:
            exclusive[action] = [other for other in group._group_actions if other is not action]
    subcommands: list[argparse._SubParsersAction[Any]] = []
    for group in parser._action_groups:
        rows = []
        for action in group._group_actions:
            if isinstance(action, argparse._SubParsersAction):
                subcommands.append(action)
            elif not isinstance(action, argparse._HelpAction) and action.help != argparse.SUPPRESS:
                rows.append((literal(_flag(action)), _meaning(action, exclusive)))
        if rows:
            title = {"options": "options", "optional arguments": "options",
                     "positional arguments": "arguments"}.get(group.title or "", group.title or "")
            lines += [f".. rubric:: {text(title)}", "", *list_table(("flag", "meaning"), rows, "35 65")]
    if parser.epilog:
        lines += [".. code-block:: text", "", *(f"   {line}" for line in parser.epilog.strip().splitlines()), ""]
    for action in subcommands:
        for name, sub in action.choices.items():
            sub.prog = f"{parser.prog} {name}"
            lines += parser_lines(sub, heading=getattr(sub, "label", sub.prog))  # a magic's label: "%fray jobs"
    return lines


class ArgparseDirective(GeneratedDirective):
    """``.. fray-argparse:: module:function`` (see the module docstring)."""

    required_arguments = 1
    option_spec: ClassVar[dict[str, Any]] = {"command": directives.unchanged}

    def lines(self) -> list[str]:
        parser: argparse.ArgumentParser = resolve(self.arguments[0])()
        if "command" in self.options:
            subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
            parser = subparsers.choices[self.options["command"]]
        return parser_lines(parser)


class DocstringDirective(GeneratedDirective):
    """``.. fray-docstring:: module[:attribute]`` — that object's docstring, as written."""

    required_arguments = 1

    def lines(self) -> list[str]:
        return [*docstring(resolve(self.arguments[0])), ""]


class ApiDirective(GeneratedDirective):
    """``.. fray-api::`` — autodoc of every public name of ``fray_jupyter``, grouped by the module
    that defines it (classes and functions under their public name, data where its docs live)."""

    def lines(self) -> list[str]:
        import fray_jupyter

        by_module: dict[str, list[str]] = {}
        for name, module in fray_jupyter._EXPORTS.items():
            by_module.setdefault(module, []).append(name)
        lines: list[str] = []
        for module, names in by_module.items():
            summary = (docstring(importlib.import_module(module)) or [""])[0]
            title = f"``{module}``"
            lines += [title, "-" * len(title), "", summary, ""]
            for name in names:
                obj = getattr(fray_jupyter, name)
                if inspect.isclass(obj):
                    lines += [f".. autoclass:: fray_jupyter.{name}", ""]
                elif callable(obj):
                    lines += [f".. autofunction:: fray_jupyter.{name}", ""]
                else:
                    lines += [f".. autodata:: {module}.{name}", "   :no-value:", ""]
        return lines


# -- settings ---------------------------------------------------------------------------------------
class TraitsDirective(GeneratedDirective):
    """``.. fray-traits:: module:Class`` — its ``config=True`` traitlets."""

    required_arguments = 1

    def lines(self) -> list[str]:
        owner = resolve(self.arguments[0])
        rows = [(literal(f"c.{owner.__name__}.{name}"), literal(type(trait).__name__),
                 literal(repr(trait.default_value)), text(trait.help or ""))
                for name, trait in owner.class_traits(config=True).items()]
        return list_table(("setting", "type", "default", "meaning"), rows, "30 10 15 45")


class EnvDirective(GeneratedDirective):
    """``.. fray-env::`` with lines ``module:CONSTANT | meaning | default`` (inline RST)."""

    has_content = True

    def lines(self) -> list[str]:
        rows = []
        for line in self.content:
            if not line.strip():
                continue
            spec, meaning, default = (part.strip() for part in line.split(" | "))
            names = [resolve(one.strip()) for one in spec.split(",")]
            rows.append((", then ".join(literal(f"${name}") for name in names), meaning, default))
        return list_table(("variable", "meaning", "default"), rows, "25 50 25")


# -- REST ---------------------------------------------------------------------------------------------
HTTP_VERBS = ("get", "post", "put", "patch", "delete")


class RoutesDirective(GeneratedDirective):
    """``.. fray-routes:: module:ROUTES`` — (pattern, handler) pairs under the server's base URL."""

    required_arguments = 1

    def lines(self) -> list[str]:
        lines: list[str] = []
        for pattern, handler in resolve(self.arguments[0]):
            verbs = [verb.upper() for verb in HTTP_VERBS if verb in vars(handler)]
            path = "/" + re.sub(r"\(\?P<(\w+)>[^)]*\)", r"<\1>", pattern)
            lines += [f".. rubric:: {' '.join(verbs)} {literal('<base_url>' + path)}", "",
                      *docstring(handler), ""]
        return lines


class TypedDictsDirective(GeneratedDirective):
    """``.. fray-typeddicts:: module`` — each ``TypedDict`` with a table of its fields."""

    required_arguments = 1

    def lines(self) -> list[str]:
        module = importlib.import_module(self.arguments[0])
        attribute_docs = ModuleAnalyzer.for_module(module.__name__).find_attr_docs()
        lines: list[str] = []
        for name, cls in vars(module).items():
            if not (isinstance(cls, type) and typing.is_typeddict(cls) and cls.__module__ == module.__name__):
                continue
            hints = typing.get_type_hints(cls)
            rows = [(literal(field), literal(_type_name(hint)),
                     " ".join(attribute_docs.get((name, field), [])).strip()) for field, hint in hints.items()]
            lines += [f".. rubric:: {name}", "", *docstring(cls), "",
                      *list_table(("field", "type", "meaning"), rows, "25 25 50")]
        return lines


def _type_name(hint: Any) -> str:
    return re.sub(r"\b(typing|builtins|[\w.]+contract)\.", "", getattr(hint, "__name__", None)
                  if isinstance(hint, type) else str(hint)).replace("NoneType", "None")


# -- differences ------------------------------------------------------------------------------------
def _literal_dict(path: Path, name: str) -> dict[Any, Any]:
    """A module-level dict assignment read without importing the module (a test module imports
    pytest and Marin's packages); calls inside it are kept as their source text."""
    tree = ast.parse(path.read_text())
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == name and isinstance(node.value, ast.Dict):
            source = path.read_text()
            return {ast.literal_eval(key): ast.get_source_segment(source, value)
                    for key, value in zip(node.value.keys, node.value.values, strict=True) if key is not None}
    raise LookupError(f"{name} not found in {path}")


class DifferencesDirective(GeneratedDirective):
    """``.. fray-differences:: conformance`` or ``differential`` (see the module docstring)."""

    required_arguments = 1

    def lines(self) -> list[str]:
        return self.conformance() if self.arguments[0] == "conformance" else self.differential()

    def conformance(self) -> list[str]:
        module = importlib.import_module("tests.conformance.differences")
        stricter = _literal_dict(REPO / "tests" / "conformance" / "test_translation.py", "STRICTER")
        rows = []
        for case, value in stricter.items():
            reason = ast.literal_eval(ast.parse(value, mode="eval").body.elts[1])  # type: ignore[attr-defined]
            rows.append((text(case), text(reason)))
        paragraphs = "\n".join(docstring(module)).split("\n\n")  # the one pointing at STRICTER: the table below
        body = "\n\n".join(paragraph for paragraph in paragraphs if "STRICTER" not in paragraph).splitlines()
        intro = ("Inputs Marin's client accepts and sends, which fray-jupyter refuses with one line naming the "
                 "value (``tests/conformance/test_translation.py``, ``STRICTER``: each is checked against the "
                 "real client on every test run):")
        return [*body, "", ".. rubric:: Stricter validation", "", intro, "",
                *list_table(("input", "what Marin's client would send"), rows, "30 70")]

    def differential(self) -> list[str]:
        module = importlib.import_module("tests.differential.differences")
        lines = [*docstring(module), ""]
        tables = (("ENV_ONLY_ON_TWIN", "Variables a task sees only on the genuine Iris"),
                  ("ENV_ONLY_ON_EMBEDDED", "Variables a task sees only on the embedded controller"),
                  ("PLACEMENT_DEPENDENT_FOR_CPU_JOBS", "Variables compared for accelerator jobs only"),
                  ("LOCAL_RUNTIME_ONLY", "Artefacts of Iris's local process runtime, left out"),
                  ("CASE_DIFFERENCES", "Corpus jobs that differ in some aspect"),
                  ("COORDINATOR_DIFFERENCES", "Coordinator trees and child-job calls that differ"),
                  ("ACTOR_DIFFERENCES", "Actor scenarios that differ"),
                  ("INSPECT_DIFFERENCES", "Profiles, thread dumps and exec: answers that differ"))
        for name, title in tables:
            table: dict[Any, Any] = getattr(module, name)
            rows = [(literal(str(key)), text(why if isinstance(why, str) else why.why)) for key, why in table.items()]
            lines += [f".. rubric:: {title}", ""]
            lines += list_table(("name", "why"), rows, "25 75") if rows else ["None.", ""]
        return lines


# -- widgets in the executed examples -------------------------------------------------------------------
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
DEFAULT_WIDGET_REPR = re.compile(r"(\w+)\((?:children|value|layout|description)=")
"""ipywidgets' own text repr (``ResourcePicker(children=(HTML(value='<style>…``): says nothing."""


class WidgetPlaceholders(SphinxPostTransform):
    """A widget output whose text is ipywidgets' default repr becomes one line saying what it is
    (the page has no widget scripts: they would come from a CDN). A widget with a text of its own
    (the status panel's state and tasks) keeps it."""

    default_priority = 3  # before myst-nb's SelectMimeType (4) picks the text

    def run(self, **kwargs: Any) -> None:
        for bundle in list(self.document.findall(nodes.container)):
            if bundle.get("nb_element") != "mime_bundle":
                continue
            kinds = {child.get("mime_type"): child for child in bundle.children}
            plain = kinds.get("text/plain")
            found = DEFAULT_WIDGET_REPR.match(plain.astext()) if WIDGET_VIEW in kinds and plain else None
            if found:
                note = nodes.paragraph(classes=["fray-widget-note"])
                note += nodes.emphasis(text=f"[{found.group(1)}: an interactive widget, live when the notebook "
                                            "runs in JupyterLab]")
                bundle.replace_self(note)


# -- the executed examples ----------------------------------------------------------------------------
EXAMPLES = REPO / "examples"
EXAMPLE_PAGES = ("*.ipynb", "*.md")


def _copy_examples(app: Sphinx, config: Any) -> None:
    """``examples/`` (notebooks and pages) into ``docs/examples/``, which is generated (a link
    would not do: Sphinx resolves it to a file outside the docs); files no longer there go."""
    target = Path(app.srcdir) / "examples"
    target.mkdir(exist_ok=True)
    wanted = {path.name: path for pattern in EXAMPLE_PAGES for path in EXAMPLES.glob(pattern)}
    for stale in target.iterdir():
        if stale.name not in wanted:
            stale.unlink()
    for name, path in wanted.items():
        copy = target / name
        if not copy.exists() or copy.read_bytes() != path.read_bytes():
            shutil.copyfile(path, copy)


KEEP_CONTROLLER_ENV = "FRAY_DOCS_KEEP_CONTROLLER_IN"
"""A directory: the examples' private Jupyter dirs are made in it, and the embedded controller they
started is left running when the build ends, for the caller to inspect and stop (the tests check
what the Zephyr example left on it, ``tests/docs_build.py``)."""


def _isolate(app: Sphinx) -> None:
    """Kernels the build starts (they inherit this environment) use private Jupyter dirs, submit
    as ``DOCS_USER`` and reach only the embedded controller they start."""
    kept = os.environ.get(KEEP_CONTROLLER_ENV)
    root = Path(kept) if kept else Path(tempfile.mkdtemp(prefix="fray-docs-"))
    if not kept:
        app.fray_docs_root = root  # type: ignore[attr-defined]  # stopped and removed when the build ends
    for name in ISOLATED_ENV:
        os.environ[name] = str(root / name.lower())
    for name in CLEARED_ENV:
        os.environ.pop(name, None)
    os.environ["IRIS_USER"] = DOCS_USER


def _stop_controller(app: Sphinx, exception: BaseException | None) -> None:
    """Stop the embedded controller the examples started, and remove the private dirs."""
    from fray_jupyter.controller.manage import main as manage
    from fray_jupyter.runtime_file import RUNTIME_FILE_NAME

    root: Path | None = getattr(app, "fray_docs_root", None)
    if root is None:
        return
    runtime_file = root / "jupyter_runtime_dir" / RUNTIME_FILE_NAME
    if runtime_file.exists():
        manage(["stop", "--runtime-file", str(runtime_file)])
    shutil.rmtree(root, ignore_errors=True)


def _skip_generated_help(app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    """A magic method whose docstring is its parser's help (``%%fray?`` prints it) is left out of
    the API page: the magic's reference page renders the same parser as tables."""
    from fray_jupyter.magics.parsers import CELL_PARSER, LINE_PARSER

    helps = {parser.format_help() for parser in (CELL_PARSER, LINE_PARSER)}
    return True if what == "class" and getattr(obj, "__doc__", None) in helps else None


def setup(app: Sphinx) -> dict[str, Any]:
    from pygments.lexers.special import TextLexer

    app.add_lexer("mermaid", TextLexer)  # docs/development.md's drawing; GitHub draws it, Sphinx shows its text
    app.connect("autodoc-skip-member", _skip_generated_help)
    app.add_post_transform(WidgetPlaceholders)
    for name, directive in (("fray-argparse", ArgparseDirective), ("fray-docstring", DocstringDirective),
                            ("fray-api", ApiDirective), ("fray-traits", TraitsDirective),
                            ("fray-env", EnvDirective), ("fray-routes", RoutesDirective),
                            ("fray-typeddicts", TypedDictsDirective), ("fray-differences", DifferencesDirective)):
        app.add_directive(name, directive)
    app.connect("config-inited", _copy_examples)
    app.connect("builder-inited", _isolate)
    app.connect("build-finished", _stop_controller)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
