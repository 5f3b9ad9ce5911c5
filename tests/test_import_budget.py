"""What importing each module may load: a light module (the package, the magics' registration,
the wire vocabulary, the controller's core, the client's errors) leaves the heavy libraries and
our model layers unloaded until something needs them.

Every ``fray_jupyter`` module is checked from the source (its import-time imports, followed
through our modules; ``if TYPE_CHECKING:`` and function bodies do not run at import), and the
few that matter most are also imported in a fresh interpreter, where ``sys.modules`` also sees
what third-party packages import in turn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from tests.import_graph import loaded_by, modules

HEAVY: Final = ("pydantic", "httpx", "grpc", "uvicorn", "ipywidgets", "IPython", "jupyter_server", "cloudpickle",
                "pyarrow", "fray_jupyter.resources.config", "fray_jupyter.planning", "fray_jupyter.controller.startup")
"""What costs a start-up: large libraries, the pydantic models, the plan, the controller's server."""
MODELS: Final = frozenset({"pydantic", "cloudpickle", "fray_jupyter.resources.config"})
NETWORK: Final = frozenset({"httpx", "grpc"})

BUDGET: Final[dict[str, frozenset[str]]] = {
    "fray_jupyter": frozenset(),
    "fray_jupyter.resources": MODELS,
    "fray_jupyter.resources.tables": frozenset(),
    "fray_jupyter.resources.sizes": frozenset(),
    "fray_jupyter.iris": MODELS,
    "fray_jupyter.iris.states": frozenset(),
    "fray_jupyter.iris.gpu_spec": frozenset(),
    "fray_jupyter.iris.bundle": frozenset(),
    "fray_jupyter.iris.user": frozenset(),
    "fray_jupyter.iris.outputs": frozenset(),
    "fray_jupyter.iris.proto": frozenset(),
    "fray_jupyter.iris.proto.controller_pb2_grpc": frozenset({"grpc"}),
    "fray_jupyter.planning": MODELS | {"fray_jupyter.planning"},
    "fray_jupyter.views": MODELS | {"fray_jupyter.planning"},
    "fray_jupyter.views.job": frozenset(),
    "fray_jupyter.views.format": frozenset(),
    "fray_jupyter.views.snippets": MODELS,
    "fray_jupyter.client": frozenset(),
    "fray_jupyter.client.client": NETWORK,
    "fray_jupyter.client.cluster_verbs": NETWORK,  # a base of client.client
    "fray_jupyter.client.transport": NETWORK,
    "fray_jupyter.client.handle": NETWORK,
    "fray_jupyter.controller": frozenset(),
    "fray_jupyter.controller.transport.grpc_server": frozenset({"grpc"}),
    "fray_jupyter.controller.startup": frozenset({"grpc", "uvicorn", "fray_jupyter.controller.startup"}),
    "fray_jupyter.controller.__main__": frozenset({"grpc", "uvicorn", "fray_jupyter.controller.startup"}),
    "fray_jupyter.server": NETWORK | {"jupyter_server"},
    "fray_jupyter.magics": frozenset({"IPython"}),
    "fray_jupyter.magics.submission": MODELS | {"IPython", "fray_jupyter.planning"},
    "fray_jupyter.widgets": MODELS | NETWORK | {"ipywidgets", "fray_jupyter.planning"},
    "fray_jupyter.actors": NETWORK | {"cloudpickle"},
    "fray_jupyter.actors.server": NETWORK | {"cloudpickle", "uvicorn"},
    "fray_jupyter.fray_protocol": MODELS | NETWORK | {"fray_jupyter.planning"},
    # a session plans its job and talks to its hosts as actors; the magics load it on first use
    "fray_jupyter.session.session": MODELS | NETWORK | {"cloudpickle", "uvicorn", "fray_jupyter.planning"},
    "fray_jupyter.session.serve": NETWORK | {"cloudpickle", "uvicorn"},
    "fray_jupyter.magics.session": MODELS | NETWORK | {"IPython", "cloudpickle", "uvicorn", "fray_jupyter.planning"},
}
"""Module (and, unless listed itself, every module under it) → the heavy names it may load."""


def budget(module: str) -> frozenset[str]:
    """The budget of the nearest listed module at or above ``module``."""
    name = module
    while name not in BUDGET:
        name = name.rpartition(".")[0]
    return BUDGET[name]


def heavy_in(loaded: frozenset[str] | set[str]) -> set[str]:
    """The ``HEAVY`` names among dotted module names."""
    return {heavy for heavy in HEAVY if any(name == heavy or name.startswith(heavy + ".") for name in loaded)}


def test_every_module_keeps_to_its_budget() -> None:
    over = {module: sorted(heavy_in(loaded_by(module)) - budget(module)) for module in sorted(modules())}
    assert {module: extra for module, extra in over.items() if extra} == {}


# What the light entry points load in a real interpreter (third-party imports included).
MEASURED: Final[dict[str, frozenset[str]]] = {
    "fray_jupyter": frozenset(),
    "fray_jupyter.client": frozenset(),
    "fray_jupyter.server": frozenset({"httpx", "grpc", "jupyter_server"}),
    "fray_jupyter.controller.api.validation": frozenset(),
    "fray_jupyter.controller.engine.engine": frozenset(),
    "fray_jupyter.client.errors": frozenset(),
    "fray_jupyter.iris.states": frozenset(),
}


@pytest.mark.parametrize("module", sorted(MEASURED))
def test_importing_a_light_module_loads_only_its_budget(module: str) -> None:
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            cwd=Path(__file__).parent.parent, check=False)
    assert result.returncode == 0, result.stderr
    loaded = heavy_in(set(json.loads(result.stdout)))
    assert loaded <= MEASURED[module], f"importing {module} loads {sorted(loaded - MEASURED[module])}"


KERNEL: Final = "fray_jupyter.controller.kernel"
KERNEL_NEVER_LOADS: Final = frozenset({"sqlite3", "subprocess", "asyncio.subprocess"})
"""The controller's kernel is its pure rules: no database, no processes (``tests/test_layers.py`` holds
its imports to the kernel; this holds what they load, third-party imports included)."""


def test_importing_the_controllers_kernel_loads_no_database_and_no_processes() -> None:
    kernel = sorted(module for module in modules() if module == KERNEL or module.startswith(KERNEL + "."))
    code = f"import json, sys; import {', '.join(kernel)}; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                            cwd=Path(__file__).parent.parent, check=False)
    assert result.returncode == 0, result.stderr
    loaded = set(json.loads(result.stdout))
    assert f"{KERNEL}.transitions" in loaded and f"{KERNEL}.scheduler" in loaded
    assert sorted(loaded & KERNEL_NEVER_LOADS) == []
    assert sorted(name for name in loaded if name.startswith("fray_jupyter.controller.")
                  and not name.startswith(KERNEL)) == []

def test_the_server_extension_loads_neither_pydantic_nor_the_plan() -> None:
    """The REST proxy only forwards Iris messages: no model, no planning tables, no uvicorn."""
    assert not heavy_in(loaded_by("fray_jupyter.server")) & {"pydantic", "fray_jupyter.planning", "uvicorn"}
