"""The Fray Jobs sidebar's log view on a 200,000-line task, in Debian Chromium (goal: every figure
<= 100 ms per frame at the 95th percentile), against a plain ``<pre>`` of the same lines.

A real JupyterLab (tests/ui/labserver.py) with its embedded controller (per-task log cap raised
above 200,000 lines) runs one task printing ``--lines`` lines, a tenth of them coloured and some
with a link. Measured in the page, from ``requestAnimationFrame`` (each figure is the time
between two frames the browser drew):

1. Tail: the job is opened from the list; frames until its last line is painted (the newest
   page of rows is read from the server and rendered), and the time that took.
2. Scroll: the view is scrolled from the bottom to the first line, ``--step`` rows per frame
   (older pages are read as the top of what is held comes near); the frames, how long it took,
   and the most log rows in the DOM at any frame.
3. The download: ``GET /fray/jobs/<id>/logs/download`` streamed to the end (every line, how long,
   how fast), outside the browser.
4. The peer, in the same page and run: a plain ``<pre>`` of the same log text (the download, so
   the same lines, without colours), in a box of the same size: the frames to paint its tail
   (set as text, scrolled to the bottom) and to scroll it from bottom to top by the same step.
   Why this peer: it is the cheapest way a browser shows every line at all (no spans, no
   colours, no fetching: the text is already in memory); JupyterLab's own output area draws the
   same lines as more elements (its ANSI spans), so whatever beats the ``<pre>`` beats it too.

5. With ``--baseline``: the same figures, in the same run, for the build before the log views
   played rows through the terminal model (``BASELINE_REV``: its package and its labextension,
   built once under ``bench/.baseline``), and the goal that the tail's first paint and the scroll's
   p95 frame stay within ``BASELINE_GOAL``× of it.

Run: .venv/bin/python bench/logview.py [--lines 200000] [--step 100] [--baseline]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from labserver import Lab, launch_args, running_lab

from bench.pages import sidebar_page
from bench.results import Figure, record
from fray_jupyter.client import FrayClient
from fray_jupyter.client.discovery import start_controller
from fray_jupyter.controller.store.retention import LOG_LINES_ENV
from fray_jupyter.runtime_file import RUNTIME_FILE_NAME
from tests.logjobs import python_job

BENCH = "logview"
GOAL_FRAME_MS = 100.0
MOST_DOM_ROWS = 300
BASELINE_REV = "1de6583"
"""The last commit whose log views played each stored row on a one-line terminal (before the
terminal model with a live region)."""
BASELINE_GOAL = 1.2
"""The tail's first paint and the scroll's p95 frame may be at most this many times the baseline's."""
BASELINES = ROOT / "bench" / ".baseline"


def baseline(rev: str) -> Path:
    """``rev``'s package with its labextension built (``bench/.baseline/<sha>``, made once): the
    Python and the frontend as they were, with this checkout's generated protobuf code, since
    ``rev``'s was made for a protobuf newer than Marin's stack allows here (the messages have only
    gained fields since)."""
    sha = subprocess.run(["git", "rev-parse", rev], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    dest = BASELINES / sha[:12]
    if (dest / "fray_jupyter" / "labextension" / "package.json").exists():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", sha], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    shutil.rmtree(dest / "fray_jupyter" / "iris" / "proto")
    shutil.copytree(ROOT / "fray_jupyter" / "iris" / "proto", dest / "fray_jupyter" / "iris" / "proto",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (dest / "labextension" / "node_modules").symlink_to(ROOT / "labextension" / "node_modules")  # a superset
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run(["npm", "run", "--silent", "build:prod"], cwd=dest / "labextension", env=env, check=True)
    (dest / "jupyter" / "labextensions").mkdir(parents=True)
    (dest / "jupyter" / "labextensions" / "fray-jupyter").symlink_to(dest / "fray_jupyter" / "labextension")
    return dest


def baseline_env(dest: Path) -> dict[str, str]:
    """A lab's environment that loads ``dest``'s package and labextension before this checkout's."""
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(dest), os.environ.get("PYTHONPATH")])),
            "JUPYTER_PATH": os.pathsep.join(filter(None, [str(dest / "jupyter"), os.environ.get("JUPYTER_PATH")]))}


def log_script(lines: int) -> str:
    """A task printing ``lines`` numbered lines: every 10th coloured, every 100th with a link."""
    return (
        "import sys\n"
        "def line(i):\n"
        "    if i % 100 == 0:\n"
        "        return f'step {i} loss {1 / i:.6f} see https://wandb.ai/marin/runs/r{i}'\n"
        "    if i % 10 == 0:\n"
        "        return f'\\x1b[32mstep {i}\\x1b[0m loss \\x1b[1;33m{1 / i:.6f}\\x1b[0m'\n"
        "    return f'step {i} loss {1 / i:.6f} tokens/s 123456'\n"
        f"sys.stdout.writelines(line(i) + '\\n' for i in range(1, {lines + 1}))\n"
    )


OPEN_TAIL = """async ({ jobId, lastText, maxMs }) => {
  // Click the job's row; rAF deltas until a log row ends with lastText: the frames drawn meanwhile.
  const frames = [];
  const start = performance.now();
  let last = start;
  const painted = () =>
    [...document.querySelectorAll('.fj-JobView .fj-LogLine')].some(row => row.textContent.endsWith(lastText));
  const measured = new Promise(resolve => {
    const tick = now => {
      frames.push(now - last);
      last = now;
      painted() || now - start > maxMs ? resolve({ frames, ms: now - start, shown: painted() }) : requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  document.querySelector(`.fj-JobRow[data-job-id='${jobId}']`).click();
  return await measured;
}"""

SCROLL_UP = """async ({ selector, rowSelector, step, firstSeq, maxMs }) => {
  // Scroll `selector` up by `step` px each frame until its first row is the log's first (or the
  // top of a plain box); the frame times, the time, and the most rows in the DOM at any frame.
  const box = document.querySelector(selector);
  const frames = [];
  let most = 0;
  const start = performance.now();
  let last = start;
  return await new Promise(resolve => {
    const tick = now => {
      frames.push(now - last);
      last = now;
      most = Math.max(most, document.querySelectorAll('.fj-LogLine').length);
      const first = rowSelector ? box.querySelector(rowSelector) : null;
      const done = box.scrollTop === 0 && (!rowSelector || (first && Number(first.dataset.seq) <= firstSeq));
      if (done || now - start > maxMs) {
        resolve({ frames, ms: now - start, most, reached: done });
        return;
      }
      box.scrollTop = Math.max(0, box.scrollTop - step);
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
}"""

PRE_PEER = """async ({ url, step, maxMs }) => {
  const text = await (await fetch(url)).text();
  const box = document.createElement('div');
  box.id = 'fray-bench-pre';
  box.style.cssText = 'position:fixed;top:0;left:0;width:420px;height:40vh;overflow:auto;z-index:100000;' +
    'background:#fff;font-family:monospace;font-size:12px';
  const pre = document.createElement('pre');
  pre.style.margin = '0';
  box.append(pre);
  document.body.append(box);
  const start = performance.now();
  let last = start;
  const tail = [];
  pre.textContent = text;
  box.scrollTop = box.scrollHeight;
  await new Promise(resolve => {
    const tick = now => {
      tail.push(now - last);
      last = now;
      tail.length >= 2 ? resolve() : requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  });
  return { lines: text.split('\\n').length - 1, tail, tailMs: performance.now() - start };
}"""


def p95(frames: list[float]) -> float:
    """The 95th percentile of the frame times (nearest rank)."""
    ordered = sorted(frames)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def measure(lab: Lab, job_id: str, first_seq: int, last_line: str, step_px: int) -> dict[str, Any]:
    """Open the job in the sidebar, then scroll it and the peer; the raw figures."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**launch_args())
        page = sidebar_page(browser, lab, "logview-bench")
        row = page.locator(f".fj-JobRow[data-job-id='{job_id}']")
        expect(row).to_be_visible(timeout=30_000)
        tail = page.evaluate(OPEN_TAIL, {"jobId": job_id, "lastText": last_line, "maxMs": 60_000})
        assert tail["shown"], "the log's last line was never shown"
        scroll = page.evaluate(SCROLL_UP, {"selector": ".fj-JobView .fj-Logs", "rowSelector": ".fj-LogLine",
                                                        "step": step_px, "firstSeq": first_seq, "maxMs": 240_000})
        download = page.locator(".fj-JobView .fj-LogDownload").get_attribute("href")
        peer = page.evaluate(PRE_PEER, {"url": download, "step": step_px, "maxMs": 240_000})
        peer_scroll = page.evaluate(SCROLL_UP, {"selector": "#fray-bench-pre", "rowSelector": "",
                                                            "step": step_px, "firstSeq": 0, "maxMs": 240_000})
        browser.close()
    return {"tail": tail, "scroll": scroll, "peer": peer, "peer_scroll": peer_scroll}


def download(lab: Lab, job_id: str) -> tuple[int, int, float]:
    """Stream the job's full log from the server: (lines, bytes, seconds)."""
    lines = size = 0
    started = time.perf_counter()
    with httpx.Client(base_url=lab.url, headers={"Authorization": f"token {lab.token}"}, timeout=120) as http, \
            http.stream("GET", f"/fray/jobs/{quote(job_id, safe='')}/logs/download") as response:
        response.raise_for_status()
        for chunk in response.iter_bytes():
            lines += chunk.count(b"\n")
            size += len(chunk)
    return lines, size, time.perf_counter() - started


def report(lines: int, step_rows: int, figures: dict[str, Any]) -> None:
    tail, scroll, peer, peer_scroll = figures["tail"], figures["scroll"], figures["peer"], figures["peer_scroll"]
    tail_worst, peer_tail_worst = max(tail["frames"]), max(peer["tail"])
    scroll_p95, peer_p95 = p95(scroll["frames"]), p95(peer_scroll["frames"])
    shown = f"{lines:,} lines"
    print(f"tail of {shown}: shown {tail['ms']:.0f} ms after the click, longest frame {tail_worst:.0f} ms "
          f"(plain <pre> of the same text: {peer['tailMs']:.0f} ms, longest frame {peer_tail_worst:.0f} ms; "
          f"{tail_worst / peer_tail_worst:.2f}x)  [goal <= {GOAL_FRAME_MS:.0f} ms/frame: "
          f"{'pass' if tail_worst <= GOAL_FRAME_MS else 'MISS'}]")
    print(f"scroll through {shown} ({step_rows} rows/frame, {len(scroll['frames'])} frames, {scroll['ms'] / 1000:.1f} s, "
          f"reached the first line: {scroll['reached']}): p95 frame {scroll_p95:.1f} ms, worst {max(scroll['frames']):.0f} ms "
          f"(plain <pre>: p95 {peer_p95:.1f} ms, worst {max(peer_scroll['frames']):.0f} ms; {scroll_p95 / peer_p95:.2f}x)  "
          f"[goal <= {GOAL_FRAME_MS:.0f} ms/frame: {'pass' if scroll_p95 <= GOAL_FRAME_MS and scroll['reached'] else 'MISS'}]")
    print(f"log rows in the DOM at most while scrolling: {scroll['most']} (the <pre> peer: one text node of "
          f"{peer['lines']:,} lines)  [goal <= {MOST_DOM_ROWS}: {'pass' if scroll['most'] <= MOST_DOM_ROWS else 'MISS'}]")
    record(Figure(BENCH, f"sidebar log, {shown}: longest frame while the tail renders",
                  f"{tail_worst:.0f} ms ({tail['ms']:.0f} ms click to tail; <pre> peer {peer_tail_worst:.0f} ms, "
                  f"{tail_worst / peer_tail_worst:.2f}x)", f"<= {GOAL_FRAME_MS:.0f} ms/frame", tail_worst <= GOAL_FRAME_MS))
    record(Figure(BENCH, f"sidebar log, {shown}: p95 frame scrolling to the first line",
                  f"{scroll_p95:.1f} ms ({scroll['ms'] / 1000:.1f} s; <pre> peer {peer_p95:.1f} ms, "
                  f"{scroll_p95 / peer_p95:.2f}x)", f"<= {GOAL_FRAME_MS:.0f} ms/frame",
                  scroll_p95 <= GOAL_FRAME_MS and bool(scroll["reached"])))
    record(Figure(BENCH, f"sidebar log, {shown}: most log rows in the DOM", str(scroll["most"]),
                  f"<= {MOST_DOM_ROWS}", scroll["most"] <= MOST_DOM_ROWS))
    got, size, seconds = figures["download"]
    print(f"full log download: {got:,} lines, {size / 2**20:.1f} MiB in {seconds:.2f} s "
          f"({size / 2**20 / seconds:.1f} MiB/s)  [goal every line: {'pass' if got == lines else 'MISS'}]")
    record(Figure(BENCH, f"full log download, {shown}", f"{got:,} lines, {size / 2**20:.1f} MiB in {seconds:.2f} s",
                  "every line", got == lines))


def lab_figures(lines: int, step: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    """A lab (with ``env`` over this one's) and its controller running the log task; its figures."""
    with tempfile.TemporaryDirectory(prefix="fray-bench-logview-") as scratch, \
            running_lab(Path(scratch), env=env) as lab:
        info = start_controller(lab.root.parent / "runtime" / RUNTIME_FILE_NAME, lab.root.parent / "data" / "fray")
        try:
            with FrayClient(info.url, info.token) as client:
                started = time.perf_counter()
                job_id = client.submit(python_job("logview-bench", log_script(lines)))
                client.wait(job_id, timeout=600)
                first = client.logs(job_id, max_lines=1).entries
                last = client.logs(job_id, tail=True, max_lines=1).entries
                print(f"{lines:,}-line task ran and stored in {time.perf_counter() - started:.1f} s")
                assert first and last and last[0].data.startswith(f"step {lines} "), last
            figures = measure(lab, job_id, first[0].seq, last[0].data, step * 18)
            figures["download"] = download(lab, job_id)
        finally:
            os.killpg(info.pid, signal.SIGTERM)  # the controller we started leads its own process group
    return figures


def compare(lines: int, ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """The tail's first paint and the scroll's p95 frame against the baseline's, in one run."""
    for what, mine, base in (("tail first paint (click to last line)", ours["tail"]["ms"], theirs["tail"]["ms"]),
                             ("p95 frame scrolling to the first line", p95(ours["scroll"]["frames"]),
                              p95(theirs["scroll"]["frames"]))):
        ratio = mine / base
        print(f"{what}: {mine:.1f} ms, {BASELINE_REV} {base:.1f} ms: {ratio:.2f}x  "
              f"[goal <= {BASELINE_GOAL:g}x: {'pass' if ratio <= BASELINE_GOAL else 'MISS'}]")
        record(Figure(BENCH, f"sidebar log, {lines:,} lines: {what} vs {BASELINE_REV}",
                      f"{mine:.1f} ms vs {base:.1f} ms ({ratio:.2f}×)", f"≤ {BASELINE_GOAL:g}×", ratio <= BASELINE_GOAL))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument("--step", type=int, default=100, help="rows scrolled per frame")
    parser.add_argument("--baseline", action="store_true",
                        help=f"also measure {BASELINE_REV}'s build in the same run and compare")
    args = parser.parse_args()
    os.environ[LOG_LINES_ENV] = str(args.lines + 10)  # the controller started below keeps every line
    figures = lab_figures(args.lines, args.step)
    report(args.lines, args.step, figures)
    if args.baseline:
        theirs = lab_figures(args.lines, args.step, baseline_env(baseline(BASELINE_REV)))
        compare(args.lines, figures, theirs)


if __name__ == "__main__":
    main()
