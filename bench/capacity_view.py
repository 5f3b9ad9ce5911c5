"""``bench/inspection.py``'s browser half: the sidebar's capacity view, first opened on a cluster of
1,000 workers, in a real JupyterLab (``tests/ui/labserver.py``) and Chromium.

From the click on the closed "Capacity" section to the first frame painted after the view shows the
groups and its first worker rows, timed in the page (``performance.now()`` around the click, a
``MutationObserver`` for the rows, then two animation frames: the one that lays them out and the one
after it is painted). Each round loads the page afresh, so every open is a first open (nothing
cached in the page; the Jupyter server keeps no capacity answer). Goal: <= 300 ms, median of
``rounds``. Peer, same run: the same view on the embedded controller's built-in profile (a few warm
workers), so the ratio is what 1,000 workers cost.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Final

from bench.pages import SIDEBAR_ID, sidebar_page

GOAL_MS: Final[float] = 300.0
GUARD_MS: Final[int] = 120_000
"""Milliseconds any one wait may take before the bench gives up (a hang guard, not a goal)."""

OPEN: Final[str] = """async ([selector, guard]) => {
    const view = document.querySelector(selector);
    const shown = () => view.querySelector('.fj-CapGroup') && view.querySelector('.fj-CapWorker');
    const start = performance.now();
    const rows = new Promise((resolve, reject) => {
        const observer = new MutationObserver(() => {
            if (shown()) { observer.disconnect(); resolve(); }
        });
        observer.observe(view, { childList: true, subtree: true });
        setTimeout(() => { observer.disconnect(); reject(new Error('no capacity rows')); }, guard);
    });
    view.querySelector('summary').click();
    await rows;
    await new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    return [performance.now() - start, view.querySelectorAll('.fj-CapWorker').length];
}"""
"""Open the section and time it to the painted frame; answers (ms, worker rows in the page)."""


def first_paint_ms(lab: Any, rounds: int) -> tuple[float, int]:
    """(median ms from opening the closed capacity view to its first painted frame, worker rows
    drawn), over ``rounds`` fresh page loads of ``lab``."""
    from labserver import launch_args
    from playwright.sync_api import sync_playwright

    took, drawn = [], 0
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(**launch_args())
        for index in range(rounds):
            page = sidebar_page(browser, lab, f"capacity-bench-{index}")
            page.locator(f"#{SIDEBAR_ID} .fj-Capacity summary").wait_for(timeout=GUARD_MS)
            ms, drawn = page.evaluate(OPEN, [f"#{SIDEBAR_ID} .fj-Capacity", GUARD_MS])
            took.append(ms)
            page.close()
        browser.close()
    return statistics.median(took), drawn


def in_the_lab(root: Path, extra: tuple[str, ...], rounds: int) -> tuple[float, int]:
    """``first_paint_ms`` in a new lab whose embedded controller starts with ``extra`` flags."""
    from labserver import running_lab

    from fray_jupyter.runtime_file import RUNTIME_FILE_NAME
    from tests.controller_harness import start_controller, stop_quietly

    with running_lab(root / "lab") as lab:
        controller = start_controller(root / "state", *extra,
                                      runtime_file=lab.root.parent / "runtime" / RUNTIME_FILE_NAME)
        try:
            return first_paint_ms(lab, rounds)
        finally:
            stop_quietly(controller)
