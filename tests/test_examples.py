"""Every example notebook runs headlessly, top to bottom, with no error."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.jupyter_isolation import isolated_jupyter

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.ipynb"))


@pytest.fixture(autouse=True)
def _private_jupyter_dirs(tmp_path: Path) -> Iterator[None]:
    """Kernels get their own runtime and data dirs; a controller a notebook started is stopped after it."""
    with isolated_jupyter(tmp_path):
        yield


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert outputs and not [o for o in outputs if o.output_type == "error"]


def test_plan_example_shows_the_preview() -> None:
    notebook = nbformat.read(EXAMPLES[[p.name for p in EXAMPLES].index("plan.ipynb")], as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    text = "".join(o.get("text", "") for o in notebook.cells[1].outputs)
    assert "Replicas      8" in text and "tpu-name" in text
    assert "did you mean 'v5p-8'?" in "".join(o.get("text", "") for o in notebook.cells[5].outputs)
