"""The status panel's renderings of why a job waits or failed (``views.job``), end to end from a real
embedded controller read with ``client.diagnostics.diagnose``: the pending reason in Iris's two parts,
a failed task's root cause with its exception line, each attempt against the retry limits, and the
status text a task reported with its W&B link alive — all inert for hostile text."""

from __future__ import annotations

import re

import pytest

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.diagnostics import Diagnosis, diagnose
from fray_jupyter.iris.attempts import RetryLimits
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.resources import ResourceConfig
from fray_jupyter.views import job as view
from tests.controller_harness import (
    TERMINAL,
    ControllerProcess,
    launch_request,
    status_text_rows,
)

J = job_pb2
XSS = "<img src=x onerror=alert(1)>"
FAILING = ("printf 'Traceback (most recent call last):\\n  File \"train.py\", line 9, in <module>\\n' >&2; "
           f"echo 'ValueError: {XSS}' >&2; exit 1")
DETAIL = "**step 3/10**\n\n- **loss**: 2.31\n\n[W&B run](https://wandb.ai/team/run-1) <script>x()</script>"


def _report(controller: ControllerProcess, task_id: str, detail: str) -> None:
    """What a task's ``report_task_status_text`` sends (the real call is in test_controller_taskstatus)."""
    wire = controller.wire()
    try:
        wire.call("WriteRows", status_text_rows([task_id], [1], [detail], ["step 3/10"]))
    finally:
        wire.close()


@pytest.fixture(scope="module")
def failed(controller: ControllerProcess) -> Diagnosis:
    wire = controller.wire()
    try:
        job_id = wire.launch(launch_request("fails", FAILING, max_retries_failure=1, max_task_failures=1))
        wire.wait(job_id, TERMINAL)
    finally:
        wire.close()
    _report(controller, f"{job_id}/0", DETAIL)
    with FrayClient(controller.info.url, controller.info.token) as client:
        return diagnose(client, job_id)


def test_a_failed_task_shows_its_exception_line_as_the_root_cause(failed: Diagnosis) -> None:
    (task,) = failed.tasks
    html = view.root_cause_html(task.task_id, failed.root_causes[task.task_id])
    assert '<b class="fray-root-line">ValueError: &lt;img src=x onerror=alert(1)&gt;</b></pre>' in html
    assert "Traceback (most recent call last):" in html and "<img" not in html
    assert view.root_cause_html(task.task_id, ()) == ""


def test_a_coloured_root_cause_shows_as_a_terminal_shows_it() -> None:
    """Root-cause lines are log lines: their colours render (``views.ansi``), never as raw escapes."""
    html = view.root_cause_html("/alice/train/0", ["\x1b[31mTraceback (most recent call last):\x1b[0m",
                                                   "\x1b[1;31mValueError\x1b[0m: <b>nan</b>"])
    assert '<span class="fray-ansi-fg-1">Traceback (most recent call last):</span>' in html
    assert ('<b class="fray-root-line"><span class="fray-ansi-fg-1 fray-ansi-bold">ValueError</span>: '
            "&lt;b&gt;nan&lt;/b&gt;</b>") in html
    assert "\x1b" not in html


def test_each_retry_is_an_attempt_counted_against_the_limits(failed: Diagnosis) -> None:
    (task,) = failed.tasks
    assert failed.limits[:2] == (1, 1)
    html = view.attempts_html(task, failed.limits)
    assert len(re.findall(r'<tr class="fray-attempt"><td>\d</td>', html)) == 2
    assert html.count("FAILED") == 2 and html.count("Exit code: 1.") == 2
    assert "2 failures (max_retries_failure 1), 0 preemptions" in html
    assert view.job_retries_text(failed.status, failed.limits) == (
        "2 failed attempts (max_task_failures 1), 0 preemptions")


def test_the_reported_status_text_keeps_its_link_and_nothing_else(failed: Diagnosis) -> None:
    (task,) = failed.tasks
    html = view.status_text_html(task.task_id, failed.status_texts[task.task_id].detail_md)
    assert '<a href="https://wandb.ai/team/run-1" target="_blank" rel="noopener noreferrer">W&amp;B run</a>' in html
    assert '<span class="fray-ansi-bold">step 3/10</span>' in html and "&lt;script&gt;" in html and "<script" not in html
    assert view.status_text_html(task.task_id, "  ") == ""


def test_a_pending_job_shows_iris_s_reason_in_its_two_parts(controller: ControllerProcess) -> None:
    with FrayClient(controller.info.url, controller.info.token) as client:
        job_id = client.submit(launch_request("held", "true", resources=ResourceConfig.with_tpu("v4-32", slice_count=2)))
        try:
            found = diagnose(client, job_id)
        finally:
            client.terminate(job_id)
    assert found.status.state == J.JOB_STATE_PENDING
    parts = re.findall(r'<div class="fray-reason-part">(.*?)</div>', view.pending_html(found.status, found.tasks))
    autoscaler = ("Autoscaler: Unsatisfied autoscaler demand: coschedule_mismatch: job needs 8 tasks coscheduled "
                  "but no matching group has num_vms=8 (tpu_v4_32=4)")
    assert parts == ["Scheduler: No workers match constraints: [&#x27;device-type&#x27;, &#x27;device-variant&#x27;]",
                     autoscaler]


def test_a_retrying_task_s_reason_shows_when_the_job_gives_none() -> None:
    status = J.JobStatus(job_id="/a/j", state=J.JOB_STATE_PENDING)
    task = J.TaskStatus(task_id="/a/j/0", pending_reason=f"Retrying (attempt 1, last: task_state_failed) {XSS}")
    html = view.pending_html(status, [task])
    assert "Retrying (attempt 1, last: task_state_failed) &lt;img" in html and "<img" not in html
    assert view.pending_html(J.JobStatus(state=J.JOB_STATE_RUNNING, pending_reason="x")) == ""


def test_no_attempt_yet() -> None:
    html = view.attempts_html(J.TaskStatus(task_id="/a/j/3"), RetryLimits(0, 0, 100))
    assert "no attempt yet" in html and "task 3: 0 failures (max_retries_failure 0), 0 preemptions" in html
