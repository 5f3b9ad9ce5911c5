"""Pure renderings of a running or finished job: its state badge, task grid, log tail, failure
summary, as HTML (the status panel) and as text (terminals, ``--wait``, the error a failed job
raises); the jobs table ``%fray jobs`` shows is ``views.jobs``.

Rules: every piece of text that comes from the job or the controller (names, ids, errors,
reasons, worker ids, log lines) is HTML-escaped; state names and task labels are Iris's
(``iris.states``); log lines come formatted (``client.logs.log_line``); times are the
controller's, in epoch milliseconds.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from html import escape
from typing import Final

from fray_jupyter.iris.attempts import RetryLimits, attempt_counts
from fray_jupyter.iris.outputs import OutputFile
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import (
    TERMINAL_TASK_STATES,
    is_job_finished,
    job_state_name,
    task_label,
    task_state_name,
)
from fray_jupyter.iris.usage import TaskUsage
from fray_jupyter.views.ansi import line_html, palette_css
from fray_jupyter.views.format import counted, size
from fray_jupyter.views.statustext import status_html
from fray_jupyter.views.usage import USAGE_HEADINGS, silence_words, usage_cells
from fray_jupyter.vocabulary import (
    OTHER_TONE,
    STATES,
    TONE_COLORS,
    duration_ms,
    fraction,
    job_retries,
    state_color,
    state_word,
    task_retries,
)

J = job_pb2

BADGE_COLORS: Final[dict[str, str]] = {name: state_color(name) for name in STATES}
"""Badge colour by state name (the display vocabulary's, ``vocabulary``); others are neutral."""
OTHER_COLOR: Final[str] = TONE_COLORS[OTHER_TONE]
SUMMARY_LOG_LINES: Final[int] = 12
MAX_CELL_CHARS: Final[int] = 160
MAX_REASON_CHARS: Final[int] = 4000
MAX_ATTEMPT_TASKS: Final[int] = 8

STYLE: Final[str] = """<style>
/* fray-jupyter job status: put on a page once (each new sheet restyles the page) */
.fray-status{font-size:var(--jp-ui-font-size1,13px);color:var(--jp-ui-font-color1,#222);line-height:1.4}
.fray-status code,.fray-status pre{font-family:var(--jp-code-font-family,monospace);font-size:12px}
.fray-badge{display:inline-block;padding:0 8px;border-radius:9px;color:#fff;font-size:11px;font-weight:600;
 letter-spacing:.03em;vertical-align:middle}
.fray-status table{border-collapse:collapse}
.fray-status td,.fray-status th{padding:1px 12px 1px 0;text-align:left;vertical-align:top}
.fray-status th{color:var(--jp-ui-font-color2,#666);font-weight:normal}
.fray-dim{opacity:.7}
.fray-log-box{display:flex !important;flex-direction:column-reverse;max-height:18em;overflow:auto;
 background:var(--jp-layout-color2,#f5f5f5);border-radius:4px}
.fray-log{margin:0;padding:4px 6px;white-space:pre-wrap;word-break:break-all}
.fray-log a,.fray-failure a{color:var(--jp-content-link-color,#1976d2);text-decoration:underline}
.fray-log-task{opacity:.65}.fray-log-task.fray-log-warning{color:#b27d12;opacity:1}
.fray-log-task.fray-log-error{color:#b22b31;opacity:1}
.fray-log-mark{background:var(--jp-warn-color3,#fff3e0);display:inline-block;width:100%}
.fray-log-tools{align-items:center;gap:4px;flex-wrap:wrap}
.fray-failure{border-left:4px solid var(--jp-error-color1,#c62828);padding:4px 8px;
 background:var(--jp-error-color3,#fdecea)}
.fray-failure pre{margin:4px 0 0;white-space:pre-wrap}
.fray-reason-part{white-space:pre-wrap;margin-left:1em}
.fray-status-body{white-space:pre-wrap;margin-left:1em}
.fray-attempts td,.fray-attempts th{padding:0 10px 0 0}
.fray-bar{display:inline-flex;width:80px;height:8px;border-radius:4px;overflow:hidden;vertical-align:middle;
 background:var(--jp-layout-color3,#ddd)}
.fray-bar>span{display:block;height:100%}
.fray-tree td{white-space:nowrap}.fray-tree td:last-child{white-space:normal}
.fray-snapshot{border:1px dashed var(--jp-border-color1,#bbb);border-radius:4px;padding:4px 8px}
.jp-RenderedHTMLCommon .fray-status table,.jp-RenderedHTMLCommon table.fray-status{margin:0;border:none;
 font-size:inherit;color:inherit}
.jp-RenderedHTMLCommon .fray-status td,.jp-RenderedHTMLCommon .fray-status th{text-align:left;border:none;
 padding:1px 12px 1px 0;max-width:none;line-height:inherit}
.jp-RenderedHTMLCommon .fray-status tbody tr:nth-child(odd),.jp-RenderedHTMLCommon .fray-status tbody tr:nth-child(even),
.jp-RenderedHTMLCommon .fray-status tbody tr:hover
 {background:transparent}
""" + palette_css() + "\n</style>"


# -- small formats ---------------------------------------------------------------------------------
def duration(seconds: float) -> str:
    """``350 ms``, ``4.2 s`` (tenths cut, not rounded), ``1m 05s``, ``2h 03m``: the display
    vocabulary's duration (``vocabulary.duration_ms``) of ``seconds``."""
    return duration_ms(seconds * 1000)


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds."""
    return int(time.time() * 1000)


def is_terminal(status: J.JobStatus) -> bool:
    """Whether the job's state can no longer change."""
    return is_job_finished(status.state)


def elapsed(status: J.JobStatus, now: int | None = None) -> str:
    """How long the job has waited or run: ``queued 3.0 s`` (since submission), ``running 1m 02s``
    (since it started), ``took 5.2 s`` (submission to end)."""
    now = now_ms() if now is None else now
    submitted = status.submitted_at.epoch_ms if status.HasField("submitted_at") else now
    started = status.started_at.epoch_ms if status.HasField("started_at") and status.started_at.epoch_ms else None
    if is_terminal(status):  # end to end: what the user waited
        end = status.finished_at.epoch_ms if status.HasField("finished_at") else now
        return f"took {duration(max(0, end - submitted) / 1000)}"
    if started is None:
        return f"queued {duration(max(0, now - submitted) / 1000)}"
    return f"running {duration(max(0, now - started) / 1000)}"


def cut(text: str, limit: int = MAX_CELL_CHARS) -> str:
    """``text`` on one line (whitespace runs collapsed), at most ``limit`` characters (``…`` marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# -- HTML ------------------------------------------------------------------------------------------
def badge_html(name: str) -> str:
    """A coloured pill with the state's word (``views.words``, upper-cased) for the state ``name``."""
    color = BADGE_COLORS.get(name, OTHER_COLOR)
    return (f'<span class="fray-badge fray-state-{escape(name)}" style="background:{color}">'
            f"{escape(state_word(name).upper())}</span>")


def header_html(status: J.JobStatus, now: int | None = None) -> str:
    """Job id and name, state badge, elapsed time, and the controller's status message."""
    name = f' <span class="fray-dim">{escape(status.name)}</span>' if status.name and status.name != status.job_id else ""
    message = (f'<div class="fray-dim fray-status-message">{escape(cut(status.status_message, 300))}</div>'
               if status.status_message else "")
    return (f'<div class="fray-status"><code class="fray-job-id">{escape(status.job_id)}</code>{name} '
            f"{badge_html(job_state_name(status.state))} "
            f'<span class="fray-elapsed fray-dim">{escape(elapsed(status, now))}</span>{message}</div>')


def pending_html(status: J.JobStatus, tasks: Sequence[J.TaskStatus] = ()) -> str:
    """Why the job is not running yet (PENDING) or never will (UNSCHEDULABLE), in the controller's
    words, whole: Iris's ``Scheduler: …`` and ``Autoscaler: …`` parts each on a line of its own; a
    task's own reason (e.g. a retry) when the job gives none; empty otherwise."""
    if status.state not in (J.JOB_STATE_PENDING, J.JOB_STATE_UNSCHEDULABLE):
        return ""
    reason = status.pending_reason or status.error or next((t.pending_reason for t in tasks if t.pending_reason), "")
    parts = [part.strip() for part in reason[:MAX_REASON_CHARS].split("\n\n") if part.strip()]
    if not parts:
        return ""
    label = "Pending" if status.state == J.JOB_STATE_PENDING else "Unschedulable"
    lines = "".join(f'<div class="fray-reason-part">{escape(part)}</div>' for part in parts)
    return f'<div class="fray-status fray-reason"><b>{label}:</b>{lines}</div>'


def root_cause_html(task_id: str, lines: Sequence[str]) -> str:
    """A failed task's likely root cause: the log lines the controller picked (Iris's highlights:
    tracebacks and their frames, fatal banners), the last — the exception line — in bold; "" when
    there are none."""
    if not lines:
        return ""
    *context, last = lines
    body = "".join(line_html(line) + "\n" for line in context)  # log lines: shown as a terminal shows them
    return (f'<div class="fray-status fray-failure fray-root-cause"><b>likely root cause of task '
            f'{escape(task_label(task_id))}</b><pre>{body}<b class="fray-root-line">{line_html(last)}</b></pre></div>')


def retries_text(task: J.TaskStatus, limits: RetryLimits) -> str:
    """What a task's attempts charged against the job's limits: ``2 failures (max_retries_failure 1),
    0 preemptions (max_retries_preemption 100)``."""
    counts = attempt_counts(task.attempts)
    return task_retries(counts.failures, counts.preemptions, limits.max_retries_failure, limits.max_retries_preemption)


def attempts_html(task: J.TaskStatus, limits: RetryLimits) -> str:
    """A task's attempts, oldest first (each retry is one): id, state, exit code, how long it ran,
    its error; headed by what they charged against the job's limits (``retries_text``)."""
    rows = []
    for attempt in task.attempts:
        began, ended = attempt.started_at.epoch_ms, attempt.finished_at.epoch_ms
        ran = duration(max(0, ended - began) / 1000) if began and ended else ""
        ended_state = attempt.state in TERMINAL_TASK_STATES
        rows.append(
            f'<tr class="fray-attempt"><td>{attempt.attempt_id}</td><td>{badge_html(task_state_name(attempt.state))}</td>'
            f"<td>{attempt.exit_code if ended_state else ''}</td><td>{escape(ran)}</td>"
            f'<td class="fray-dim">{escape(cut(attempt.error, 300))}</td></tr>')
    table = ('<table class="fray-attempts"><tr><th>attempt</th><th>state</th><th>exit</th><th>ran</th><th></th></tr>'
             f'{"".join(rows)}</table>') if rows else '<div class="fray-dim">no attempt yet</div>'
    return (f'<div class="fray-status"><div class="fray-retries">task {escape(task_label(task.task_id))}: '
            f"{escape(retries_text(task, limits))}</div>{table}</div>")


def job_retries_text(status: J.JobStatus, limits: RetryLimits) -> str:
    """The job's failed attempts against ``max_task_failures`` and its preemptions: ``3 failed attempts
    (max_task_failures 2), 1 preemption``."""
    return job_retries(status.failure_count, status.preemption_count, limits.max_task_failures)


def status_text_html(task_id: str, detail_md: str, reported: str = "") -> str:
    """The status text a task reported (markdown: Levanter's step, loss, MFU, ETA, W&B link), inert,
    with its links working (``views.statustext``), and its age (``reported``: "reported 4 min ago");
    "" when it reported none."""
    if not detail_md.strip():
        return ""
    age = f' <span class="fray-dim fray-status-age">· {escape(reported)}</span>' if reported else ""
    return (f'<div class="fray-status fray-status-text"><span class="fray-dim">task '
            f'{escape(task_label(task_id))}</span>{age}<div class="fray-status-body">{status_html(detail_md)}</div></div>')


def diagnosis_html(status: J.JobStatus, tasks: Sequence[J.TaskStatus], limits: RetryLimits,
                   root_causes: Mapping[str, Sequence[str]], status_texts: Mapping[str, str],
                   reported: Mapping[str, str] | None = None) -> str:
    """What explains a job beyond its states, in this order: its failed attempts and preemptions
    against its limits (once there are any), each failed task's likely root cause, the attempts of
    each task that was retried (the first ``MAX_ATTEMPT_TASKS``), and each task's status text with
    its age (``reported``: task id → "reported 4 min ago")."""
    parts = []
    if status.failure_count or status.preemption_count:
        parts.append(f'<div class="fray-status fray-retries">{escape(job_retries_text(status, limits))}</div>')
    parts += [root_cause_html(task_id, lines) for task_id, lines in root_causes.items()]
    retried = [task for task in tasks if len(task.attempts) > 1][:MAX_ATTEMPT_TASKS]
    parts += [attempts_html(task, limits) for task in retried]
    ages = reported or {}
    parts += [status_text_html(task.task_id, status_texts.get(task.task_id, ""), ages.get(task.task_id, ""))
              for task in tasks]
    return "".join(parts)


def tasks_html(tasks: Sequence[J.TaskStatus], usage: Mapping[str, TaskUsage] | None = None,
               silent: Mapping[str, int] | None = None) -> str:
    """One row per task: index, state, attempt, exit code (once finished), worker, with ``usage``
    Iris's MEM / PEAK MEM / CPU columns and the memory bar (``views.usage``), then its error or
    reason, else "no output for 12 min" for a task ``silent`` names (task id → quiet ms)."""
    if not tasks:
        return '<div class="fray-status fray-dim">no tasks yet</div>'
    rows = []
    quiet = silent or {}
    for task in tasks:
        name = task_state_name(task.state)
        finished = task.HasField("finished_at") and task.finished_at.epoch_ms > 0
        note = cut(task.error or task.pending_reason)
        if not note and task.task_id in quiet:
            note = silence_words(quiet[task.task_id])
        cells = "".join(usage_cells(usage.get(task.task_id))) if usage is not None else ""
        rows.append(
            f'<tr class="fray-task"><td>{escape(task_label(task.task_id))}</td><td>{badge_html(name)}</td>'
            f"<td>{task.current_attempt_id}</td><td>{task.exit_code if finished else ''}</td>"
            f"<td>{escape(task.worker_id)}</td>{cells}<td class=\"fray-dim fray-task-note\">{escape(note)}</td></tr>")
    headings = "".join(f"<th>{escape(heading)}</th>" for heading in USAGE_HEADINGS) if usage is not None else ""
    return ('<table class="fray-status fray-tasks"><tr><th>task</th><th>state</th><th>attempt</th>'
            f'<th>exit</th><th>worker</th>{headings}<th></th></tr>{"".join(rows)}</table>')


def outputs_html(outputs: Sequence[Sequence[OutputFile]], error: str = "") -> str:
    """The files each task wrote under ``$IRIS_OUTPUT_DIR`` (``outputs``: each task's archive
    entries, in task order): path and size (read them with the job handle's ``outputs()``); ""
    when no task wrote any and nothing went wrong."""
    rows = [f'<div class="fray-status fray-dim">{escape(error)}</div>'] if error else []
    for index, entries in enumerate(outputs):
        files = [f for f in entries if f.kind == "file"]
        if files:
            label = f"task {index}: " if len(outputs) > 1 else ""
            listed = ", ".join(f"{escape(f.name)} ({escape(size(f.size))})" for f in files)
            rows.append(f'<div class="fray-status fray-outputs">{escape(label)}outputs: {listed}</div>')
    return "".join(rows)


def note_html(text: str, *, error: bool = False) -> str:
    """A one-line note under a panel's controls: grey, or red for an ``error``; ``text`` escaped."""
    color = "var(--jp-error-color1,#c62828)" if error else "var(--jp-ui-font-color2,#666)"
    return f'<div class="fray-status" style="color:{color}">{escape(text)}</div>'


def failure_html(status: J.JobStatus, tasks: Sequence[J.TaskStatus], lines: Sequence[str]) -> str:
    """The failure summary (see ``failure_summary``) for a job that ended without succeeding."""
    if not is_terminal(status) or status.state == J.JOB_STATE_SUCCEEDED:
        return ""
    head, *rest = failure_summary(status, tasks, lines)
    return (f'<div class="fray-status fray-failure"><b>{escape(head)}</b>'
            f'<pre>{chr(10).join(map(line_html, rest))}</pre></div>')


# -- text ------------------------------------------------------------------------------------------
def failure_summary(status: J.JobStatus, tasks: Sequence[J.TaskStatus], lines: Sequence[str],
                    now: int | None = None, below: Sequence[str] = ()) -> list[str]:
    """Lines saying how a job ended: the state, exit code and error; each task that did not
    succeed; the lines ``below`` (which jobs below it failed and why: ``views.tree.failed_lines``);
    the last ``SUMMARY_LOG_LINES`` log lines."""
    state = state_word(job_state_name(status.state)).upper()
    exit_code = f", exit code {status.exit_code}" if status.exit_code else ""
    error = f": {cut(status.error, 300)}" if status.error else ""
    summary = [f"job {status.job_id} {state} ({elapsed(status, now)}{exit_code}){error}"]
    for task in tasks:
        if task.state != J.TASK_STATE_SUCCEEDED:
            code = f", exit code {task.exit_code}" if task.HasField("finished_at") and task.exit_code else ""
            why = f": {cut(task.error)}" if task.error else ""
            summary.append(f"task {task_label(task.task_id)}: {state_word(task_state_name(task.state)).upper()}{code}{why}")
    summary += below
    tail = list(lines)[-SUMMARY_LOG_LINES:]
    if tail:
        summary.append(f"last {counted(len(tail), 'log line')}:")
        summary += [f"  {line}" for line in tail]
    return summary


def status_text(status: J.JobStatus, tasks: Sequence[J.TaskStatus], now: int | None = None) -> str:
    """A few lines for terminals: id, state, progress, elapsed, then one line per task."""
    head = (f"{status.job_id}  {state_word(job_state_name(status.state)).upper()}  "
            f"{fraction(status.completed_count, status.task_count, 'task')}  {elapsed(status, now)}")
    lines = [head]
    reason = status.pending_reason if status.state == J.JOB_STATE_PENDING else status.error
    if reason:
        lines.append(f"  {cut(reason, 300)}")
    for task in tasks:
        code = f" exit {task.exit_code}" if task.HasField("finished_at") and task.finished_at.epoch_ms else ""
        lines.append(f"  task {task_label(task.task_id)}: {task_state_name(task.state)} "
                     f"attempt {task.current_attempt_id}{code}")
    return "\n".join(lines)
