"""Task log lines in one shape, whichever controller serves them.

Rule: the client asks the controller's ``GetTaskLogs`` first (the embedded controller serves it).
A current real Iris controller has no such RPC (``unimplemented``, HTTP 404); it keeps logs in its
finelog ``LogService``, which it proxies at ``iris.wire.FETCH_LOGS_PATH`` and which speaks Connect JSON. Both
page by the same cursor: the ``seq`` of the last row already seen, exclusive, and a response's
cursor is the highest ``seq`` it saw (finelog answers 0 when it saw nothing, so the caller's cursor
is kept then). Rows come back as ``iris.logging.LogEntry`` with ``key = "<task id>:<attempt>"`` and
``attempt_id`` filled, for the job's own tasks, or with ``include_children`` for those of every job
below it too (both read the same keys: finelog's ``<job id>/`` prefix covers a job's descendants;
``GetTaskLogs`` is asked to include them), in server order.
A row is shown as ``[<task>] <text>``, with ``[<task>:<attempt>]`` for a retry's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from google.protobuf import json_format

from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.proto.logging_pb2 import LogEntry
from fray_jupyter.iris.states import split_key, task_job, task_label


class LogPage(NamedTuple):
    """Log rows in order, and the cursor to pass back for the rows after them."""

    entries: tuple[LogEntry, ...]
    cursor: int


@dataclass(frozen=True)
class LogQuery:
    """Which rows: after ``cursor``; before ``before`` (0: no bound; only the log service takes it);
    the newest (``tail``) rather than the oldest; at most ``max_lines`` (0: the server's cap); only
    those containing ``substring`` (empty: all) and of level ``min_level`` or above (a name in
    ``iris.loglines.LEVELS``; empty: all); of the job's own tasks, or (``include_children``) of every
    job below it too."""

    cursor: int = 0
    tail: bool = False
    max_lines: int = 0
    substring: str = ""
    min_level: str = ""
    before: int = 0
    include_children: bool = False


def log_prefix(entry: LogEntry, job_id: str = "") -> str:
    """``[3]`` for a first attempt's row, ``[3:1]`` for a retry's; a row of a job below ``job_id``
    is named by its path from there: ``[step/0]``."""
    task_id, attempt = split_key(entry.key)
    attempt = attempt or entry.attempt_id
    below = job_id and task_job(task_id) != job_id and task_id.startswith(job_id + "/")
    label = task_id[len(job_id) + 1:] if below else task_label(task_id)
    return f"[{label}:{attempt}]" if attempt else f"[{label}]"


def log_line(entry: LogEntry, job_id: str = "") -> str:
    """A log row as one line of text with its task prefix (``log_prefix``): ``[3] loss 0.12``."""
    return f"{log_prefix(entry, job_id)} {entry.data}"


def log_text(entries: Iterable[LogEntry], job_id: str = "") -> str:
    """Rows as a saved or downloaded log holds them: one ``log_line`` each, each ending in a newline."""
    return "".join(log_line(entry, job_id) + "\n" for entry in entries)


def task_logs_request(job_id: str, query: LogQuery) -> Controller.GetTaskLogsRequest:
    """The ``GetTaskLogs`` request for every attempt of every task of ``job_id``."""
    return Controller.GetTaskLogsRequest(id=job_id, cursor=query.cursor, tail=query.tail,
                                         max_total_lines=query.max_lines, substring=query.substring,
                                         min_level=query.min_level, attempt_id=-1,
                                         include_children=query.include_children)


def from_task_logs(response: Controller.GetTaskLogsResponse, query: LogQuery) -> LogPage:
    """Flatten the per-task batches, filling ``key`` where the server left it empty."""
    entries = []
    for batch in response.task_logs:
        for entry in batch.logs:
            if not entry.key:
                entry.key = f"{batch.task_id}:{entry.attempt_id}"
            entries.append(entry)
    return LogPage(tuple(entries), max(query.cursor, response.cursor))


def fetch_logs_body(job_id: str, query: LogQuery) -> dict[str, Any]:
    """The finelog ``FetchLogsRequest`` (JSON) for the keys under ``<job id>/``."""
    body: dict[str, Any] = {"source": f"{job_id}/", "matchScope": "MATCH_SCOPE_PREFIX", "cursor": str(query.cursor),
                            "tail": query.tail, "maxLines": query.max_lines, "substring": query.substring}
    if query.min_level:
        body["minLevel"] = query.min_level
    if query.before:
        body["untilCursor"] = str(query.before)
    return body


def from_fetch_logs(job_id: str, payload: dict[str, Any], query: LogQuery) -> LogPage:
    """``LogEntry`` rows of a finelog ``FetchLogsResponse`` (JSON) whose key names a task of
    ``job_id`` itself (with ``include_children``, any key under it); the two ``LogEntry`` messages
    share field names and numbers."""
    entries = []
    for row in payload.get("entries", []):
        entry = json_format.ParseDict(row, LogEntry(), ignore_unknown_fields=True)
        task_id, attempt = split_key(entry.key)
        if query.include_children or task_job(task_id) == job_id:
            entry.attempt_id = attempt
            entries.append(entry)
    return LogPage(tuple(entries), max(query.cursor, int(payload.get("cursor", 0))))
