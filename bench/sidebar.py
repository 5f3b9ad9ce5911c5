"""What the Fray Jobs sidebar costs while nothing changes (goals: <= 4 requests/min once backed
off, and <= 60 ms of server CPU per minute, 0.1 % of one core).

A real JupyterLab (tests/ui/labserver.py) on Debian Chromium, with its embedded controller holding
50 finished jobs. The sidebar is opened and left alone for ``--watch`` seconds (default 130: its
back-off, 2 s growing by 1.5x per unchanged refresh, reaches its 30 s ceiling after about 64 s,
and the last 60 s show the ceiling twice; with the push stream it asks nothing once connected, so
``bench/run``'s default run watches 30 s). Measured:

1. ``/fray/`` requests the page makes (Playwright request events): in the first ``--window`` s, and
   in the last ``--window`` s of the watch (once settled), as requests per minute; JupyterLab's own
   ``/api/`` polling in the same window for comparison.
2. Server CPU in the last ``--window`` s (default 60; psutil: the Jupyter server process plus the controller process),
   everything included (JupyterLab's own polling too).
3. Server CPU of one sidebar refresh (``GET /fray/jobs?scope=roots&user=alice&limit=50``: the
   Jupyter server's handler and the controller's ListJobs), over 200 calls; times the idle rate, the sidebar's share.

4. Then, in the same JupyterLab, ``bench/sidebar_scale.py``'s figures on 10,000 jobs of 50 users
   (``--scale-repeat`` samples each; 0 skips them): opening, switching, searching, expanding.

Run: .venv/bin/python bench/sidebar.py [--jobs 50] [--watch 130] [--window 60] [--scale-repeat 5]
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "ui"))

from labserver import Lab, launch_args, running_lab

from bench import sidebar_scale
from bench.results import Figure, record
from fray_jupyter.client import FrayClient
from fray_jupyter.client.discovery import start_controller
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.runtime_file import RUNTIME_FILE_NAME, ControllerInfo

BENCH = "sidebar"
SIDEBAR_ID = "fray-jobs"
GOAL_PER_MIN = 4.0
GOAL_CPU_MS_PER_MIN = 60.0
WINDOW_S = 60.0
REFRESH_CALLS = 200


def seed(info: ControllerInfo, count: int) -> None:
    """``count`` jobs that finish at once; returns when every one has ended."""
    with FrayClient(info.url, info.token) as client:
        ids = [client.submit(plan(JobRequest(name=f"idle-{index:02d}", entrypoint=Entrypoint.from_binary("true"),
                                             resources=ResourceConfig(cpu=1, ram="128m", disk="1g")), user="alice"))
               for index in range(count)]
        for job_id in ids:
            client.wait(job_id, timeout=120)


def cpu_seconds(*pids: int) -> float:
    """User + system CPU seconds of these processes (and their children) so far."""
    total = 0.0
    for pid in pids:
        process = psutil.Process(pid)
        for each in [process, *process.children(recursive=True)]:
            times = each.cpu_times()
            total += times.user + times.system
    return total


def per_refresh_cpu_ms(lab: Lab, pids: tuple[int, ...]) -> tuple[float, float]:
    """(server CPU ms, wall ms) of one sidebar refresh (``GET /fray/jobs``: my roots, a page of 50),
    averaged over REFRESH_CALLS calls."""
    query = {"scope": "roots", "user": "alice", "limit": 50}
    with httpx.Client(base_url=lab.url, headers={"Authorization": f"token {lab.token}"}, timeout=30) as http:
        for _ in range(20):
            http.get("/fray/jobs", params=query).raise_for_status()
        before, started = cpu_seconds(*pids), time.perf_counter()
        for _ in range(REFRESH_CALLS):
            http.get("/fray/jobs", params=query).raise_for_status()
        wall, cpu = time.perf_counter() - started, cpu_seconds(*pids) - before
    return cpu * 1000 / REFRESH_CALLS, wall * 1000 / REFRESH_CALLS


def watch(lab: Lab, pids: tuple[int, ...], jobs: int, seconds: float, window: float) -> tuple[list[float], int, float]:
    """Open the sidebar and leave it ``seconds``: (times of /fray/ requests since it was shown,
    JupyterLab /api/ requests in the last ``window`` s, server CPU seconds in the last ``window`` s)."""
    from playwright.sync_api import expect, sync_playwright

    fray: list[float] = []
    api: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**launch_args())
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.on("request", lambda request: (fray if "/fray/" in request.url else api if "/api/" in request.url
                                            else []).append(time.monotonic()))
        page.goto(f"{lab.url}/lab/workspaces/sidebar-bench?token={lab.token}")
        page.wait_for_function("() => window.jupyterapp?.restored")
        page.evaluate("async () => { await window.jupyterapp.restored; }")
        shown = time.monotonic()
        page.evaluate(f"window.jupyterapp.shell.activateById('{SIDEBAR_ID}')")
        expect(page.locator(f"#{SIDEBAR_ID} .fj-Pager .fj-Muted")).to_have_text(f"1–{jobs} of {jobs}", timeout=30_000)
        assert page.evaluate("document.visibilityState") == "visible"
        window_start = shown + seconds - window
        # Sleep through Playwright (not time.sleep): the sync API dispatches request events only while
        # it is called, and their times must be the requests' own.
        page.wait_for_timeout(max(0.0, window_start - time.monotonic()) * 1000)
        cpu_before = cpu_seconds(*pids)
        page.wait_for_timeout(max(0.0, shown + seconds - time.monotonic()) * 1000)
        cpu = cpu_seconds(*pids) - cpu_before
        expect(page.locator(f"#{SIDEBAR_ID} .fj-Pager .fj-Muted")).to_have_text(f"1–{jobs} of {jobs}")
        browser.close()
    return [t - shown for t in fray if t >= shown], sum(1 for t in api if t >= window_start), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=50)
    parser.add_argument("--watch", type=float, default=130.0, help="seconds to leave the sidebar open (>= --window)")
    parser.add_argument("--window", type=float, default=WINDOW_S, help="seconds at the end of the watch measured")
    parser.add_argument("--scale-repeat", type=int, default=5, help="samples of each sidebar_scale figure (0: none)")
    args = parser.parse_args()
    scale: dict[str, list[float]] = {}
    window = args.window
    seconds = max(args.watch, window)
    with tempfile.TemporaryDirectory(prefix="fray-bench-sidebar-") as scratch, running_lab(Path(scratch)) as lab:
        info = start_controller(lab.root.parent / "runtime" / RUNTIME_FILE_NAME, lab.root.parent / "data" / "fray")
        try:
            seed(info, args.jobs)
            pids = (lab.pid, info.pid)
            times, api_requests, cpu = watch(lab, pids, args.jobs, seconds, window)
            refresh_cpu_ms, refresh_wall_ms = per_refresh_cpu_ms(lab, pids)
        finally:
            os.killpg(info.pid, signal.SIGTERM)  # the controller we started leads its own process group
        if args.scale_repeat > 0:
            with sidebar_scale.seeded_controller(lab):
                scale = sidebar_scale.measure(lab, args.scale_repeat)
    if scale:
        sidebar_scale.report(scale)
    first_window = sum(1 for t in times if t < window)
    settled = sum(1 for t in times if t >= seconds - window)  # the measured window: the end of the watch
    per_min = settled * 60.0 / window
    state = f"in the last {window:.0f} s of {seconds:.0f} s open"
    cpu_per_min = cpu * 1000 * 60.0 / window
    share = refresh_cpu_ms * per_min
    print(f"/fray/ requests after opening the sidebar at t=0 (s): {', '.join(f'{t:.1f}' for t in times)}")
    print(f"sidebar idle, {args.jobs} jobs: {first_window} /fray/ requests in the first {window:.0f} s; {settled} {state} "
          f"= {per_min:.1f} requests/min  [goal <= {GOAL_PER_MIN:.0f}/min: {'pass' if per_min <= GOAL_PER_MIN else 'MISS'}]")
    print(f"one sidebar refresh (GET /fray/jobs, my roots, limit 50): {refresh_cpu_ms:.2f} ms server CPU, "
          f"{refresh_wall_ms:.2f} ms wall (mean of {REFRESH_CALLS})")
    print(f"sidebar idle cost: {share:.1f} ms server CPU per minute  [goal <= {GOAL_CPU_MS_PER_MIN:.0f} ms/min: "
          f"{'pass' if share <= GOAL_CPU_MS_PER_MIN else 'MISS'}]")
    print(f"whole server while idle (JupyterLab's own polling included, {api_requests} /api/ requests in the "
          f"window): {cpu_per_min:.0f} ms CPU per minute")
    record(Figure(BENCH, f"sidebar idle ({args.jobs} jobs): /fray/ requests in the first {window:.0f} s",
                  str(first_window)))
    record(Figure(BENCH, f"sidebar idle ({args.jobs} jobs): /fray/ requests/min {state}",
                  f"{per_min:.1f}/min ({settled} requests)", f"<= {GOAL_PER_MIN:.0f}/min", per_min <= GOAL_PER_MIN))
    record(Figure(BENCH, "sidebar idle: server CPU per minute (refresh CPU x rate)",
                  f"{share:.1f} ms/min ({refresh_cpu_ms:.2f} ms/refresh)", f"<= {GOAL_CPU_MS_PER_MIN:.0f} ms/min",
                  share <= GOAL_CPU_MS_PER_MIN))
    record(Figure(BENCH, "idle server CPU per minute, JupyterLab's own polling included",
                  f"{cpu_per_min:.0f} ms/min ({api_requests} /api/ requests)"))


if __name__ == "__main__":
    main()
