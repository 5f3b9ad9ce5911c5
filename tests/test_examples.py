"""Every example notebook runs headlessly, top to bottom, with no error. Each runs once: the docs
build executes them on one embedded controller (``tests/docs_build.py``), and the tests of what one
shows read that run's outputs."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.docs_build import DocsBuild

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.ipynb"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(path: Path, docs_build: DocsBuild) -> None:
    notebook = docs_build.notebook(path.name)
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert outputs and not [o for o in outputs if o.output_type == "error"]


def test_plan_example_shows_the_preview(docs_build: DocsBuild) -> None:
    notebook = docs_build.notebook("plan.ipynb")
    text = "".join(o.get("text", "") for o in notebook.cells[1].outputs)
    assert "Replicas      8" in text and "tpu-name" in text
    assert "did you mean 'v5p-8'?" in "".join(o.get("text", "") for o in notebook.cells[5].outputs)


def _text(cell: nbformat.NotebookNode) -> str:
    return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)


def test_zephyr_example_runs_its_pipeline_on_the_embedded_controller(docs_build: DocsBuild) -> None:
    """``tests/zephyr_checks.py``'s rule, checked on the build's controller before it stopped."""
    assert docs_build.zephyr_failure is None, docs_build.zephyr_failure


def test_tpu_multislice_example_shows_every_task_in_its_slice(docs_build: DocsBuild) -> None:
    notebook = docs_build.notebook("tpu_multislice.ipynb")
    run = next(c for c in notebook.cells
               if c.cell_type == "code" and c.source.startswith("%%fray --resources picker"))
    text = _text(run)
    for index in range(2):  # v5p-8 x 2: two independent single-VM slices
        assert f"task {index} of 2: slice {index} of 2, VM 0 of 1" in text
    assert "SUCCEEDED" in text and "2/2 tasks" in text
    shown = "".join(_text(c) for c in notebook.cells if c.cell_type == "code")
    assert "error: a v4-32 slice has 4 VMs: this 8-task gang can never be placed by Iris 0.2.227" in shown
    assert "fit: never" in shown  # the dry run of v4-32 x 2


def test_gpu_gang_example_shows_both_gangs_and_submits_one(docs_build: DocsBuild) -> None:
    notebook = docs_build.notebook("gpu_gang.ipynb")
    text = "\n".join(_text(c) for c in notebook.cells if c.cell_type == "code")
    assert "coscheduling: leafgroup" in text and "coscheduling: nvlink.domain.sliced" in text
    assert "nvlink.domain.sliced: 32 tasks (gang: True, one rack only: True)" in text
    assert "device-variant IN [gb200, gb300]" in text
    assert "refused: GPU alternatives must share one coscheduling topology" in text
    assert "task 1 of 2: asked for 8 x H100" in text and "gpu-gang succeeded" in text


def test_coordinator_example_runs_a_tpu_and_an_eval_step_as_children(docs_build: DocsBuild) -> None:
    notebook = docs_build.notebook("coordinator.ipynb")
    text = "\n".join(_text(c) for c in notebook.cells if c.cell_type == "code")
    user = re.search(r"steps: /([^/]+)/coordinator/train-step", text)
    assert user, text
    root = f"/{user.group(1)}/coordinator"
    for step in ("train-step", "eval-step"):
        assert f"{root}/{step}: succeeded, parent {root}" in text
    assert f"[train-step/0] train step on {root}/train-step/0:0 (a v5p-8, emulated)" in text
    assert "SUCCEEDED" in text
    run = next(c for c in notebook.cells if c.cell_type == "code" and c.source.startswith("%%fray"))
    (snapshot,) = [o.data["text/html"] for o in run.outputs if "fray-snapshot" in o.get("data", {}).get("text/html", "")]
    assert 'data-state="succeeded" data-final="true"' in snapshot  # the final state, kept in the notebook
    for step in ("train-step", "eval-step"):
        assert f'data-job-id="{root}/{step}"' in snapshot
    assert f"{root} ▸" in text and f"{root}/train-step " in text  # %fray jobs --with-children


# -- examples/real_iris.md names only commands and flags that exist ---------------------------------
REAL_IRIS = (ROOT / "examples" / "real_iris.md").read_text()


def _flags_after(prefix: str) -> set[str]:
    """The ``--flags`` on every line of real_iris.md that contains ``prefix``."""
    return {flag for line in REAL_IRIS.splitlines() if prefix in line
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z-]*", line.split(prefix, 1)[1])}


def test_real_iris_guide_uses_only_existing_fray_jupyter_flags() -> None:
    from fray_jupyter.magics.parsers import CELL_PARSER, LINE_PARSER

    controller_help = subprocess.run([sys.executable, "-m", "fray_jupyter.cli", "controller", "--help"],
                                     capture_output=True, text=True, check=True).stdout
    controller_flags = _flags_after("fray-jupyter controller")
    assert {"--iris-local", "--cluster-config"} <= controller_flags
    assert not [flag for flag in controller_flags if flag not in controller_help]
    cell_flags = _flags_after("%%fray")
    assert {"--controller", "--wait"} <= cell_flags
    assert not [flag for flag in cell_flags if flag not in CELL_PARSER.format_help()]
    line_flags = _flags_after("%fray jobs")
    assert not [flag for flag in line_flags if flag not in LINE_PARSER.format_help() + "--controller"]
    settings = re.findall(r"%fray config (\w+)", REAL_IRIS) + re.findall(r"c\.FrayMagics\.(\w+)", REAL_IRIS)
    assert set(settings) == {"controller_url", "user", "token_env"}


def test_real_iris_guide_matches_the_code() -> None:
    from fray_jupyter.controller.iris_local import REQUIREMENT
    from fray_jupyter.iris.request import DEFAULT_CLIENT_REVISION_DATE, REVISION_DATE_ENV
    from fray_jupyter.iris.wire import FETCH_LOGS_PATH as LOG_SERVICE_PATH

    for fact in (LOG_SERVICE_PATH, REQUIREMENT, DEFAULT_CLIENT_REVISION_DATE, REVISION_DATE_ENV,
                 "FRAY_CONTROLLER_URL", "FRAY_CONTROLLER_TOKEN", "IRIS_USER"):
        assert fact in REAL_IRIS, fact


def _imported_modules(notebook: nbformat.NotebookNode) -> set[str]:
    """The top-level modules a notebook's code cells import, but for those under a ``try`` that
    catches ``ImportError`` (it has its fallback). Magic and shell lines are skipped; the Python of a
    ``%%fray`` cell, run in a task or on a session's hosts, counts."""
    modules: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.Try) and any(
                isinstance(handler.type, ast.Name) and handler.type.id in {"ImportError", "ModuleNotFoundError"}
                for handler in node.handlers):
            for child in [*node.handlers, *node.orelse, *node.finalbody]:
                visit(child)
            return
        if isinstance(node, ast.Import):
            modules.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module.partition(".")[0])
        for child in ast.iter_child_nodes(node):
            visit(child)

    for cell in notebook.cells:
        if cell.cell_type == "code":
            visit(ast.parse("\n".join(line for line in cell.source.splitlines()
                                      if not line.lstrip().startswith(("%", "!")))))
    return modules


def _requirement_names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(text).name) for text in requirements}


def test_what_an_example_imports_is_installed_by_scripts_lab() -> None:
    """scripts/lab installs the package with its examples extra: every module an example imports
    (outside a ``try``, which has its fallback) comes from the standard library, the package's own
    dependencies, or that extra, so a new user's first run of each example needs no pip."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    installed = (_requirement_names(project["dependencies"]) | _requirement_names(project["optional-dependencies"]["examples"])
                 | {"fray-jupyter"})
    assert 'install_project "$venv" examples' in (ROOT / "scripts" / "lab").read_text()
    providers = importlib.metadata.packages_distributions()
    missing = {}
    for path in EXAMPLES:
        for module in sorted(_imported_modules(nbformat.read(path, as_version=4)) - set(sys.stdlib_module_names)):
            names = {canonicalize_name(name) for name in providers.get(module, [module])}
            if not names & installed:
                missing[f"{path.name}: {module}"] = sorted(names)
    assert not missing, f"imported by an example, installed by neither the package nor its examples extra: {missing}"
