"""The magics' error conventions through a real kernel (nbclient), where they decide whether
"Run All" and CI stop: a bad flag fails its cell with a one-line ``UsageError`` and nothing else."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tests.jupyter_isolation import isolated_jupyter


def test_a_bad_flag_fails_the_notebook_with_a_usage_error_only(tmp_path: Path) -> None:
    cells = ["%load_ext fray_jupyter.magics", "%%fray --tpu v9-8 --slices 2\nprint('never runs')",
             "print('not reached')"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    with isolated_jupyter(tmp_path) as runtime, pytest.raises(CellExecutionError) as raised:
        NotebookClient(notebook, timeout=60, kernel_name="python3").execute()
    assert raised.value.ename == "UsageError"
    assert raised.value.evalue == "%%fray: unknown TPU type 'v9-8'; did you mean 'v4-8'?"
    failed, after = notebook.cells[1], notebook.cells[2]
    assert [(o.output_type, o.get("name"), o.get("text")) for o in failed.outputs] == [
        ("stream", "stderr", "UsageError: %%fray: unknown TPU type 'v9-8'; did you mean 'v4-8'?\n")]
    assert after.outputs == [] and after.execution_count is None  # Run All stopped at the bad cell
    assert not (runtime / "fray-controller.json").exists()  # nothing was started for a rejected cell
