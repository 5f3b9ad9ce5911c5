"""Every example notebook's job cells run on the genuine Iris scheduler too: each notebook runs top to
bottom with its magics pointed at the twin (``$FRAY_CONTROLLER_URL``), with no error — the same run
``tests/test_examples.py`` makes against the embedded controller. Task code uses only what a real Iris
worker sets (``task_info()``), so the same cells print the same places."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.discovery import URL_ENV
from tests.jupyter_isolation import isolated_jupyter
from tests.waiting import until
from tests.zephyr_checks import check_zephyr_run

EXAMPLES = sorted((Path(__file__).parent.parent.parent / "examples").glob("*.ipynb"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_example_runs_on_the_twin(twin: FrayClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    with isolated_jupyter(tmp_path) as runtime:
        monkeypatch.setenv(URL_ENV, twin.url)
        monkeypatch.setenv("IRIS_USER", f"nb-{path.stem}")
        NotebookClient(notebook, timeout=180, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        assert not runtime.exists() or not any(runtime.iterdir()), "a kernel started an embedded controller"
    errors = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs if o.output_type == "error"]
    assert not errors, errors
    expected = {"tpu_multislice.ipynb": ("tpu-multislice", ["task 0 of 2: slice 0 of 2, VM 0 of 1",
                                                            "task 1 of 2: slice 1 of 2, VM 0 of 1"]),
                "gpu_gang.ipynb": ("gpu-gang", ["task 1 of 2: asked for 8 x H100"]),
                "coordinator.ipynb": ("coordinator/train-step", ["train step on /nb-coordinator/coordinator/train-step/0:"]),
                }.get(path.name)
    if path.name == "coordinator.ipynb":  # the final snapshot shows the tree as Iris lists it
        snapshot = "".join(o.get("data", {}).get("text/html", "") for cell in notebook.cells if cell.cell_type == "code"
                           for o in cell.outputs if "fray-snapshot" in o.get("data", {}).get("text/html", ""))
        assert 'data-state="succeeded" data-final="true"' in snapshot
        for step in ("train-step", "eval-step"):
            assert f'data-job-id="/nb-coordinator/coordinator/{step}"' in snapshot, step
    if path.name == "zephyr.ipynb":  # the pipeline ran on the twin's workers and wrote every record
        check_zephyr_run(notebook, twin, f"nb-{path.stem}")
    if expected is not None:  # task_info() on Iris's own workers, read from Iris's log service
        name, lines = expected
        seen = _wait_for_lines(twin, f"/nb-{path.stem}/{name}", lines)
        assert all(any(line in text for text in seen) for line in lines), seen


def _wait_for_lines(client: FrayClient, job_id: str, lines: list[str]) -> list[str]:
    """The job's log lines once they include ``lines``: Iris's log service may deliver a finished
    job's last lines after the cell's live tail has ended."""
    def complete() -> list[str] | None:
        seen = [entry.data for entry in client.logs(job_id).entries]
        return seen if all(any(line in text for text in seen) for line in lines) else None

    return until(complete, f"{lines} in the log of {job_id}")
