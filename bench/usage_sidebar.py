"""``bench/usage.py``'s browser half: how soon a task's memory shows after it changes, through the
Jupyter server's REST route and in the Fray Jobs sidebar, and what drawing an hour of samples as a
sparkline costs in Chromium.

1. Freshness: a real JupyterLab (``tests/ui/labserver.py``) whose embedded controller runs a task that
   grows by ``STEP_MIB`` each time the bench touches a trigger file, and writes the time its memory
   has grown. From that time: (a) the first ``GET /fray/jobs/<id>/usage`` (polled every ``POLL_S``)
   whose ``now_memory_mb`` shows it; (b) the first moment the sidebar's job view (default settings,
   opened on the job in Chromium) shows it, seen by a ``MutationObserver`` in the page. Goal: <= 2 s
   each (the worst of ``steps``). Peer, same run: the controller's own sample interval.
2. Sparkline: the sidebar's own usage view (``labextension/lib/usage.js``, the build's compiled
   ``usage.ts`` with the uPlot it bundles) in Chromium, given one task's answer for an hour of 1 s
   samples as the server shapes it (``server.usage.task_usage_json``: thinned to
   ``MAX_SPARK_SAMPLES`` points). The first draw (a new block: both uPlot charts built and drawn) and
   a redraw (new data, ``setData``), each timed in the page to the end of uPlot's drawing (its
   commit runs in a microtask), median of ``repeat``. Goal: <= 16 ms (one frame at 60 Hz).
"""

from __future__ import annotations

import json
import mimetypes
import statistics
import threading
import time
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import httpx

from bench.pages import SIDEBAR_ID, sidebar_page
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.usage import Sample, TaskUsage
from fray_jupyter.server.usage import task_usage_json

ROOT: Final[Path] = Path(__file__).resolve().parents[1]
STEP_MIB: Final[int] = 100
POLL_S: Final[float] = 0.02
FRESH_GOAL_S: Final[float] = 2.0
DRAW_GOAL_MS: Final[float] = 16.0
HOUR_SAMPLES: Final[int] = 3600
GUARD_S: Final[float] = 120.0
"""Seconds any one wait may take before the bench gives up (a hang guard, not a goal)."""
ORIGIN: Final[str] = "http://127.0.0.1:9"
"""Where the sparkline page is served from: every request to it is answered by the page's route."""
LIB: Final[Path] = ROOT / "labextension" / "lib"
UPLOT: Final[Path] = ROOT / "labextension" / "node_modules" / "uplot" / "dist" / "uPlot.esm.js"

GROWER: Final[str] = """
import os, sys, time
folder, step, held = sys.argv[1], int(sys.argv[2]), []
for index in range(int(sys.argv[3])):
    while not os.path.exists(f"{folder}/trigger-{index}"):
        time.sleep(0.005)
    block = bytearray(step * 2**20)
    for at in range(0, len(block), 4096):
        block[at] = 1
    held.append(block)
    with open(f"{folder}/grown-{index}.tmp", "w") as out:
        out.write(repr(time.time()))
    os.rename(f"{folder}/grown-{index}.tmp", f"{folder}/grown-{index}")
time.sleep(3600)
"""
"""The task: at each trigger it holds ``step`` MiB more (every page touched), then writes when."""

SEEN: Final[str] = """([selector, mib]) => { window.__frayBenchSeen = new Promise((resolve, reject) => {
    const shown = () => {
        const text = document.querySelector(selector)?.textContent || '';
        const found = /^([\\d.]+) (KiB|MiB|GiB)/.exec(text);
        if (!found) return false;
        const scale = { KiB: 1 / 1024, MiB: 1, GiB: 1024 }[found[2]];
        return parseFloat(found[1]) * scale >= mib;
    };
    if (shown()) { resolve(Date.now()); return; }
    const observer = new MutationObserver(() => {
        if (shown()) { observer.disconnect(); resolve(Date.now()); }
    });
    observer.observe(document.body, { subtree: true, childList: true, characterData: true });
    setTimeout(() => { observer.disconnect(); reject(new Error(`not shown: ${mib} MiB`)); }, GUARD);
}); }"""
"""Set ``window.__frayBenchSeen``: a promise of the epoch ms when the element's memory text first shows at
least ``mib`` MiB."""

DRAW: Final[str] = """async ([usage, fresh, repeat]) => {
    const { UsageView } = await import('/lib/usage.js');
    const tick = () => new Promise(resolve => queueMicrotask(resolve));
    const first = [], redraw = [];
    for (let round = 0; round < repeat; round++) {
        const view = new UsageView();
        let started = performance.now();
        const node = view.block(usage);
        document.body.append(node);
        await tick();
        first.push(performance.now() - started);
        started = performance.now();
        view.block(fresh);
        await tick();
        redraw.push(performance.now() - started);
        if (!node.querySelectorAll('canvas').length) throw new Error('no sparkline drawn');
        node.remove();
    }
    return [first, redraw];
}"""
"""Draw a block ``repeat`` times in the page: each first draw, then its redraw with new data (ms)."""


def rest_seen(lab: Any, job_id: str, mib: int, found: list[float]) -> None:
    """Poll the REST usage of the job's task 0 until it shows ``mib`` MiB; append when (epoch s)."""
    url = f"{lab.url}/fray/jobs/{quote(job_id, safe='')}/usage"
    deadline = time.monotonic() + GUARD_S
    with httpx.Client(headers={"Authorization": f"token {lab.token}"}, timeout=30) as http:
        while time.monotonic() < deadline:
            tasks = http.get(url).raise_for_status().json()["tasks"]
            if tasks and (tasks[0]["now_memory_mb"] or 0) >= mib:
                found.append(time.time())
                return
            time.sleep(POLL_S)


def freshness(lab: Any, client: Any, folder: Path, steps: int) -> tuple[list[float], list[float]]:
    """Seconds from each of ``steps`` changes to the REST answer, and to the sidebar, showing it."""
    import shlex
    import sys

    from labserver import launch_args
    from playwright.sync_api import sync_playwright

    from tests.controller_harness import launch_request

    command = f"exec {shlex.quote(sys.executable)} -c {shlex.quote(GROWER)} {shlex.quote(str(folder))} {STEP_MIB} {steps}"
    job_id = client.submit(launch_request("grows", command))
    rest, sidebar = [], []
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(**launch_args())
            page = sidebar_page(browser, lab, "usage-bench")
            page.locator(f".fj-JobRow[data-job-id='{job_id}']").click(timeout=GUARD_S * 1000)
            memory = f"#{SIDEBAR_ID} .fj-JobView .fj-Usage[data-task-id='{job_id}/0'] .fj-Usage-memory"
            page.locator(memory).wait_for(timeout=GUARD_S * 1000)
            for index in range(steps):
                mib = STEP_MIB * (index + 1)
                page.evaluate(SEEN.replace("GUARD", str(int(GUARD_S * 1000))), [memory, mib])
                polled: list[float] = []
                poller = threading.Thread(target=rest_seen, args=(lab, job_id, mib, polled))
                poller.start()
                (folder / f"trigger-{index}").touch()
                grown = folder / f"grown-{index}"
                deadline = time.monotonic() + GUARD_S
                while not grown.exists() and time.monotonic() < deadline:
                    time.sleep(POLL_S)
                changed = float(grown.read_text())
                poller.join()
                seen_ms = page.evaluate("() => window.__frayBenchSeen")
                if not polled:
                    raise RuntimeError(f"the REST answer never showed {mib} MiB")
                rest.append(polled[0] - changed)
                sidebar.append(seen_ms / 1000 - changed)
            browser.close()
    finally:
        client.terminate(job_id)
    return rest, sidebar


def hour_of_samples() -> tuple[dict[str, Any], dict[str, Any]]:
    """One task's usage answer for an hour of 1 s samples, as the server shapes it, and the same an
    instant later with one more sample (the redraw's data)."""
    now = int(time.time() * 1000)
    task = job_pb2.TaskStatus(task_id="/alice/bench/0", state=job_pb2.TASK_STATE_RUNNING)

    def answer(count: int, end_ms: int) -> dict[str, Any]:
        samples = tuple(Sample(end_ms - 1000 * (count - i), 0, 200 + (i * 37) % 800, 300 + (i * 13) % 200,
                               500, 0) for i in range(count))
        return dict(task_usage_json(task, TaskUsage(task.task_id, samples, 1000, 1024), None, None))

    return answer(HOUR_SAMPLES, now), answer(HOUR_SAMPLES + 1, now + 1000)


def sparkline_ms(repeat: int) -> tuple[float, float, int]:
    """(median ms of a first draw, of a redraw, points drawn) of an hour's sparklines in Chromium."""
    from labserver import launch_args
    from playwright.sync_api import Route, sync_playwright

    if not (LIB / "usage.js").exists() or not UPLOT.exists():
        raise FileNotFoundError("the labextension is not built (cd labextension && npm run build)")
    page_html = (f'<!DOCTYPE html><html><head><script type="importmap">{json.dumps({"imports": {"uplot": "/uplot.js"}})}'
                 "</script></head><body></body></html>")

    def serve(route: Route) -> None:
        path = route.request.url.removeprefix(ORIGIN)
        if path == "/":
            route.fulfill(body=page_html, content_type="text/html")
        elif path == "/uplot.js":
            route.fulfill(path=UPLOT, content_type="text/javascript")
        else:
            name = path.removeprefix("/lib/")
            file = LIB / (name if name.endswith(".js") else f"{name}.js")
            route.fulfill(path=file, content_type=mimetypes.types_map[".js"])

    usage, fresh = hour_of_samples()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**launch_args())
        page = browser.new_page()
        page.route(f"{ORIGIN}/**", serve)
        page.goto(f"{ORIGIN}/")
        first, redraw = page.evaluate(DRAW, [usage, fresh, repeat])
        browser.close()
    return statistics.median(first), statistics.median(redraw), len(usage["samples"])
