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


def test_a_saved_notebook_keeps_each_jobs_final_snapshot(tmp_path: Path) -> None:
    """What nbconvert, papermill and CI save: after ``%%fray --wait`` its final snapshot (state, tree,
    last log lines) as plain HTML; after a panel cell the panel's snapshot beside its widget view,
    rewritten through its display id once the job ended (here while a later cell runs)."""
    cells = ["%load_ext fray_jupyter.magics", "%%fray --wait --name nb-waited\nprint('waited <b>line</b>')",
             "%%fray --name nb-panel\nprint('panel line')",
             "import time\n_.join(60)  # the panel of the cell before\ntime.sleep(0.5)"]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    with isolated_jupyter(tmp_path):
        NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    saved = nbformat.reads(nbformat.writes(notebook), as_version=4)
    for index, name, line in ((1, "nb-waited", "waited &lt;b&gt;line&lt;/b&gt;"), (2, "nb-panel", "panel line")):
        html = [o.data["text/html"] for o in saved.cells[index].outputs if "text/html" in o.get("data", {})]
        final = [h for h in html if 'data-state="succeeded" data-final="true"' in h and f"/{name}\"" in h]
        assert final and line in final[0], (name, html)
    displayed = [o for o in saved.cells[2].outputs if o.output_type != "stream"]  # after the bundle's note
    assert "application/vnd.jupyter.widget-view+json" in displayed[0].data
