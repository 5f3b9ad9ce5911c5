"""A session in a real JupyterLab, on the embedded controller: start 2 hosts, define ``x`` in one
cell and use it in the next with both hosts' output, a matplotlib figure from host 0, an exception
with each host's traceback, Jupyter's interrupt button stopping ``while True: pass`` on both hosts
with ``x`` still there after, the session listed in the sidebar with its hosts' endpoints in
its job's view, and stop."""

from __future__ import annotations

from pathlib import Path

from labserver import Lab
from magic_fixtures import lab_controller  # noqa: F401 - fixture
from pages import LOAD, row, run_cells, show_sidebar
from playwright.sync_api import Locator, Page, expect

NAME = "ui-session"
JOB = f"/alice/{NAME}"
CELLS = (
    LOAD,
    f"%fray session start {NAME} --replicas 2 --cpu 0.5 --memory 256m --disk 1g",
    f"%%fray --session {NAME}\nx = 41\nprint('defined x on', __import__('fray_jupyter').task_info().task_index)",
    f"%%fray --session {NAME}\nprint('x + 1 =', x + 1)",
    f"%%fray --session {NAME}\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()",
    f"%%fray --session {NAME}\nfrom fray_jupyter import task_info\nraise RuntimeError(f'boom on {{task_info().task_index}}')",
    f"%%fray --session {NAME}\nprint('looping', flush=True)\nwhile True: pass",
    f"%%fray --session {NAME}\nprint('still', x)",
    f"%fray session stop {NAME}",
)
WAIT = 120_000
"""Milliseconds a step may take on a loaded machine (a hang guard, not a speed bound)."""


def _output(cells: Locator, index: int) -> Locator:
    return cells.nth(index).locator(".jp-OutputArea")


def _run_next(page: Page) -> None:
    """Shift+Enter on the active cell (the one after the last run)."""
    page.keyboard.press("Shift+Enter")


def test_a_two_host_session_keeps_state_shows_both_hosts_interrupts_and_stops(
        lab: Lab, lab_controller: Path, page: Page) -> None:  # noqa: F811 - the imported fixture
    notebook = run_cells(page, lab.open_url(lab.notebook("session.ipynb", *CELLS)), 5)
    cells = notebook.locator(".jp-Cell")
    expect(_output(cells, 1)).to_contain_text(f"session {NAME}: 2/2 hosts ready", timeout=WAIT)
    for host in (0, 1):
        expect(_output(cells, 2)).to_contain_text(f"[host {host}] defined x on {host}", timeout=WAIT)
        expect(_output(cells, 3)).to_contain_text(f"[host {host}] x + 1 = 42", timeout=WAIT)
    expect(_output(cells, 4).locator("img")).to_have_count(1, timeout=WAIT)  # host 0's figure only

    answer = page.request.get(f"{lab.url}/fray/sessions?user=alice&token={lab.token}").json()
    assert [row["name"] for row in answer["sessions"]] == [NAME], answer  # the server lists it; the rest is the sidebar
    show_sidebar(page)
    listed = page.locator(".fj-Sessions .fj-SessionRow", has_text=NAME)
    expect(listed.locator(".fj-SessionLine")).to_contain_text("session · cpu · 2/2 hosts ready", timeout=WAIT)
    expect(listed.locator("button.fj-SessionStop")).to_be_enabled()
    # the session's job shows each host's endpoint (its actor) in the job view, with the task serving it
    row(page, JOB).click()
    for host in (0, 1):
        endpoint = page.locator(f'.fj-JobView .fj-Endpoints tr[data-endpoint="{JOB}/session-{host}"]')
        expect(endpoint).to_contain_text("http://127.0.0.1:", timeout=WAIT)
        expect(endpoint).to_contain_text(f"{JOB}/{host}")
    expect(page.locator(".fj-JobView .fj-Endpoints tbody tr")).to_have_count(2)
    page.get_by_role("button", name="Back to all jobs").click()

    cells.nth(5).locator(".jp-InputArea-editor").click()
    _run_next(page)  # the failing cell alone: a failure stops the cells queued after it
    failure = _output(cells, 5)
    for host in (0, 1):
        expect(failure).to_contain_text(f"[host {host}]", timeout=WAIT)
        expect(failure).to_contain_text(f"RuntimeError: boom on {host}")

    _run_next(page)
    loop = _output(cells, 6)
    for host in (0, 1):
        expect(loop).to_contain_text(f"[host {host}] looping", timeout=WAIT)
    page.locator(".jp-NotebookPanel-toolbar [data-command='notebook:interrupt-kernel']").click()
    expect(loop).to_contain_text("KeyboardInterrupt", timeout=WAIT)
    expect(loop).not_to_contain_text("did not stop")

    cells.nth(7).locator(".jp-InputArea-editor").click()
    _run_next(page)
    for host in (0, 1):
        expect(_output(cells, 7)).to_contain_text(f"[host {host}] still 41", timeout=WAIT)
    _run_next(page)
    expect(_output(cells, 8)).to_contain_text(f"session {NAME} stopped", timeout=WAIT)
    expect(listed).to_have_count(0, timeout=WAIT)  # the sidebar's next read: no host serves
