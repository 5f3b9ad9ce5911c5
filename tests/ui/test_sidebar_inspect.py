"""Looking inside a running task from the Fray Jobs sidebar (real JupyterLab, Debian Chromium, the
embedded controller profiling a real task with py-spy): CPU counts its 5 s down while the sidebar
carries on, then opens py-spy's flamegraph in a main-area tab as a live document (its hot function
named, a click on a frame zooms, its Search finds the function); Threads opens the dump with the
task's own stuck frame picked out from library frames; both are listed under the task and one opens
again from there; a task py-spy and memray cannot read (not Python) opens tabs that say why, not
blank ones; and a task that is no longer running has its buttons off, saying why. The first test
also runs under JupyterHub's base URL (its REST calls, and its blobs in sandboxed frames)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator

import pytest
from jobs_fixtures import jobs_controller, lab_client  # noqa: F401  (fixtures)
from labserver import Lab
from pages import open_in_sidebar, wait_running
from playwright.sync_api import Dialog, Page, expect

from fray_jupyter.client import FrayClient
from fray_jupyter.controller.runtime import profiling
from fray_jupyter.runtime_file import ControllerInfo
from tests.controller_harness import Wire, launch_request

BUSY = """exec python -c '
import threading, time
def stuck_here():
    while True:
        time.sleep(0.2)
def busy_loop():
    while True:
        sum(range(100000))
threading.Thread(target=stuck_here, name="waiter", daemon=True).start()
busy_loop()'"""
"""A Python task: its main thread spins in ``busy_loop``, a second thread sleeps in ``stuck_here``."""
pytestmark = pytest.mark.skipif(profiling.tool("py-spy") is None, reason="py-spy is not installed")


@pytest.fixture
def launched(jobs_controller: ControllerInfo, lab_client: FrayClient) -> Iterator[Callable[[str, str], str]]:  # noqa: F811
    """Launch jobs (name prefix, command) and wait until each runs; every one is cancelled after."""
    wire = Wire(jobs_controller)
    started: list[str] = []

    def launch(name: str, command: str) -> str:
        job_id = wire.launch(launch_request(f"{name}-{uuid.uuid4().hex[:6]}", command))
        started.append(job_id)
        wait_running(lab_client, job_id)
        return job_id
    yield launch
    for job_id in started:
        lab_client.terminate(job_id)
    wire.close()


@pytest.mark.hub
def test_cpu_and_threads_open_live_views_and_the_history_reopens_them(
        lab: Lab, page: Page, launched: Callable[[str, str], str]) -> None:
    job_id = launched("busy", BUSY)
    view = open_in_sidebar(page, lab, job_id)
    inspect = view.locator(f".fj-Inspect[data-task-id='{job_id}/0']")
    cpu = inspect.locator(".fj-Inspect-button[data-kind='cpu']")
    expect(cpu).to_be_enabled(timeout=20_000)

    cpu.click()
    state = inspect.locator(".fj-Inspect-state")
    expect(state).to_have_text("profiling… 5 s")
    expect(cpu).to_be_disabled()
    expect(state).to_have_text(re.compile(r"^profiling… [1-4] s$"))  # counting down: the page is not frozen
    tab = page.locator(".fj-CaptureTab[data-kind='cpu']")
    expect(tab).to_have_count(1, timeout=60_000)
    expect(page.locator(".lm-DockPanel .lm-TabBar-tab.lm-mod-current")).to_contain_text("CPU ·")
    expect(tab.locator(".fj-CaptureFrame")).to_have_attribute("sandbox", "allow-scripts allow-modals")
    flame = tab.frame_locator(".fj-CaptureFrame")
    expect(flame.locator("#frames")).to_contain_text("busy_loop")
    expect(flame.locator("#unzoom")).to_have_class(re.compile(r"\bhide\b"))
    hot = flame.locator("title", has_text=re.compile(r"^busy_loop "))  # its own frame, not the command line's
    flame.locator("#frames g").filter(has=hot).first.click()
    expect(flame.locator("#unzoom")).not_to_have_class(re.compile(r"\bhide\b"))  # zoomed on the frame

    def search_for_busy_loop(dialog: Dialog) -> None:
        dialog.accept("busy_loop")
    page.once("dialog", search_for_busy_loop)
    flame.locator("#search").click()
    expect(flame.locator("#matched")).to_have_text(re.compile(r"Matched: \d"))
    expect(state).to_have_text("")
    expect(cpu).to_be_enabled()

    inspect.locator(".fj-Inspect-button[data-kind='threads']").click()
    dump = page.locator(".fj-CaptureTab[data-kind='threads'] .fj-Dump")
    expect(dump).to_be_visible(timeout=60_000)
    stuck = dump.locator(".fj-Dump-own", has_text="stuck_here")
    expect(stuck).to_have_count(1)
    assert stuck.evaluate("node => getComputedStyle(node).fontWeight") == "700"  # picked out
    expect(dump.locator(".fj-Dump-library", has_text="threading.py")).not_to_have_count(0)
    expect(dump.locator(".fj-Dump-thread", has_text='"waiter"')).to_have_count(1)

    history = inspect.locator(".fj-Profiles")
    expect(history.locator("summary")).to_have_text("Profiles (2)")
    history.locator("summary").click()
    items = history.locator(".fj-Profile")
    expect(items).to_have_count(2)
    expect(items.nth(0)).to_have_attribute("data-kind", "threads")  # newest first
    expect(items.nth(1)).to_contain_text(re.compile(r"^CPU · .* · 5 s · "))
    items.nth(1).locator(".fj-Profile-open").click()
    expect(page.locator(".fj-CaptureTab[data-kind='cpu']")).to_have_count(2)
    reopened = page.locator(".fj-CaptureTab[data-kind='cpu']").nth(1).frame_locator(".fj-CaptureFrame")
    expect(reopened.locator("#frames")).to_contain_text("busy_loop")


def test_a_task_the_profilers_cannot_read_says_why_and_a_finished_one_cannot_be_profiled(
        lab: Lab, page: Page, launched: Callable[[str, str], str], lab_client: FrayClient) -> None:  # noqa: F811
    job_id = launched("shell", "exec sleep 300")
    view = open_in_sidebar(page, lab, job_id)
    inspect = view.locator(f".fj-Inspect[data-task-id='{job_id}/0']")
    for kind, reason in (("cpu", "no CPU profile: py-spy record failed"),
                         ("memory", "no memory profile: memray attach failed")):
        inspect.locator(f".fj-Inspect-button[data-kind='{kind}']").click()
        empty = page.locator(f".fj-CaptureTab[data-kind='{kind}'] .fj-CaptureEmpty")
        expect(empty).to_contain_text(reason, timeout=60_000)
        expect(page.locator(f".fj-CaptureTab[data-kind='{kind}'] iframe")).to_have_count(0)
    expect(inspect.locator(".fj-Profiles summary")).to_have_text("Profiles (2)")

    lab_client.terminate(job_id)
    threads = inspect.locator(".fj-Inspect-button[data-kind='threads']")
    expect(threads).to_be_disabled(timeout=20_000)
    expect(threads).to_have_attribute("title", "The task is killed: only a running task can be profiled.")

