"""A notebook saved after its ``%%fray`` cells ran, reopened once its kernel is gone: each cell shows
the job's final state and log tail (the static snapshot the panel and ``--wait`` write) instead of
ipywidgets' "Error displaying widget: model not found"; while the kernel ran, the live panel showed
alone (its snapshot hidden beside it). The saved file itself holds the final snapshots. In
JupyterLab and in Notebook 7."""

from __future__ import annotations

import json
import urllib.request
import uuid

import nbformat
import pytest
from labserver import KERNEL_IDLE, Lab
from magic_fixtures import lab_controller  # noqa: F401 - fixture
from pages import LOAD, run_cells
from playwright.sync_api import Page, expect

SAVED = "() => { const w = window.jupyterapp.shell.currentWidget; return w && !w.context.model.dirty; }"


def _api(lab: Lab, path: str, method: str = "GET") -> object:
    request = urllib.request.Request(f"{lab.url}/api/{path}?token={lab.token}", method=method)
    with urllib.request.urlopen(request, timeout=30) as answer:
        body = answer.read()
    return json.loads(body) if body else None


def _stop_kernels(lab: Lab) -> None:
    """End every session of the server (its kernel shut down), as closing the notebook and its kernel would."""
    sessions = _api(lab, "sessions")
    assert isinstance(sessions, list)
    for session in sessions:
        _api(lab, f"sessions/{session['id']}", "DELETE")
    assert _api(lab, "kernels") == []


@pytest.mark.parametrize("app", ["lab", "notebook"])
def test_a_reopened_notebook_shows_each_jobs_final_state_not_a_missing_widget(
        lab: Lab, lab_controller: object, page: Page, app: str) -> None:  # noqa: F811 - the imported fixture
    tag = uuid.uuid4().hex[:6]
    waited, live = f"reopen-wait-{tag}", f"reopen-panel-{tag}"
    name = lab.notebook(f"reopen-{tag}.ipynb", LOAD,
                        f"%%fray --wait --name {waited}\nprint('waited line <b>not bold</b>')",
                        f"%%fray --name {live}\nprint('panel line')")
    notebook = run_cells(page, lab.open_url(name, app), 3)
    cells = notebook.locator(".jp-CodeCell")
    waited_out, live_out = cells.nth(1).locator(".jp-OutputArea"), cells.nth(2).locator(".jp-OutputArea")
    expect(waited_out.locator(".fray-snapshot")).to_have_attribute("data-final", "true", timeout=60_000)
    panel = live_out.locator(".fray-status-panel")
    expect(panel.locator(".fray-status-header .fray-badge")).to_have_text("SUCCEEDED", timeout=60_000)
    hidden = live_out.locator(".fray-snapshot")
    expect(hidden).to_have_attribute("data-final", "true", timeout=30_000)  # rewritten as the job ended
    expect(hidden).to_be_hidden()  # beside the live panel, the snapshot is not shown
    page.wait_for_function(KERNEL_IDLE)
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function(SAVED)

    saved = nbformat.read(lab.root / name, as_version=4)
    for index, job in ((1, waited), (2, live)):
        html = [o.data["text/html"] for o in saved.cells[index].outputs if "text/html" in o.get("data", {})]
        assert any(f'data-job-id="/alice/{job}" data-state="succeeded" data-final="true"' in h for h in html), job
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in saved.cells[2].outputs)

    _stop_kernels(lab)
    reopened = page
    reopened.goto(f"{lab.open_url(name, app)}&reset")
    cells = reopened.locator(".jp-NotebookPanel .jp-CodeCell")
    for index, job, line in ((1, waited, "waited line <b>not bold</b>"), (2, live, "[0] panel line")):
        snapshot = cells.nth(index).locator(".fray-snapshot")
        expect(snapshot).to_be_visible(timeout=60_000)
        expect(snapshot.locator(".fray-job-id")).to_have_text(f"/alice/{job}")
        expect(snapshot.locator(".fray-status .fray-badge").first).to_have_text("SUCCEEDED")
        expect(snapshot.locator("pre.fray-log")).to_contain_text(line)  # the log tail, job HTML as text
        expect(snapshot).to_contain_text(f"final state of /alice/{job}")
    dead = cells.nth(2).locator(".jp-OutputArea-output.jupyter-widgets")
    expect(dead).to_have_text("Error displaying widget: model not found", timeout=30_000)  # ipywidgets' own,
    expect(dead).to_be_hidden()  # hidden by the snapshot beside it
    expect(reopened.get_by_text("model not found")).to_be_hidden()
