"""The status panel's "watch it run" part (``widgets.usage``) against the real embedded controller:
a task holding ~300 MiB under a 256 MiB request shows its memory in the task table, the warning that
a cluster would OOM-kill it, the tree's totals, a silence marker once it has been quiet long enough,
and after a cancel the controller's event in the timeline, newest first; a status text shows its age;
and samples are read once."""

from __future__ import annotations

import re
import shlex
import sys

import pytest
from ipywidgets import HTML

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.liveness import SILENCE_ENV
from fray_jupyter.iris.usage import Sample, TaskUsage
from fray_jupyter.resources import ResourceConfig
from fray_jupyter.widgets import usage as usage_widget
from fray_jupyter.widgets.status import JobStatusPanel
from tests.controller_harness import launch_request
from tests.waiting import until

HOLD = """
import time
block = bytearray(300 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
print("holding", flush=True)
time.sleep(300)
"""


def shows(panel: JobStatusPanel, text: str, where: HTML) -> str | None:
    """``where``'s HTML once it shows ``text``, after one more refresh of ``panel``."""
    panel.refresh()
    return where.value if text in where.value else None


def test_a_task_over_its_memory_request_is_warned_of_and_its_events_are_listed(
        client: FrayClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SILENCE_ENV, "1")
    command = f"exec {shlex.quote(sys.executable)} -c {shlex.quote(HOLD)}"
    job = client.submit(launch_request("over-request", command,
                                       resources=ResourceConfig(cpu=1, ram="256m", disk="1g")))
    panel = JobStatusPanel(client, job, start=False)
    try:
        warning = until(lambda: shows(panel, "OOM-kill", panel.usage_view.warnings), "the warning", feed=client)
        assert "is over the 256 MiB requested: a cluster would OOM-kill this task at 256 MiB" in warning
        peak = panel.usage_view.usage[f"{job}/0"].peak_memory_mb
        assert 300 <= peak <= 340, peak
        table = panel.tasks.value
        assert "<th>MEM</th><th>PEAK MEM</th><th>CPU</th>" in table and 'class="fray-mem-bar"' in table
        assert "MiB</td>" in table
        assert "job used:" in panel.usage_view.totals_line.value
        kept = panel.snapshot_html()  # what a saved notebook keeps
        assert "<th>PEAK MEM</th>" in kept and "a cluster would OOM-kill this task at 256 MiB" in kept
        sent = panel.request.value  # what was sent, read back once
        assert "request as sent" in sent and "256 MiB RAM" in sent and "exec " in sent
        until(lambda: shows(panel, "no output for", panel.tasks), "the silence marker", feed=client)
    finally:
        client.terminate(job)
    timeline = until(lambda: shows(panel, "JobFinalizedTaskKilled", panel.usage_view.timeline), "the kill event",
                     feed=client)
    assert timeline.index("JobFinalizedTaskKilled") < timeline.index("AttemptStarted") < timeline.index("Submitted")
    assert "Terminated by user" in timeline
    assert "no output for" not in panel.tasks.value  # a task that ended is not silent


def test_samples_are_read_once_and_the_dropped_ones_still_count_as_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usage_widget, "KEEP_SAMPLES", 3)
    view = usage_widget.UsageView()

    def task(*stamps: int) -> dict[str, TaskUsage]:
        return {"/u/j/0": TaskUsage("/u/j/0", tuple(Sample(ts, 0, 1000, 10, 10, 0) for ts in stamps), 1000, 256)}

    view.usage = view._merged(task(0, 1000))
    view.usage = view._merged(task(1000, 2000, 3000))  # the one held again (a late re-read) is skipped
    assert [s.ts_ms for s in view.usage["/u/j/0"].samples] == [1000, 2000, 3000]
    assert view._dropped_cpu == {"/u/j/0": 1.0}  # 1 core for the second before the first kept
    assert view.usage["/u/j/0"].cpu_seconds + view._dropped_cpu["/u/j/0"] == 3.0


def test_a_status_text_shows_its_age(client: FrayClient) -> None:
    report = ("import time\nfrom iris.client.client import get_iris_ctx\n"
              "from iris.cluster.client.job_info import get_job_info\ninfo = get_job_info()\n"
              "get_iris_ctx().client.report_task_status_text(info.task_id, info.attempt_id, 'step **3**', 'step 3')\n"
              "time.sleep(120)\n")
    job = client.submit(launch_request("reports", f"exec {shlex.quote(sys.executable)} -c {shlex.quote(report)}"))
    panel = JobStatusPanel(client, job, start=False)
    try:
        shown = until(lambda: shows(panel, "fray-status-age", panel.diagnostics), "the status text", feed=client)
        assert re.search(r"· reported (just now|\d+ s ago)</span>", shown), shown
    finally:
        client.terminate(job)
