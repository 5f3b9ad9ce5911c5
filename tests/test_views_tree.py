"""``views.tree``: a coordinator's tree as the panel draws it — indented rows labelled by leaf name,
badges, task counts, a bar of tasks by state, the count of children not listed — its text form, and
the lines naming the failed child and its root cause. Everything the jobs wrote is escaped."""

from __future__ import annotations

import re

from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.tree import FailedChild, JobTree
from fray_jupyter.views.tree import failed_html, failed_lines, task_bar_html, tree_html, tree_lines

XSS = "<img src=x onerror=alert(1)>"


def job(job_id: str, state: int, **fields: object) -> J.JobStatus:
    status = J.JobStatus(job_id=job_id, state=state, **fields)  # type: ignore[arg-type]
    status.submitted_at.epoch_ms = 1_000
    return status


def coordinator() -> JobTree:
    train = job("/a/c/train", J.JOB_STATE_RUNNING, has_children=True, task_count=4, completed_count=1,
                task_state_counts={"succeeded": 1, "running": 3})
    evaluate = job("/a/c/eval", J.JOB_STATE_PENDING, task_count=1, task_state_counts={"pending": 1},
                   pending_reason=f"Scheduler: no slot {XSS}")
    sub = job("/a/c/train/sub", J.JOB_STATE_SUCCEEDED, task_count=1, completed_count=1,
              task_state_counts={"succeeded": 1})
    return JobTree(job("/a/c", J.JOB_STATE_RUNNING), {"/a/c": (train, evaluate), "/a/c/train": (sub,)},
                   {"/a/c": 5, "/a/c/train": 1})


def test_rows_are_indented_labelled_by_leaf_and_show_state_tasks_and_bar() -> None:
    html = tree_html(coordinator(), now=3_000)
    rows = re.findall(r'<tr class="fray-tree-row" data-job-id="([^"]+)" data-depth="(\d)">'
                      r'<td style="padding-left:([\d.]+)em"><code>([^<]+)</code>', html)
    assert rows == [("/a/c/train", "1", "0", "train"), ("/a/c/train/sub", "2", "1.2", "sub"),
                    ("/a/c/eval", "1", "0", "eval")]
    assert "<code>train</code> ▸" in html and html.count('class="fray-badge') == 3 and "<td>1/4</td>" in html
    assert "… 3 more child jobs of c not listed" in html
    assert XSS not in html and "no slot &lt;img" in html
    assert tree_html(JobTree(job("/a/lone", J.JOB_STATE_RUNNING))) == ""


def test_the_task_bar_gives_each_state_its_share_in_a_fixed_order() -> None:
    bar = task_bar_html({"running": 3, "succeeded": 1, "pending": 0}, 4)
    assert re.findall(r'fray-bar-(\w+)" style="width:([\d.]+)%', bar) == [("succeeded", "25.00"), ("running", "75.00")]
    assert 'title="1 succeeded, 3 running"' in bar
    assert 'title="no tasks yet"' in task_bar_html({}, 0)


def test_text_lines_and_the_failed_child_with_its_exception_line() -> None:
    lines = tree_lines(coordinator(), now=3_000)
    assert lines[0].startswith("  train ▸  RUNNING  1/4 tasks") and lines[1].startswith("    sub  SUCCEEDED")
    assert lines[-1] == "  … 3 more not listed"
    failed = [FailedChild(job("/a/c/train/sub", J.JOB_STATE_FAILED, error="Exit code 1: task failed"),
                          ("Traceback (most recent call last):", "\x1b[31mValueError: bad <data>\x1b[0m"))]
    assert failed_lines("/a/c", failed) == ["child train/sub FAILED: Exit code 1: task failed",
                                            "  likely root cause: ValueError: bad <data>"]
    assert "ValueError: bad &lt;data&gt;" in failed_html("/a/c", failed) and failed_html("/a/c", []) == ""
