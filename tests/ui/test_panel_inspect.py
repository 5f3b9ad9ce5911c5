"""The status panel's inspect buttons in a real JupyterLab: Threads shows the running task's stacks
with its own frames in bold, and CPU shows py-spy's flamegraph as a live document — its own script
runs in the notebook (search finds the busy function, a click zooms), sandboxed away from the page
— and is written next to the notebook."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from labserver import Lab
from magic_fixtures import lab_controller  # noqa: F401 - fixture
from pages import LOAD, run_cells
from playwright.sync_api import Dialog, Page, expect

from fray_jupyter.client import FrayClient
from fray_jupyter.client.inspection import InspectionFailed
from fray_jupyter.runtime_file import RUNTIME_FILE_NAME, ControllerInfo, read_runtime_file
from tests.waiting import until

BUSY = """%%fray --name {name}
def busy_loop():
    while True:
        sum(range(100000))
busy_loop()
"""


def in_busy_loop(runtime: Path, task_id: str) -> bool:
    """Whether the task's stack has reached ``busy_loop`` (False while its controller or Python starts)."""
    info: ControllerInfo | None = read_runtime_file(runtime / RUNTIME_FILE_NAME)
    if info is None:
        return False
    with FrayClient(info.url, info.token) as client:
        try:
            return "busy_loop" in client.profile(task_id, "threads").text()
        except InspectionFailed:
            return False


def test_the_cpu_button_shows_an_interactive_flamegraph_and_threads_the_tasks_own_frames(
        lab: Lab, lab_controller: Path, page: Page) -> None:  # noqa: F811 - the imported fixture
    name = f"ui-inspect-{uuid.uuid4().hex[:6]}"
    notebook = run_cells(page, lab.open_url(lab.notebook(f"{name}.ipynb", LOAD, BUSY.format(name=name))), 2)
    panel = notebook.locator(".fray-status-panel")
    row = panel.locator(".fray-inspect-task-0")
    threads, cpu = row.locator("button.fray-inspect-threads"), row.locator("button.fray-inspect-cpu")
    expect(cpu).to_be_enabled(timeout=60_000)
    until(lambda: in_busy_loop(lab_controller, f"/alice/{name}/0"), "the task spinning in busy_loop")
    threads.click()
    dump = panel.locator(".fray-inspect-output pre.fray-thread-dump")
    expect(dump).to_contain_text("busy_loop", timeout=30_000)
    expect(dump.locator("b.fray-own-frame").first).to_have_text(re.compile(r"^\s+busy_loop \(_fray_cell\.py:3\)$"))

    cpu.click()
    frame_element = panel.locator("iframe.fray-capture-frame")
    expect(frame_element).to_have_attribute("sandbox", "allow-scripts allow-modals", timeout=30_000)
    flame = page.frame_locator(".fray-status-panel iframe.fray-capture-frame")
    expect(flame.locator("#frames title", has_text="busy_loop").first).to_be_attached()
    expect(flame.locator("#unzoom")).to_have_class(re.compile(r"\bhide\b"))

    def search_for_busy_loop(dialog: Dialog) -> None:
        dialog.accept("busy_loop")

    page.once("dialog", search_for_busy_loop)
    # clicks are dispatched to the flamegraph's own elements: its Search text sits at its left edge, where the
    # notebook's output prompt overlay may lie over it (what a pointer there would hit depends on the layout)
    flame.locator("#search").dispatch_event("click")  # its script asks, then colours the matches
    expect(flame.locator("#matched")).to_have_text(re.compile(r"^Matched: \d+(\.\d+)?%$"))
    flame.locator("#frames g", has=flame.locator("title", has_text="busy_loop")).first.dispatch_event("click")
    expect(flame.locator("#unzoom")).not_to_have_class(re.compile(r"\bhide\b"))  # zoomed by its script
    assert (lab.root / f"alice-{name}-0-cpu.svg").read_bytes().count(b"busy_loop") > 0

    panel.locator("button.fray-status-cancel").click()
    expect(cpu).to_be_disabled(timeout=30_000)
