"""The jobs table ``%fray jobs`` shows, as HTML and as aligned text, and the line that says which
page of which jobs it is.

Rules: one row per job as the controller listed it (newest first by default); a job with child jobs
is marked ``▸`` after its id; the reason column is why a waiting job waits (its pending reason) or
how an ended one failed (its error), on one line; a caller's ``notes`` (job id → a line, e.g. a
session's hosts ready and idle time) take the reason's place for their jobs. The footer names whose jobs they are (a user's,
or every user's), whether child jobs are among them, which rows of the controller's total these
are, and the flag that shows the next page. Everything the controller wrote is escaped.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Final

from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import job_state_name
from fray_jupyter.views.job import STYLE, badge_html, cut, elapsed, now_ms
from fray_jupyter.views.words import state_word

J = job_pb2

JOB_COLUMNS: Final[tuple[str, ...]] = ("job", "state", "tasks", "submitted", "elapsed", "user", "reason")
PARENT_MARK: Final[str] = "▸"
"""After the id of a job that has child jobs (the sidebar's mark for a row that opens)."""
REASON_CHARS: Final[int] = 80
WAITING: Final[frozenset[int]] = frozenset({J.JOB_STATE_PENDING, J.JOB_STATE_UNSCHEDULABLE})


@dataclass(frozen=True)
class Listing:
    """Which page of which jobs a table shows: ``user`` (None: every user's), whether child jobs
    are listed too (``nested``), the first row's offset, the controller's ``total`` and ``has_more``."""

    user: str | None
    nested: bool
    offset: int
    total: int
    has_more: bool


def reason(status: J.JobStatus) -> str:
    """Why a waiting job waits (its pending reason), else the job's error; one line."""
    text = status.pending_reason if status.state in WAITING and status.pending_reason else status.error
    return cut(text, REASON_CHARS)


def listing_text(listing: Listing, shown: int) -> str:
    """``jobs 1-20 of 345: alice's top-level jobs, newest first; --offset 20 shows the next page``."""
    whose = "every user's" if listing.user is None else f"{listing.user}'s"
    kind = "jobs, child jobs too" if listing.nested else "top-level jobs"
    if not shown:
        return f"no jobs at offset {listing.offset} of {listing.total}: {whose} {kind}" if listing.total else \
            f"no jobs: {whose} {kind}"
    first, last = listing.offset + 1, listing.offset + shown
    more = f"; --offset {last} shows the next page" if listing.has_more else ""
    return f"jobs {first}-{last} of {listing.total}: {whose} {kind}{more}"


def _job_row(status: J.JobStatus, now: int, notes: Mapping[str, str]) -> tuple[str, ...]:
    submitted = (time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status.submitted_at.epoch_ms / 1000))
                 if status.submitted_at.epoch_ms else "")
    job = f"{status.job_id} {PARENT_MARK}" if status.has_children else status.job_id
    return (job, state_word(job_state_name(status.state)), f"{status.completed_count}/{status.task_count}",
            submitted, elapsed(status, now), status.submitting_user, notes.get(status.job_id) or reason(status))


def jobs_text(jobs: Sequence[J.JobStatus], listing: Listing | None = None, now: int | None = None,
              notes: Mapping[str, str] | None = None) -> str:
    """The jobs as an aligned text table (in the order given), then the ``listing`` line."""
    now = now_ms() if now is None else now
    footer = [listing_text(listing, len(jobs))] if listing is not None else []
    if not jobs:
        return "\n".join(footer or ["no jobs"])
    rows = [JOB_COLUMNS, *(_job_row(job, now, notes or {}) for job in jobs)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(JOB_COLUMNS))]
    table = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(table + footer)


def jobs_html(jobs: Sequence[J.JobStatus], listing: Listing | None = None, now: int | None = None,
              notes: Mapping[str, str] | None = None) -> str:
    """The jobs as an HTML table with state badges, then the ``listing`` line."""
    now = now_ms() if now is None else now
    footer = (f'<div class="fray-status fray-dim fray-listing">{escape(listing_text(listing, len(jobs)))}</div>'
              if listing is not None else "")
    if not jobs:
        return STYLE + (footer or '<div class="fray-status fray-dim">no jobs</div>')
    head = "".join(f"<th>{name}</th>" for name in JOB_COLUMNS)
    body = []
    for job in jobs:
        cells = list(map(escape, _job_row(job, now, notes or {})))
        cells[0], cells[1] = f"<code>{cells[0]}</code>", badge_html(job_state_name(job.state))
        cells[-1] = f'<span class="fray-dim">{cells[-1]}</span>'
        body.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    return f'{STYLE}<table class="fray-status fray-jobs"><tr>{head}</tr>{"".join(body)}</table>{footer}'
