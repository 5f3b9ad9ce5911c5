"""The package's layers, read from every module's imports (``ast``), lazy ones included: the model
(``resources``, ``cluster``) → the wire (``iris``) → the plan and its views (``planning``,
``views``) and the client (``client``) → the controller (``controller``) and the actors
(``actors``, beside it on the client); the surfaces
(``widgets``, ``magics``, ``server``, ``cli``, ``flags``, ``fray_protocol``, the package root) on
top. A module imports only its own layer and those its layer lists; nothing imports a surface but
a surface; and no two modules import each other when imported, directly or round a circle.

Inside the controller the same rule holds between its packages (``CONTROLLER_ALLOWED``): transport →
api → engine → stats → runtime and store → kernel, and the kernel loads no database and no process
machinery."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pytest

from tests.import_graph import PACKAGE, imports, loaded_by, modules

BASE: Final = frozenset({"lazy", "runtime_file", "file_lock", "vocabulary"})
"""Helpers every layer may use (lazy exports, the controller's runtime file format, file locks, the one display
vocabulary)."""
ALLOWED: Final[dict[str, frozenset[str]]] = {
    "resources": frozenset(),
    "cluster": frozenset(),
    "iris": frozenset({"resources", "cluster"}),
    "planning": frozenset({"iris", "resources", "cluster"}),
    "views": frozenset({"planning", "iris", "resources", "cluster"}),
    # the client speaks the wire; it may read the tables and cluster profiles the wire rules use
    # (client.fit), but never the models or the plan (test_import_budget keeps pydantic out)
    "client": frozenset({"iris", "cluster", "resources"}),
    "controller": frozenset({"iris", "resources", "cluster"}),
    # actors (server, handles, groups) call the controller's endpoint registry through the client
    "actors": frozenset({"client", "iris"}),
}
"""Each lower layer (the first part of the module name under ``fray_jupyter``) → the other layers
it may import."""
SURFACES: Final = frozenset({"widgets", "magics", "server", "cli", "flags", "fray_protocol", "task", "session", ""})
"""May import any layer (``""`` is the package root; ``task`` is what a running task calls; ``session``
is the engine a session's tasks serve and the kernel's merge of their results)."""


CONTROLLER: Final = f"{PACKAGE}.controller"
CONTROLLER_ALLOWED: Final[dict[str, frozenset[str]]] = {
    "kernel": frozenset(),
    # the store reads and writes the kernel's plain rows, and knows none of its rules
    "store": frozenset({"kernel.rows"}),
    "runtime": frozenset({"kernel"}),
    "stats": frozenset({"store", "runtime", "kernel"}),
    "engine": frozenset({"stats", "store", "runtime", "kernel"}),
    "api": frozenset({"engine", "stats", "store", "runtime", "kernel"}),
    # the transports know the wire and the caller (``api.methods``, ``api.caller``, ``runtime.peer``), never a job
    "transport": frozenset({"api.methods", "api.caller", "runtime.peer"}),
    "rpc_error": frozenset(),
}
"""Each part of the controller (a package, or a module beside them) → what of the other parts it may
import: a part, or one module of it. A part always imports itself and ``CONTROLLER_SHARED``."""
CONTROLLER_SHARED: Final = frozenset({"rpc_error"})
"""What every part of the controller may raise: the status codes and ``RpcError``."""
CONTROLLER_TOP: Final = frozenset({"", "__main__", "startup", "lifecycle", "manage", "iris_local"})
"""The controller as a process (start-up, its idle rule, its admin verbs, the genuine-Iris twin; ``""``
is the package itself): it may import any part of it."""
PURE_KERNEL_FORBIDS: Final = ("sqlite3", "subprocess", "asyncio")
"""What no kernel module loads, even through the modules it imports: a database, processes, an event loop."""


def layer(module: str) -> str:
    """``fray_jupyter.client.logs`` → ``"client"``; the package itself → ``""``."""
    return module.removeprefix(PACKAGE).lstrip(".").partition(".")[0]


def own_imports(module: str) -> set[str]:
    """Our modules ``module`` imports anywhere in it (at import, in functions, for type checking)."""
    return {name for name in imports(module, at_import=False)
            if (name == PACKAGE or name.startswith(PACKAGE + ".")) and name in modules()} - {module}


def test_every_module_has_a_layer() -> None:
    unknown = sorted({layer(m) for m in modules()} - set(ALLOWED) - SURFACES - BASE)
    assert unknown == [], f"give these packages a place in ALLOWED or SURFACES: {unknown}"


def test_no_import_runs_upward() -> None:
    upward = []
    for module in modules():
        mine = layer(module)
        if mine in SURFACES:
            continue
        allowed = {mine} | BASE | ALLOWED.get(mine, frozenset())
        upward += [f"{module} -> {name}" for name in sorted(own_imports(module)) if layer(name) not in allowed]
    assert upward == [], "imports against the layer rule:\n" + "\n".join(upward)


def test_no_import_cycles() -> None:
    """Tarjan's strongly connected components over what each module imports when it is imported
    (a name imported only for type checking, or inside a function, is there when it is used, so
    it cannot be half-initialised); a package's ``__init__`` importing its own submodules is not a
    circle with them."""
    graph = {m: {n for n in imports(m, at_import=True) if n in modules() and not m.startswith(n + ".")}
             for m in modules()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert cycles == [], f"modules importing each other: {cycles}"


def test_the_rule_catches_an_upward_import() -> None:
    """The checks above are not vacuous: the graph sees the client's imports and a view's."""
    assert "fray_jupyter.iris.states" in own_imports("fray_jupyter.client.client")
    assert "fray_jupyter.iris.states" in own_imports("fray_jupyter.views.job")
    assert layer("fray_jupyter.planning") not in ALLOWED["client"]


# -- the controller's packages -----------------------------------------------------------------------
def part(module: str) -> str:
    """``fray_jupyter.controller.kernel.rows`` → ``"kernel.rows"``; the controller itself → ``""``."""
    return module.removeprefix(CONTROLLER).lstrip(".")


def allows(importer: str, imported: str) -> bool:
    """Whether the controller's module ``importer`` may import its module ``imported`` (both as ``part``)."""
    mine, theirs = importer.partition(".")[0], imported.partition(".")[0]
    if mine in CONTROLLER_TOP or theirs == mine or theirs in CONTROLLER_SHARED:
        return True
    return any(imported == rule or imported.startswith(rule + ".") for rule in CONTROLLER_ALLOWED[mine])


def controller_modules() -> list[str]:
    """Every module of the controller, as ``part``."""
    return sorted(part(m) for m in modules() if m == CONTROLLER or m.startswith(CONTROLLER + "."))


def test_every_controller_module_has_a_part() -> None:
    unknown = sorted({m.partition(".")[0] for m in controller_modules()} - set(CONTROLLER_ALLOWED) - CONTROLLER_TOP)
    assert unknown == [], f"give these parts of the controller a place in CONTROLLER_ALLOWED or CONTROLLER_TOP: {unknown}"


def test_the_controllers_packages_import_only_downward() -> None:
    against = [f"{module} -> {part(name)}" for module in controller_modules()
               for name in sorted(own_imports(f"{CONTROLLER}.{module}".rstrip(".")))
               if name.startswith(CONTROLLER + ".") and not allows(module, part(name))]
    assert against == [], "imports against the controller's package rule:\n" + "\n".join(against)


def test_the_controller_rule_catches_an_upward_import() -> None:
    """Not vacuous: the engine imports the kernel and the store reads the kernel's rows, but a kernel
    module importing the store, or the store importing a kernel rule, breaks the rule."""
    assert "fray_jupyter.controller.kernel.transitions" in own_imports("fray_jupyter.controller.engine.engine")
    assert "fray_jupyter.controller.kernel.rows" in own_imports("fray_jupyter.controller.store.store")
    assert not allows("kernel.transitions", "store.store")
    assert not allows("store.store", "kernel.transitions")
    assert not allows("transport.rpc", "engine.engine")
    assert allows("api.service", "engine.engine") and allows("startup", "transport.rpc")


@pytest.mark.parametrize("module", [m for m in controller_modules() if m.startswith("kernel")])
def test_the_kernel_loads_no_database_processes_or_event_loop(module: str) -> None:
    """From the source, following our modules' import-time imports (``test_import_budget`` imports
    it in a fresh interpreter too)."""
    loaded = loaded_by(f"{CONTROLLER}.{module}")
    assert sorted(name for name in loaded if name.partition(".")[0] in PURE_KERNEL_FORBIDS) == []
    outside = sorted(name for name in loaded if name.startswith(CONTROLLER + ".")
                     and part(name).partition(".")[0] not in {"kernel", *CONTROLLER_SHARED})
    assert outside == [], f"{module} loads parts of the controller outside the kernel"

# -- the drawing -------------------------------------------------------------------------------------
DRAWN_IN: Final = Path(__file__).resolve().parents[1] / "docs" / "development.md"
DRAWING: Final = re.compile(r"```mermaid\n(flowchart TD\n.*?)```", re.DOTALL)


def drawing() -> str:
    """The layers as a mermaid flowchart, one arrow per pair of layers whose modules really import
    each other (the surfaces drawn as one box; the shared helpers in ``BASE`` left out)."""
    def box(module: str) -> str:
        name = layer(module)
        return "surfaces" if name in SURFACES else name

    arrows = {(box(module), box(name)) for module in modules() for name in own_imports(module)
              if layer(module) not in BASE and layer(name) not in BASE and box(module) != box(name)}
    return "flowchart TD\n" + "".join(f"  {low} --> {high}\n" for low, high in sorted(arrows))


def test_the_docs_draw_the_imports_as_they_are() -> None:
    """The docs' drawing of the layers (docs/development.md, "Layout") is the one the import graph
    gives (so it cannot go stale), and every arrow in it is one the layer rule allows: none runs upward."""
    found = DRAWING.search(DRAWN_IN.read_text())
    assert found is not None and found.group(1) == drawing(), f"{DRAWN_IN.name}'s Layout drawing should be:\n{drawing()}"
    for line in drawing().splitlines()[1:]:
        importer, _, imported = line.strip().partition(" --> ")
        assert importer == "surfaces" or imported in ALLOWED[importer], line


MAX_MODULE_LINES: Final = 450
"""A module longer than this does more than one job (generated protobuf modules are not ours)."""


def test_no_module_is_over_the_line_limit() -> None:
    long = {name: lines for name, path in modules().items()
            if ".iris.proto." not in f"{name}." and (lines := len(path.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}, f"modules over {MAX_MODULE_LINES} lines (split them by concern): {long}"
