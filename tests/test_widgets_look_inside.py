"""The status panel's inspect buttons (``widgets.look_inside``) against the real embedded controller: a
running task's CPU, Threads and Memory buttons capture in the background (the click returns while
the capture runs), show the capture in the panel (a sandboxed interactive flamegraph, the dump with
the task's own frames in bold, memray's page or the stub's reason) and write it next to the
notebook under ``%fray profile``'s name; a task that is not running has its buttons disabled, the
tooltip saying why. Also ``widgets.capture``'s rules on their own."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.inspection import InspectionFailed, Profile
from fray_jupyter.controller.runtime import profiling
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.widgets import capture
from fray_jupyter.widgets.look_inside import CPU_SECONDS, InspectView
from fray_jupyter.widgets.status import JobStatusPanel
from tests.controller_harness import launch_request
from tests.waiting import until

pytestmark = pytest.mark.skipif(profiling.tool("py-spy") is None, reason="py-spy is not installed")

BUSY = """
import os, sys, threading
def idle_helper():
    threading.Event().wait()
def busy_loop():
    while True:
        sum(range(100000))
if os.environ["IRIS_TASK_ID"].split("/")[-1].startswith("1"):
    sys.exit(0)
threading.Thread(target=idle_helper, daemon=True).start()
busy_loop()
"""
"""A ``%%fray`` cell: task 0 spins in ``busy_loop`` (with an idle thread in the standard library);
task 1 ends at once."""


def shown(view: InspectView) -> str:
    """The HTML the capture output shows now ("" before the first capture)."""
    return "".join(str(output["data"]["text/html"]) for output in view.output.outputs)


def refreshed(panel: JobStatusPanel) -> JobStatusPanel:
    """``panel`` after one more poll."""
    panel.refresh()
    return panel


def dump(client: FrayClient, task_id: str) -> str:
    """The task's thread dump ("" while py-spy cannot read it yet)."""
    try:
        return client.profile(task_id, "threads").text()
    except InspectionFailed:
        return ""


def test_a_running_tasks_buttons_capture_in_the_background_and_write_next_to_the_notebook(
        client: FrayClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    job = client.submit(plan(JobRequest(name="inspected", entrypoint=Entrypoint.from_cell(BUSY), replicas=2,
                                        resources=ResourceConfig(cpu=1, ram="512m", disk="1g")), user="alice").request)
    panel = JobStatusPanel(client, job, start=False)
    view = panel.inspect
    stem = job.lstrip("/").replace("/", "-")
    try:
        def settled() -> bool:
            panel.refresh()
            states = [task.state for task in panel.task_list]
            return states == [job_pb2.TASK_STATE_RUNNING, job_pb2.TASK_STATE_SUCCEEDED]

        until(settled, "task 0 running and task 1 finished", feed=client)
        until(lambda: "busy_loop" in dump(client, f"{job}/0"), "task 0 in busy_loop")
        rows = view.rows_box.children
        assert [row._dom_classes[-1] for row in rows] == ["fray-inspect-task-0", "fray-inspect-task-1"]
        ended = rows[1].children[1:]
        assert all(button.disabled for button in ended)
        assert {button.tooltip for button in ended} == {
            "task 1 is SUCCEEDED: only a running task can be looked inside"}
        cpu, memory, threads = rows[0].children[1:]
        assert not cpu.disabled and cpu.tooltip == f"task 0: sample its CPU for {CPU_SECONDS} s (py-spy): a flamegraph"

        cpu.click()  # returns while py-spy samples: the kernel's comm is free meanwhile
        assert view.capturing == "CPU capture of task 0" and shown(view) == ""
        assert f"capturing CPU of task 0 for {CPU_SECONDS} s" in view.note.value
        assert threads.disabled and threads.tooltip.startswith("the CPU capture of task 0 is running")
        page = until(lambda: shown(view), "the flamegraph in the panel")
        assert view.join(0) and not cpu.disabled
        frame = re.search(r'<iframe class="fray-capture-frame" sandbox="allow-scripts allow-modals" srcdoc="([^"]*)"',
                          page)
        assert frame is not None, page[:500]
        document = html.unescape(frame.group(1))
        assert document.startswith("<!DOCTYPE html>") and "busy_loop" in document and "function init(evt)" in document
        saved = tmp_path / f"{stem}-0-cpu.svg"
        assert f"written to {saved}" in page and b"busy_loop" in saved.read_bytes()

        threads.click()
        stacks = until(lambda: "fray-thread-dump" in shown(view) and shown(view), "the thread dump in the panel")
        assert view.join(0)
        bold = re.findall(r'<b class="fray-own-frame">\s*(.*?)</b>', stacks)
        assert any(line.startswith("busy_loop (_fray_cell.py:") for line in bold), bold
        assert any(line.startswith("idle_helper (_fray_cell.py:") for line in bold), bold
        assert re.search(r"\n\s+Event\.wait \(threading\.py:\d+\)\n", stacks)  # the library's frames: plain
        assert "busy_loop" in (tmp_path / f"{stem}-0-threads.txt").read_text()

        memory.click()
        page = until(lambda: "memory profile" in shown(view) and shown(view), "the memory capture in the panel")
        reason = re.search(r'<div class="fray-status fray-capture-stub">(.*?)</div>', page)
        if reason is not None:  # memray could not attach here: the stub's reason, said as a line
            assert reason.group(1).startswith("no memory profile: ")
        else:
            assert '<iframe class="fray-capture-frame"' in page
        assert (tmp_path / f"{stem}-0-memory.html").exists()
    finally:
        client.terminate(job)
    until(lambda: refreshed(panel).done, "the job ended", feed=client)
    assert all(button.disabled for button in view.rows_box.children[0].children[1:])
    assert view.capture(f"{job}/0", "cpu") is None and "only a running task can be looked inside" in view.note.value
    with pytest.raises(ValueError, match="kind='gpu' is not a capture kind: use one of cpu, memory, threads"):
        view.capture(f"{job}/0", "gpu")


def test_a_capture_that_fails_says_why_in_the_note(client: FrayClient) -> None:
    job = client.submit(launch_request("short", "sleep 300"))
    panel = JobStatusPanel(client, job, start=False)
    until(lambda: refreshed(panel).state == "running", "the job running", feed=client)
    client.terminate(job)
    until(lambda: client.status(job).state == job_pb2.JOB_STATE_KILLED, "the job killed", feed=client)
    view = panel.inspect
    thread = view.capture(f"{job}/0", "threads")  # its row still says RUNNING: the controller answers
    assert thread is not None
    view.join()
    assert "threads profile of task 0 failed: " in view.note.value and view.output.outputs == ()
    assert not view.capturing


def test_a_dump_bolds_the_frames_the_sidebar_calls_the_task_s_own() -> None:
    text = 'Thread 7 (idle): "MainThread"\n    wait (threading.py:331)\n    train (train.py:9)\n'
    page = capture.dump_html(text)
    assert '<b class="fray-own-frame">    train (train.py:9)</b>' in page
    assert "    wait (threading.py:331)" in page and '<b class="fray-own-frame">    wait' not in page


def test_a_stub_is_its_reason_and_a_coloured_dump_is_plain_escaped_text(tmp_path: Path) -> None:
    stub = Profile("/u/j/0", "memory", "flamegraph",
                   b"<!DOCTYPE html><html><body><p>no memory profile: memray &lt;missing&gt;</p></body></html>")
    assert capture.stub_reason(stub) == "no memory profile: memray <missing>"
    shown = capture.bundle(stub, "task 0", tmp_path / "x.html")
    assert "no memory profile: memray &lt;missing&gt;" in shown["text/html"] and "<iframe" not in shown["text/html"]
    dump = Profile("/u/j/0", "threads", "text",
                   b"Thread 1 (idle): \"<img src=x>\"\n    \x1b[32mf\x1b[0m (\x1b[36m<string>\x1b[0m:1)\n")
    page = capture.bundle(dump, "task 0", None)["text/html"]
    assert "<img" not in page and "&lt;img src=x&gt;" in page and '<b class="fray-own-frame">    f (&lt;string&gt;:1)</b>' in page
