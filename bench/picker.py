"""ResourcePicker latency (goal: a change shows its preview within 100 ms at p95, in the browser).

1. Python: one control change = plan() + render_preview_html() + widget state update, timed
   in-process over many changes (median / p95), and plan + render alone.
2. Browser: a real JupyterLab (tests/ui/labserver.py) on Debian Chromium; in the page, set the slice
   count and wait until the preview shows the new replica count and the next frame is drawn, 50
   times (p50 / p95). The round trip includes the kernel comm both ways; the same loop over a
   trivial IntText -> HTML pair gives the baseline any widget pays on the machine.
3. With ``--tcp-nodelay``, the browser part again on a server with Nagle's algorithm off on kernel
   websockets (``fray_jupyter.server.nodelay``, an opt-in server setting; its docstring says why).
Every figure is recorded for ``bench/run`` (``bench/results.py``).

Run: .venv/bin/python bench/picker.py [--changes 50] [--python-only] [--tcp-nodelay]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import Figure, record
from fray_jupyter import ResourceConfig, plan
from fray_jupyter.views.preview import render_preview_html
from fray_jupyter.widgets import ResourcePicker

GOAL_P95_MS = 100.0
ROOT = Path(__file__).resolve().parent.parent
SEED = ResourceConfig.with_tpu("v4-32", slice_count=2, regions=["us-central2"])
VMS_PER_SLICE = 4

# In the page: set INPUT to a new number, resolve once OUTPUT shows EXPECTED and a frame has passed.
MEASURE_JS = """async ({changes, input, output, factor}) => {
  const field = document.querySelector(input);
  const samples = [];
  for (let i = 0; i < changes; i++) {
    const value = 3 + (i % 6);
    const expected = String(value * factor);
    const area = document.querySelector(output).parentElement;
    const updated = new Promise(resolve => {
      const observer = new MutationObserver(() => {
        if (document.querySelector(output)?.textContent === expected) {
          observer.disconnect();
          requestAnimationFrame(() => resolve(performance.now()));
        }
      });
      observer.observe(area.closest('.jp-OutputArea-output') || area, {childList: true, subtree: true, characterData: true});
    });
    const start = performance.now();
    field.value = String(value);
    field.dispatchEvent(new Event('change', {bubbles: true}));
    samples.push((await updated) - start);
  }
  return samples;
}"""
PICKER = {"input": ".fray-slices input", "output": ".fray-preview-area .fray-preview > .fray-cards .fray-replicas",
          "factor": VMS_PER_SLICE}
# The same round trip through a trivial widget pair: what any widget costs on this machine.
PROBE = {"input": ".probe-in input", "output": ".probe-out .probe-value", "factor": 1}
CELL = """from IPython.display import display
import ipywidgets as widgets
from fray_jupyter import ResourceConfig
from fray_jupyter.widgets import ResourcePicker
probe_in, probe_out = widgets.BoundedIntText(value=1, min=1, max=99), widgets.HTML("<b class=probe-value>1</b>")
probe_in.add_class("probe-in"), probe_out.add_class("probe-out")
probe_in.observe(lambda change: setattr(probe_out, "value", f"<b class=probe-value>{change.new}</b>"), names="value")
display(widgets.VBox([probe_in, probe_out]))
ResourcePicker(resources=ResourceConfig.with_tpu("v4-32", slice_count=2, regions=["us-central2"]))"""
# --tcp-nodelay: Nagle's algorithm off on kernel websockets (fray_jupyter/server/nodelay.py says why
# jupyter_server's default leaves small widget messages waiting for delayed ACKs).
NODELAY_SETTING = ("--ServerApp.kernel_websocket_connection_class="
                   "fray_jupyter.server.nodelay.NoDelayKernelWebsocketConnection")


def _summary(label: str, samples_ms: list[float], goal: float | None = None) -> str:
    """Print one line and record the figure (p50 and p95; the goal applies to p95)."""
    p50 = statistics.median(samples_ms)
    p95 = statistics.quantiles(samples_ms, n=20)[-1]
    verdict = "" if goal is None else f"  [goal p95 <= {goal:.0f} ms: {'pass' if p95 <= goal else 'MISS'}]"
    record(Figure("picker", label, f"p50 {p50:.2f} ms, p95 {p95:.2f} ms ({len(samples_ms)})",
                  "" if goal is None else f"p95 <= {goal:.0f} ms", None if goal is None else p95 <= goal))
    return f"{label}: p50 {p50:.2f} ms, p95 {p95:.2f} ms over {len(samples_ms)}{verdict}"


def _time(action: Callable[[int], object], count: int) -> list[float]:
    samples = []
    for i in range(count):
        start = time.perf_counter()
        action(i)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def python_side(changes: int) -> None:
    """Per-change cost inside the kernel."""
    picker = ResourcePicker(resources=SEED, user="bench")
    job = picker.job()
    previous = plan(job, user="bench")

    def plan_and_render(i: int) -> None:
        resources = ResourceConfig.with_tpu("v4-32", slice_count=3 + i % 6, regions=["us-central2"])
        render_preview_html(plan(job.model_copy(update={"resources": resources, "replicas": None}), user="bench"),
                            previous=previous)

    def change(i: int) -> None:
        picker.controls.slices.value = 3 + i % 6 if picker.controls.slices.value != 3 + i % 6 else 9

    _time(change, 20)  # warm up
    print(_summary("python: plan + render", _time(plan_and_render, changes)))
    print(_summary("python: control change (plan + render + widget update)", _time(change, changes), GOAL_P95_MS))
    assert picker.error is None


def browser_side(changes: int, tcp_nodelay: bool) -> None:
    """Change -> preview-updated latency in a real JupyterLab on Chromium, and the trivial baseline."""
    sys.path.insert(0, str(ROOT / "tests" / "ui"))
    from labserver import launch_args, run_first_cell, running_lab
    from playwright.sync_api import expect, sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        extra = [NODELAY_SETTING] if tcp_nodelay else []
        with running_lab(Path(tmp) / "lab", *extra) as lab, sync_playwright() as playwright:
            browser = playwright.chromium.launch(**launch_args())
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            run_first_cell(page, lab.open_url(lab.notebook("bench.ipynb", CELL)))
            expect(page.locator(str(PICKER["output"]))).to_have_text("8", timeout=60_000)
            page.evaluate(MEASURE_JS, {**PICKER, "changes": 5})  # warm up
            page.evaluate(MEASURE_JS, {**PROBE, "changes": 5})
            picker = page.evaluate(MEASURE_JS, {**PICKER, "changes": changes})
            probe = page.evaluate(MEASURE_JS, {**PROBE, "changes": changes})
            browser.close()
    server = "TCP_NODELAY kernel websockets" if tcp_nodelay else "stock jupyter_server"
    print(_summary(f"browser ({server}): trivial widget round trip (baseline)", probe))
    print(_summary(f"browser ({server}): picker change -> preview updated", picker, GOAL_P95_MS))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=50)
    parser.add_argument("--python-only", action="store_true")
    parser.add_argument("--tcp-nodelay", action="store_true",
                        help="also measure with Nagle off on kernel websockets (fray_jupyter.server.nodelay)")
    args = parser.parse_args()
    python_side(max(args.changes, 200))
    if not args.python_only:
        browser_side(args.changes, tcp_nodelay=False)
        if args.tcp_nodelay:
            browser_side(args.changes, tcp_nodelay=True)


if __name__ == "__main__":
    main()
