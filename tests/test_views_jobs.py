"""``views.jobs``: the ``%fray jobs`` table as text and HTML — its columns, the mark of a job with
child jobs, the reason a job waits or failed, escaping, and the line naming which page of whose jobs
it is."""

from __future__ import annotations

from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.proto.time_pb2 import Timestamp
from fray_jupyter.views.jobs import JOB_COLUMNS, Listing, jobs_html, jobs_text, listing_text

XSS = "<img src=x onerror=alert(1)>"


def job(job_id: str, state: int, **fields: object) -> J.JobStatus:
    return J.JobStatus(job_id=job_id, state=state, submitted_at=Timestamp(epoch_ms=1_000), task_count=2,  # type: ignore[arg-type]
                       submitting_user="alice", **fields)


def test_the_table_marks_parents_and_says_why_a_job_waits_or_failed() -> None:
    jobs = [job("/alice/coord", J.JOB_STATE_RUNNING, has_children=True, completed_count=1),
            job("/alice/wait", J.JOB_STATE_PENDING, pending_reason="Scheduler: no slot\n\nAutoscaler: scaling up"),
            job("/alice/bad", J.JOB_STATE_FAILED, error=f"Exit code 1: {XSS}",
                pending_reason="stale: not shown once ended")]
    text = jobs_text(jobs, now=3_000)
    header, coord, wait, bad = text.splitlines()
    assert header.split() == list(JOB_COLUMNS)
    assert coord.startswith("/alice/coord ▸  running  1/2") and "queued 2.0 s" in coord
    assert wait.endswith("Scheduler: no slot Autoscaler: scaling up")  # the two parts on one line
    assert bad.endswith(f"Exit code 1: {XSS}") and "stale" not in bad
    html = jobs_html(jobs, now=3_000)
    assert html.count('class="fray-badge') == 3 and "<code>/alice/coord ▸</code>" in html
    assert XSS not in html and "Exit code 1: &lt;img src=x onerror=alert(1)&gt;" in html


def test_the_footer_names_the_page_whose_jobs_and_the_next_page() -> None:
    mine = Listing(user="alice", nested=False, offset=20, total=345, has_more=True)
    assert listing_text(mine, 20) == "jobs 21-40 of 345: alice's top-level jobs; --offset 40 shows the next page"
    everyone = Listing(user=None, nested=True, offset=0, total=2, has_more=False)
    assert listing_text(everyone, 2) == "jobs 1-2 of 2: every user's jobs, child jobs too"
    assert listing_text(Listing("bob", False, 0, 0, False), 0) == "no jobs: bob's top-level jobs"
    assert listing_text(Listing("bob", False, 50, 3, False), 0) == "no jobs at offset 50 of 3: bob's top-level jobs"
    rows = [job("/alice/a", J.JOB_STATE_SUCCEEDED), job("/alice/b", J.JOB_STATE_SUCCEEDED)]
    assert jobs_text(rows, everyone, now=3_000).splitlines()[-1] == listing_text(everyone, 2)
    assert jobs_html([], Listing("bob", False, 0, 0, False)).endswith(
        '<div class="fray-status fray-dim fray-listing">no jobs: bob&#x27;s top-level jobs</div>')
    assert jobs_text([]) == "no jobs"
