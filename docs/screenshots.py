"""Regenerate the screenshots in ``docs/images`` (``scripts/screenshots`` runs this): a real, hermetic
JupyterLab (``tests/ui/labserver.py``) in the system's Chromium, with a few real jobs on its
embedded controller.

* ``picker.png``: a ``ResourcePicker`` for a two-slice v5p-8 job and its live preview.
* ``sidebar.png``: the Fray Jobs sidebar listing my jobs (Mine / Everyone): a coordinator expanded
  to its steps (one running on TPU, one done), a failed sweep, a gang that waits, saying why.
* ``sidebar-job.png``: the sidebar with the running training step open: its parent, its tasks and
  its live log.
* ``watching.png``: a job whose task grows past its 256 MiB request, open in the sidebar: its CPU
  and memory sparklines, the memory bar, the over-request warning and the event timeline.
* ``flamegraph.png``: a busy task's CPU profile taken from the sidebar's Look inside buttons, open in
  a JupyterLab tab as py-spy's live flamegraph, zoomed on its hot function.

``--only NAME`` (repeatable: ``picker``, ``sidebar``, ``flamegraph``) makes only those shots.

Nothing is faked: the jobs run as task processes, and every figure on screen is what the lab shows.
The coordinator's steps are launched as its task would launch them (a LaunchJob named
``<coordinator>/<step>``).
The lab, its controller and every task stop when the script ends.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests" / "ui")]

from playwright.sync_api import Locator, Page, expect, sync_playwright

from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, plan
from fray_jupyter.client import FrayClient
from fray_jupyter.client.discovery import start_controller
from fray_jupyter.client.transport import open_transport
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.runtime_file import RUNTIME_FILE_NAME, ControllerInfo
from tests.ui.labserver import KERNEL_IDLE, Lab, launch_args, running_lab

IMAGES = REPO / "docs" / "images"
SIDEBAR_ID = "fray-jobs"
VIEWPORT = {"width": 1360, "height": 860}
PICKER_VIEWPORT = {"width": 1360, "height": 1600}
"""Tall enough for the whole picker, so the shot starts at its first control."""
PICKER_HEIGHT = 900
SIDEBAR_WIDTH = 560
USER = "alice"

TRAIN = """\
import math, os, time
rank = int(os.environ["IRIS_TASK_ID"].rsplit("/", 1)[1].split(":")[0])
print(f"worker {rank}: jax devices: 4 x TPU v5p (emulated)", flush=True)
for step in range(1, 100_000):
    loss = 2.9 * math.exp(-step / 400) + 1.6 + 0.01 * math.sin(step + rank)
    print(f"step {step:5d}  loss {loss:.4f}  tokens/s {41_000 + 37 * (step % 11):,}", flush=True)
    time.sleep(0.4)
"""
TOKENIZE = """\
import os
shard = os.environ["IRIS_TASK_ID"].rsplit("/", 1)[1].split(":")[0]
for part in range(3):
    print(f"shard {shard}: wrote part {part} (1.2M tokens)")
"""
EVAL = """\
import json, os
print("gsm8k: 1319 problems, 8-shot")
result = {"accuracy": 0.764, "problems": 1319}
with open(os.path.join(os.environ["IRIS_OUTPUT_DIR"], "metrics.json"), "w") as out:
    json.dump(result, out)
print("accuracy 0.764")
"""
SWEEP = """\
print("lr 3e-4, warmup 2000")
raise RuntimeError("loss is nan at step 812: lower the learning rate")
"""


GROWS = """\
import time
held = []
for step in range(1, 100_000):
    if len(held) < 16:
        held.append(b"x" * (20 * 2**20))  # ~320 MiB after 16 steps
    sum(range(300_000))
    print(f"step {step:5d}  holding {20 * len(held)} MiB", flush=True)
    time.sleep(0.5)
"""


TOKENIZE_LOOP = """\
def normalize(text):
    return " ".join(text.lower().split())
def tokenize_batch(batch):
    return [normalize(line).split(" ") for line in batch]
def train_loop():
    batch = ["The Quick brown fox  jumps over the lazy dog"] * 200
    while True:
        tokenize_batch(batch)
train_loop()
"""
"""A task whose time goes to tokenizing: its flamegraph has a clear hot path."""


def python_job(name: str, code: str, resources: ResourceConfig) -> JobRequest:
    return JobRequest(name=name, entrypoint=Entrypoint.from_binary("python", ["-c", code]), resources=resources)


COORDINATOR = """\
import time
print("pipeline: tokenize -> train -> eval", flush=True)
time.sleep(3600)
"""

JOBS = (
    python_job("tokenize-shards", TOKENIZE, ResourceConfig.with_cpu(replicas=4, ram="1g")),
    python_job("sweep-lr-3e-4", SWEEP, ResourceConfig.with_cpu(ram="1g")),
    python_job("gang-v4-32x2", EVAL, ResourceConfig.with_tpu("v4-32", slice_count=2)),
    python_job("llama-8b-pipeline", COORDINATOR, ResourceConfig.with_cpu(ram="1g")),
)
"""Roots, oldest first: the sidebar lists newest first, so the coordinator is on top. The v4-32 gang
is one the embedded cluster can never place: it waits, with Iris's reason."""
STEPS = (
    python_job("tokenize", TOKENIZE, ResourceConfig.with_cpu(replicas=2, ram="1g")),
    python_job("train", TRAIN, ResourceConfig.with_tpu("v5p-8", slice_count=2, regions=["us-central1"])),
)
"""The coordinator's steps, launched as its task would launch them."""

PICKER_CELL = """\
%load_ext fray_jupyter
from fray_jupyter import ResourceConfig, ResourcePicker
picker = ResourcePicker(ResourceConfig.with_tpu("v5p-8", slice_count=2, regions=["us-central1"]), user="alice")
picker.controls.name.value = "train-llama-8b"
picker"""


@contextlib.contextmanager
def controller(lab: Lab) -> Iterator[ControllerInfo]:
    """The lab's embedded controller, started as a kernel's ``connect()`` would; stopped by pid."""
    info = start_controller(lab.root.parent / "runtime" / RUNTIME_FILE_NAME, lab.root.parent / "data" / "fray")
    try:
        yield info
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(info.pid, signal.SIGTERM)


def submit_jobs(client: FrayClient, info: ControllerInfo) -> dict[str, str]:
    """Submit ``JOBS`` and the coordinator's ``STEPS``; wait until the short ones have ended and the
    training step logs; their ids (a step's under its own name)."""
    ids = {job.name: client.submit(plan(job, user=USER)) for job in JOBS}
    transport = open_transport(info.url, info.token)
    try:
        for step in STEPS:
            request = Controller.LaunchJobRequest()
            request.CopyFrom(plan(step, user=USER).request)
            request.name = f"{ids['llama-8b-pipeline']}/{step.name}"
            ids[step.name] = transport.call("LaunchJob", request, Controller.LaunchJobResponse, 30.0).job_id
    finally:
        transport.close()
    for name in ("tokenize-shards", "sweep-lr-3e-4", "tokenize"):
        client.wait(ids[name], timeout=60)
    deadline = time.monotonic() + 60
    while not any("step" in entry.data for entry in client.logs(ids["train"]).entries):
        if time.monotonic() > deadline:
            raise RuntimeError("the training step wrote no log line within 60 s")
        time.sleep(0.2)
    return ids


def picker(page: Page, lab: Lab) -> None:
    """Run the picker cell and photograph the cell's output: controls and preview."""
    page.set_viewport_size(PICKER_VIEWPORT)
    page.goto(lab.open_url(lab.notebook("picker.ipynb", PICKER_CELL)))
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
    page.locator(".jp-Cell .jp-InputArea-editor >> visible=true").first.click()
    page.keyboard.press("Shift+Enter")
    preview = page.locator(".fray-preview-area")
    expect(preview.locator(".fray-replicas")).to_have_text("2", timeout=60_000)
    expect(preview).to_contain_text("/alice/train-llama-8b")
    expect(page.locator(".fray-fit")).to_contain_text("fit:", timeout=30_000)
    output = page.locator(".jp-Cell .jp-OutputArea-output").first
    page.mouse.move(0, 0)
    box = output.bounding_box()
    assert box is not None
    page.screenshot(path=IMAGES / "picker.png", clip={"x": box["x"] - 8, "y": box["y"] - 8, "width": box["width"] + 16,
                                                      "height": min(box["height"], PICKER_HEIGHT) + 8})


def shoot_sidebar(page: Page, name: str) -> None:
    """Photograph the left area (the sidebar and its tab bar), the mouse out of the way."""
    page.mouse.move(VIEWPORT["width"] - 10, VIEWPORT["height"] - 10)
    panel = page.locator(f"#{SIDEBAR_ID}").bounding_box()
    assert panel is not None
    page.screenshot(path=IMAGES / name,
                    clip={"x": 0, "y": 0, "width": panel["x"] + panel["width"] + 2, "height": VIEWPORT["height"]})


def open_wide_sidebar(page: Page, lab: Lab, workspace: str) -> None:
    """Open JupyterLab in ``workspace`` with the Fray Jobs sidebar shown and dragged to ``SIDEBAR_WIDTH``."""
    page.set_viewport_size(VIEWPORT)
    page.goto(f"{lab.url}/lab/workspaces/{workspace}?token={lab.token}")
    page.wait_for_function("() => window.jupyterapp?.restored")
    page.evaluate("async () => { await window.jupyterapp.restored; }")
    page.evaluate(f"window.jupyterapp.shell.activateById('{SIDEBAR_ID}')")
    handle = page.locator("#jp-main-split-panel > .lm-SplitPanel-handle:not(.lm-mod-hidden)").first.bounding_box()
    assert handle is not None
    page.mouse.move(handle["x"] + handle["width"] / 2, 300)
    page.mouse.down()
    page.mouse.move(SIDEBAR_WIDTH, 300, steps=5)
    page.mouse.up()


def sidebar(page: Page, lab: Lab, ids: dict[str, str]) -> None:
    """Open the sidebar, widen it, photograph the job list; open the training job, wait for its log
    tail, photograph that."""
    open_wide_sidebar(page, lab, "sidebar")
    page.evaluate("window.getSelection()?.removeAllRanges()")
    def row(name: str) -> Locator:
        return page.locator(f".fj-JobRow[data-job-id='{ids[name]}']")
    expect(row("sweep-lr-3e-4").locator(".fj-Badge")).to_have_text("failed", timeout=30_000)
    expect(row("gang-v4-32x2").locator(".fj-JobRow-why")).to_contain_text("Scheduler:")
    page.locator(f".fj-TreeItem[data-key='{ids['llama-8b-pipeline']}'] [data-part='toggle']").click()
    expect(row("train").locator(".fj-Badge")).to_have_text("running", timeout=30_000)
    expect(row("tokenize").locator(".fj-Badge")).to_have_text("succeeded")
    shoot_sidebar(page, "sidebar.png")
    row("train").click()
    view = page.locator(".fj-JobView")
    expect(view.locator(".fj-Tasks tbody tr")).to_have_count(2, timeout=30_000)
    expect(view.locator(".fj-Logs .fj-LogLine").first).to_be_visible(timeout=30_000)
    page.wait_for_timeout(3000)  # let the log tail fill (it follows the job), then photograph it
    shoot_sidebar(page, "sidebar-job.png")


def watching(page: Page, lab: Lab, client: FrayClient) -> None:
    """Submit ``GROWS`` with a 256 MiB request, open it in the (widened) sidebar, wait for the
    over-request warning and a few samples, photograph the job view's usage and timeline."""
    job_id = client.submit(plan(python_job("finetune-small", GROWS, ResourceConfig.with_cpu(ram="256m")), user=USER))
    try:
        open_wide_sidebar(page, lab, "watching")
        page.locator(f".fj-JobRow[data-job-id='{job_id}']").click()
        view = page.locator(".fj-JobView")
        expect(view.locator(".fj-Usage-warning")).to_be_visible(timeout=60_000)
        page.wait_for_timeout(6000)  # a few more samples on the sparklines
        view.locator(".fj-Tasks").evaluate("node => node.scrollIntoView({block: 'start'})")
        shoot_sidebar(page, "watching.png")
    finally:
        client.terminate(job_id)


def flamegraph(page: Page, lab: Lab, client: FrayClient) -> None:
    """Submit ``TOKENIZE_LOOP``, open it in the (widened) sidebar, take a CPU profile with the Look
    inside button, zoom the flamegraph's tab on ``tokenize_batch``, photograph the window."""
    job_id = client.submit(plan(python_job("tokenize-corpus", TOKENIZE_LOOP, ResourceConfig.with_cpu(ram="512m")),
                                user=USER))
    try:
        open_wide_sidebar(page, lab, "flamegraph")
        page.locator(f".fj-JobRow[data-job-id='{job_id}']").click()
        cpu = page.locator(f".fj-Inspect[data-task-id='{job_id}/0'] .fj-Inspect-button[data-kind='cpu']")
        expect(cpu).to_be_enabled(timeout=60_000)
        page.wait_for_timeout(2000)  # let the task's Python start before py-spy attaches
        cpu.click()
        frame = page.locator(".fj-CaptureTab[data-kind='cpu'] .fj-CaptureFrame").content_frame
        expect(frame.locator("#frames")).to_contain_text("tokenize_batch", timeout=60_000)
        hot = frame.locator("title", has_text=re.compile(r"^tokenize_batch "))
        frame.locator("#frames g").filter(has=hot).first.click()
        expect(frame.locator("#unzoom")).not_to_have_class("hide")
        page.mouse.move(VIEWPORT["width"] - 10, VIEWPORT["height"] - 10)
        page.screenshot(path=IMAGES / "flamegraph.png")
    finally:
        client.terminate(job_id)


SHOTS = ("picker", "sidebar", "flamegraph")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=SHOTS, help="make only this shot (repeatable)")
    only = set(parser.parse_args().only or SHOTS)
    IMAGES.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fray-screenshots-") as workdir, running_lab(
            Path(workdir), "--ServerApp.kernel_websocket_connection_class="
                           "fray_jupyter.server.nodelay.NoDelayKernelWebsocketConnection") as lab, \
            controller(lab) as info, FrayClient(info.url, info.token) as client, sync_playwright() as playwright:
        ids = submit_jobs(client, info) if "sidebar" in only else {}
        browser = playwright.chromium.launch(**launch_args())
        try:
            page = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
            if "picker" in only:
                picker(page, lab)
            if "sidebar" in only:
                sidebar(page, lab, ids)
            if "flamegraph" in only:
                flamegraph(page, lab, client)
        finally:
            browser.close()
            for name in ("llama-8b-pipeline", "gang-v4-32x2"):
                if name in ids:
                    client.terminate(ids[name])
    made = {"picker": ["picker.png"], "sidebar": ["sidebar.png", "sidebar-job.png"], "flamegraph": ["flamegraph.png"]}
    for shot in SHOTS:
        for name in made[shot] if shot in only else ():
            print(f"wrote {IMAGES / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
