"""``JobStatusPanel`` and the ``views.job`` renderings it shows, over a scripted controller: what
it draws for each state, escaping, the log cursor, back-off and stopping, errors, and Cancel.
(The panel against the real controller, and its Cancel button, are in ``test_magics.py``.)"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from fray_jupyter.client import retry
from fray_jupyter.client.errors import ControllerUnreachable, InvalidRequest, error_for
from fray_jupyter.client.status_text import StatusText
from fray_jupyter.iris.outputs import RESULT_FILE, capture
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.views import job as view
from fray_jupyter.widgets.status import JobStatusPanel
from tests.instant_clock import InstantClock
from tests.scripted_controller import JOB, XSS, ScriptedController


def panel_for(controller: ScriptedController, **kwargs: object) -> JobStatusPanel:
    return JobStatusPanel(controller, JOB, start=False, **kwargs)  # type: ignore[arg-type]


def test_a_running_job_shows_id_name_badge_progress_tasks_and_prefixed_logs() -> None:
    controller = ScriptedController(task_states=[J.TASK_STATE_SUCCEEDED, J.TASK_STATE_RUNNING])
    controller.add_log(0, "hello from 0")
    controller.add_log(1, "hello from 1")
    panel = panel_for(controller)
    assert panel.refresh()
    assert JOB in panel.header.value and "fray-state-running" in panel.header.value
    assert "train &lt;img" in panel.header.value and "emulating v5p-8" in panel.header.value
    assert (panel.progress.value, panel.progress.max, panel.progress.description) == (1, 2, "1/2")
    assert panel.progress.bar_style == "info"
    assert panel.tasks.value.count('class="fray-task"') == 2 and "fray-local" in panel.tasks.value
    assert list(panel.lines) == ["[0] hello from 0", "[1] hello from 1"]
    assert panel.reason.value == "" and panel.failure.value == "" and not panel.cancel_button.disabled


def test_the_log_tail_follows_the_cursor_and_keeps_the_newest_lines() -> None:
    controller = ScriptedController()
    panel = panel_for(controller, log_lines=3)
    for text in ("a", "b"):
        controller.add_log(0, text)
    panel.refresh()
    assert not panel.refresh()  # nothing new: no change
    controller.add_log(1, "c", attempt=1)
    controller.add_log(0, "d")
    assert panel.refresh()
    assert list(panel.lines) == ["[0] b", "[1:1] c", "[0] d"] and panel.cursor == 4


def test_job_text_is_escaped_everywhere() -> None:
    controller = ScriptedController(state=J.JOB_STATE_FAILED, error=f"died {XSS}",
                                    task_states=[J.TASK_STATE_FAILED, J.TASK_STATE_SUCCEEDED])
    controller.add_log(0, XSS)
    controller.add_log(0, f"\x1b[31m{XSS}\x1b[0m \x1b]8;;javascript:alert(1)\x07link\x1b]8;;\x07 https://x.io/\"{XSS}")
    panel = panel_for(controller)
    panel.refresh()
    shown = "".join(w.value for w in (panel.header, panel.tasks, panel.logs.view, panel.failure, panel.reason))
    assert "<img" not in shown and shown.count("&lt;img src=x onerror=alert(1)&gt;") >= 5
    assert "\x1b" not in shown and "javascript:" not in shown  # ANSI input too: rendered or dropped, never markup
    assert '<a href="https://x.io/" target="_blank" rel="noopener noreferrer">' in panel.logs.view.value


def test_pending_shows_the_reason() -> None:
    panel = panel_for(ScriptedController(state=J.JOB_STATE_PENDING, task_states=[J.TASK_STATE_PENDING]))
    panel.refresh()
    assert "Pending:" in panel.reason.value and "no slot &lt;free&gt;" in panel.reason.value
    assert "queued" in panel.header.value


def test_a_failed_job_shows_a_summary_and_disables_cancel() -> None:
    controller = ScriptedController(state=J.JOB_STATE_FAILED, error="task 0 failed",
                                    task_states=[J.TASK_STATE_FAILED, J.TASK_STATE_SUCCEEDED])
    for i in range(20):
        controller.add_log(0, f"line {i}")
    panel = panel_for(controller)
    panel.refresh()
    assert panel.done and panel.state == "failed" and panel.cancel_button.disabled
    assert panel.progress.bar_style == "danger"
    failure = panel.failure.value
    assert f"job {JOB} FAILED (took 5.2 s, exit code 1): task 0 failed" in failure
    assert "task 0: FAILED, exit code 2: command failed with exit code 2" in failure
    assert "[0] line 19" in failure and "[0] line 7" not in failure  # only the last lines
    assert "task 1" not in failure


def test_succeeded_is_green_without_a_failure_summary() -> None:
    panel = panel_for(ScriptedController(state=J.JOB_STATE_SUCCEEDED, task_states=[J.TASK_STATE_SUCCEEDED]))
    panel.refresh()
    assert panel.progress.bar_style == "success" and panel.failure.value == "" and "took 5.2 s" in panel.header.value
    bundle = panel._repr_mimebundle_()
    assert bundle is not None and bundle["text/plain"].startswith(f"{JOB}  SUCCEEDED  1/1 task  ")


def test_an_ended_job_lists_the_files_its_tasks_wrote(tmp_path: Path) -> None:
    (tmp_path / "out" / "plots").mkdir(parents=True)
    (tmp_path / "out" / "metrics.txt").write_text("loss 0.25\n")
    (tmp_path / "out" / "plots" / f"{XSS}.svg").write_text("<svg/>")
    (tmp_path / "out" / RESULT_FILE).write_bytes(b"pickled")  # the callable runner's own: not listed
    archive = capture(tmp_path / "out", tmp_path / "a" / "outputs.tar.zst")

    class WithOutputs(ScriptedController):
        def tasks(self, job_id: str) -> tuple[J.TaskStatus, ...]:
            tasks = super().tasks(job_id)
            for task in tasks:
                task.attempts.add(attempt_id=0).output_archive.CopyFrom(archive)
            return tasks

    controller = WithOutputs(state=J.JOB_STATE_RUNNING, task_states=[J.TASK_STATE_RUNNING])
    panel = panel_for(controller)
    panel.refresh()
    assert panel.outputs.value == ""  # read once the job has ended
    controller.state, controller.task_states = J.JOB_STATE_SUCCEEDED, [J.TASK_STATE_SUCCEEDED]
    panel.refresh()
    assert "outputs: metrics.txt (10 bytes), plots/&lt;img src=x onerror=alert(1)&gt;.svg (6 bytes)" in panel.outputs.value
    assert RESULT_FILE not in panel.outputs.value and XSS not in panel.outputs.value


class RecordedWaits:
    """Stands in for the panel's wake-up event: each wait records its timeout, calls ``step`` with
    how many waits came so far, and returns at once, so the poller runs at the test's pace."""

    def __init__(self, step: Callable[[int], None]) -> None:
        self.timeouts: list[float | None] = []
        self.step = step
        self.flag = False

    def wait(self, timeout: float | None = None) -> bool:
        self.timeouts.append(timeout)
        self.step(len(self.timeouts))
        return self.flag

    def set(self) -> None:
        self.flag = True

    def clear(self) -> None:
        self.flag = False


def test_polling_backs_off_while_idle_and_stops_when_the_job_ends() -> None:
    """The rule: wait ``poll_first`` after a poll that saw a change, else the last wait times
    ``BACKOFF``, at most ``poll_max``; stop once the job is terminal and its rows are in."""
    controller = ScriptedController()
    panel = JobStatusPanel(controller, JOB, start=False, poll_first=0.01, poll_max=0.03)  # type: ignore[arg-type]

    def step(waits: int) -> None:
        if waits == 6:  # before poll 6: a new log row
            controller.add_log(0, "news")
        if waits == 8:  # before poll 8: the job ends
            controller.state, controller.task_states = J.JOB_STATE_SUCCEEDED, [J.TASK_STATE_SUCCEEDED] * 2

    waits = RecordedWaits(step)
    panel._wake = waits  # type: ignore[assignment]
    panel.start()
    assert panel.join(timeout=30) and panel.state == "succeeded" and "[0] news" in panel.lines
    # poll 1 is the first (a change), 2-5 quiet (x1.6 up to the cap), 6 sees the row, 7 quiet, 8 ends
    assert waits.timeouts == pytest.approx([0.01, 0.01, 0.016, 0.0256, 0.03, 0.03, 0.01, 0.016])
    assert len(controller.calls) == 8  # one status call per poll, none after the end


def test_an_unreachable_controller_is_shown_and_retried_not_raised() -> None:
    controller = ScriptedController(fail_with=ControllerUnreachable("refused", url="http://127.0.0.1:1"))
    panel = panel_for(controller)
    assert not panel.refresh()
    assert "cannot reach the Fray controller at http://127.0.0.1:1" in panel.message.value
    controller.fail_with = None
    panel.refresh()
    assert panel.message.value == "" and panel.state == "running"


def test_a_call_being_resent_to_the_panels_controller_says_so_until_it_is_answered() -> None:
    """``client.retry``'s word, while it lasts; another controller's retries are not this panel's."""
    controller = ScriptedController()
    panel = panel_for(controller, poll_first=60.0, poll_max=60.0)
    panel.refresh()
    clock, shown = InstantClock(), []
    policy = retry.RetryPolicy(first_ms=100, most_ms=100, factor=1.0, jitter=0.0, budget_ms=1000, max_attempts=10)
    replies = iter([error_for("unavailable", "restarting", url=controller.url, method="GetJobStatus")] * 2 + ["ok"])

    def restarting() -> str:
        shown.append(panel.message.value)
        reply = next(replies)
        if isinstance(reply, Exception):
            raise reply
        return reply
    panel.start()
    try:
        retry.send(lambda: "elsewhere", policy, idempotent=True, url="http://other", clock=clock)
        assert retry.send(restarting, policy, idempotent=True, url=controller.url, clock=clock) == "ok"
    finally:
        panel.stop()
        assert panel.join(timeout=30)
    assert shown[0] == "" and "still retrying (attempt 2, 100 ms)" in shown[1]
    assert "still retrying (attempt 3, 200 ms)" in shown[2] and "restarting" in shown[2]
    assert panel.message.value == ""


def test_cancel_terminates_and_a_failed_cancel_is_shown() -> None:
    controller = ScriptedController(terminate_error=InvalidRequest("nope", url="http://c", method="TerminateJob"))
    panel = panel_for(controller)
    panel.refresh()
    panel.cancel_button.click()
    assert "cancel failed" in panel.message.value and not panel.cancel_button.disabled
    controller.terminate_error = None
    panel.cancel_button.click()
    assert controller.terminated and panel.state == "killed" and panel.cancel_button.disabled
    assert panel.progress.bar_style == "warning"


@pytest.mark.parametrize(("seconds", "text"), [(4.24, "4.2 s"), (65, "1m 05s"), (7380, "2h 03m")])
def test_durations(seconds: float, text: str) -> None:
    assert view.duration(seconds) == text


# -- pollers end -----------------------------------------------------------------------------------
def _pollers() -> int:
    return sum(thread.name.startswith("fray-status") for thread in threading.enumerate())


def _wait_for_pollers(count: int, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while _pollers() != count:
        assert time.monotonic() < deadline, f"{_pollers()} status pollers alive, expected {count}"
        time.sleep(0.01)


@dataclass
class ReplaceableController(ScriptedController):
    """Also scripts the job's submission time (a replaced job gets a new one) and its deletion."""

    submitted_ms: int = 1_000
    missing: bool = False

    def status(self, job_id: str) -> J.JobStatus:
        if self.missing:
            from fray_jupyter.client.errors import JobNotFound
            raise JobNotFound(f"Job {job_id} not found", url="http://c", method="GetJobStatus")
        status = super().status(job_id)
        status.submitted_at.epoch_ms = self.submitted_ms
        return status


def test_pollers_stop_when_the_job_is_replaced_gone_closed_or_the_controller_is_gone_for_good() -> None:
    before = _pollers()
    replaced, gone, closed, unreachable, superseded = (ReplaceableController() for _ in range(5))
    fast = {"poll_first": 0.01, "poll_max": 0.02}
    panels = [JobStatusPanel(c, f"/alice/{name}", **fast)  # type: ignore[arg-type]
              for c, name in ((replaced, "r"), (gone, "g"), (closed, "c"))]
    panels.append(JobStatusPanel(unreachable, "/alice/u", max_failures=5, **fast))  # type: ignore[arg-type]
    first = JobStatusPanel(superseded, "/alice/s", **fast)  # type: ignore[arg-type]
    _wait_for_pollers(before + 5)  # every poller runs before any cause to stop is given

    replaced.submitted_ms = 2_000  # the same name was submitted again
    unreachable.fail_with = ControllerUnreachable("refused", url="http://127.0.0.1:1")
    gone.missing = True
    panels[2].close()
    second = JobStatusPanel(superseded, "/alice/s", **fast)  # type: ignore[arg-type]  # the cell ran again
    _wait_for_pollers(before + 1)  # only the newest panel of /alice/s still polls
    assert "replaced by a newer submission" in panels[0].message.value
    assert "no longer exists" in panels[1].message.value
    assert "stopped polling after 5 failed attempts" in panels[3].message.value
    assert "a newer panel follows this job" in first.message.value
    second.close()
    _wait_for_pollers(before)


# -- the tree, why it failed, the snapshot ---------------------------------------------------------
def _child(job_id: str, state: int, **fields: object) -> J.JobStatus:
    status = J.JobStatus(job_id=job_id, state=state, task_count=1, **fields)  # type: ignore[arg-type]
    status.submitted_at.epoch_ms = 2_000
    return status


def test_a_coordinators_panel_shows_its_tree_and_its_logs_follow_the_tree_or_one_child() -> None:
    step, sub = f"{JOB}/step", f"{JOB}/step/sub"
    controller = ScriptedController(task_states=[J.TASK_STATE_RUNNING], children=[
        _child(step, J.JOB_STATE_RUNNING, has_children=True, task_state_counts={"running": 1}),
        _child(f"{JOB}/eval", J.JOB_STATE_PENDING, pending_reason="Scheduler: waiting"),
        _child(sub, J.JOB_STATE_RUNNING)])
    panel = panel_for(controller)
    panel.refresh()
    tree = panel.tree_view
    assert tree.layout.display is None and controller.listed == [JOB, step]  # one page per parent shown
    assert tree.table.value.split('data-job-id="')[1].startswith(step)
    assert [label for label, _ in tree.choice.options] == ["the whole tree", "this job only", "step", "\u2003step/sub",
                                                            "eval"]
    assert controller.log_calls[-1] == (JOB, True)  # the whole tree by default
    tree.choice.value = (sub, True)
    assert controller.log_calls[-1] == (sub, True) and panel.logs.job_id == sub
    controller.state, controller.task_states = J.JOB_STATE_SUCCEEDED, [J.TASK_STATE_SUCCEEDED]
    panel.refresh()
    assert not panel.done  # the steps still run: the panel keeps following them
    for child in controller.children:
        child.state = J.JOB_STATE_KILLED
    panel.refresh()
    assert panel.done and tree.table.value.count("fray-state-killed") == 3
    assert "\n    sub  KILLED" in panel._repr_mimebundle_()["text/plain"]  # type: ignore[index]
    assert panel.tree_view.choice.value == (sub, True)  # redrawn, the choice kept


def test_a_failed_panel_shows_the_root_cause_the_retries_the_status_text_and_the_failed_child() -> None:
    controller = ScriptedController(
        state=J.JOB_STATE_FAILED, task_states=[J.TASK_STATE_FAILED],
        root_cause=["Traceback (most recent call last):", '  File "train.py", line 3', f"ValueError: bad {XSS}"],
        texts={f"{JOB}/0": StatusText("step 10/100, [W&B](https://wandb.ai/run/1)", "step 10", 0)},
        children=[_child(f"{JOB}/step", J.JOB_STATE_FAILED, error="Exit code 1")])

    class Retried(ScriptedController):
        def tasks(self, job_id: str) -> tuple[J.TaskStatus, ...]:
            tasks = super().tasks(job_id)
            for attempt in (0, 1):
                tasks[0].attempts.add(attempt_id=attempt, state=J.TASK_STATE_FAILED, error=f"attempt {attempt}")
            return tasks

    controller.__class__ = Retried
    panel = panel_for(controller)
    panel.refresh()
    shown = panel.diagnostics.value
    assert f'<b class="fray-root-line">ValueError: bad {XSS.replace("<", "&lt;").replace(">", "&gt;")}</b>' in shown
    assert "likely root cause of task 0" in shown and XSS not in shown
    assert "task 0: 2 failures (max_retries_failure 0)" in shown and shown.count('class="fray-attempt"') == 2
    assert '<a href="https://wandb.ai/run/1" target="_blank"' in shown
    assert "failed below this job" in panel.failure.value and "child step FAILED: Exit code 1" in panel.failure.value


def test_the_snapshot_holds_the_last_state_tree_tasks_and_log_tail_inertly() -> None:
    controller = ScriptedController(state=J.JOB_STATE_SUCCEEDED, task_states=[J.TASK_STATE_SUCCEEDED],
                                    children=[_child(f"{JOB}/step", J.JOB_STATE_SUCCEEDED)])
    controller.add_log(0, f"done {XSS}")
    panel = panel_for(controller)
    panel.refresh()
    html = panel.snapshot_html()
    assert 'class="fray-snapshot"' in html and 'data-state="succeeded"' in html and 'data-final="true"' in html
    assert f"final state of {JOB} at " in html and 'data-job-id="/alice/train/step"' in html
    assert 'class="fray-task"' in html and "done &lt;img" in html and XSS not in html
    assert ".jp-OutputArea:has(.fray-status-panel) .jp-OutputArea-child:has(.fray-snapshot){display:none}" in html


def test_a_running_job_lists_its_endpoints_escaped_and_an_ended_one_none() -> None:
    controller = ScriptedController()
    controller.registered = [Controller.Endpoint(name=f"{JOB}/ctr-1", address="http://127.0.0.1:2", task_id=f"{JOB}/1"),
                             Controller.Endpoint(name=f"{JOB}/{XSS}-0", address="http://127.0.0.1:1", task_id=f"{JOB}/0"),
                             Controller.Endpoint(name="/alice/other/ctr-0", address="http://127.0.0.1:3")]
    panel = JobStatusPanel(controller, JOB, start=False)  # type: ignore[arg-type]
    panel.refresh()
    shown = panel.endpoints.value
    assert "endpoints (2)" in shown and XSS not in shown and "&lt;img src=x onerror=alert(1)&gt;-0" in shown
    assert shown.index("ctr-1") > shown.index("onerror")  # by name
    assert "/alice/other" not in shown and "http://127.0.0.1:2" in shown and f"{JOB}/1" in shown
    controller.state, controller.task_states = J.JOB_STATE_SUCCEEDED, [J.TASK_STATE_SUCCEEDED] * 2
    panel.refresh()
    assert panel.endpoints.value == ""

