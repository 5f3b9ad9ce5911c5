"""finelog's ``LogService.FetchLogs`` over the controller's own log store.

A real Iris controller keeps task output in finelog and proxies its log service at
``/proxy/system.log-server/finelog.logging.LogService/FetchLogs``; Marin's ``iris`` CLI and
``IrisClient`` read every log from there. The embedded controller answers the same request
from its ``logs`` table, with the semantics those clients rely on:

* Keys: a task attempt's lines are stored under ``<job id>/<task index>:<attempt>``, the job id
  being ``/<user>/<job>`` or a child's ``/<user>/<job>/<child>…`` (``LogEntry.key``, filled
  except for an EXACT read, as finelog does; ``attempt_id`` is the suffix). ``source`` selects
  keys by ``match_scope``: EXACT (the key itself: one attempt), PREFIX (keys starting with it,
  literally: ``/<user>/<job>/`` is the job's tasks and every job below it, as ``iris job logs``
  reads a job; ``/<user>/<job>/<index>:`` every attempt of a task), REGEX and UNSPECIFIED (a
  regular expression matched at the start of the key). No other keys exist here.
* ``seq`` is the store's row id (one counter for all keys, increasing in capture order).
  ``cursor`` and ``until_cursor`` are exclusive bounds on it (0: unbounded); the response's
  ``cursor`` is the highest ``seq`` returned, or the request's ``cursor`` when nothing is
  returned, so passing it back reads only newer lines.
* ``max_lines`` caps the answer (0: ``DEFAULT_MAX_LINES``, as finelog; at most
  ``MAX_LINES``); ``tail`` returns the newest matching lines instead of the oldest. Entries are
  always in ``seq`` order.
* Filters: ``since_ms`` (stamped after), ``substring`` (literal), ``regex`` (searched in the
  line), ``min_level`` (levels as Iris classifies captured lines, ``iris.loglines``; UNKNOWN
  passes every filter; a name that is not a level filters nothing, as finelog), ``cluster`` (rows here have no origin cluster, so a
  non-empty value matches nothing).
"""

from __future__ import annotations

import re
from typing import Final, cast

from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.store.logstore import LogFilter, LogRow
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.loglines import log_level, min_level_value
from fray_jupyter.iris.proto import finelog_logging_pb2
from fray_jupyter.iris.states import log_key, task_id_for

F = finelog_logging_pb2
DEFAULT_MAX_LINES: Final[int] = 1000
MAX_LINES: Final[int] = 100_000
_EXACT_KEY: Final[re.Pattern[str]] = re.compile(r"(/[^/]+(?:/[^/]+)+)/(0|[1-9][0-9]*):(0|[1-9][0-9]*)")


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except (re.error, RecursionError) as error:
        raise RpcError(Code.INVALID_ARGUMENT, f"bad {what} regular expression {pattern!r}: {error}") from None


def log_filter(request: F.FetchLogsRequest) -> LogFilter | None:
    """The store's ``LogFilter`` for ``request`` (see the module rules); None when no line can
    match (an EXACT source that is no key, or a ``cluster``); INVALID_ARGUMENT for a bad regex."""
    if request.cluster:
        return None
    source, scope = request.source, request.match_scope
    attempt_key, key_prefix, key_pattern = None, "", None
    if scope == F.MATCH_SCOPE_EXACT:
        match = _EXACT_KEY.fullmatch(source)
        if match is None:
            return None
        attempt_key = (match[1], int(match[2]), int(match[3]))
    elif scope == F.MATCH_SCOPE_PREFIX:
        key_prefix = source
    else:
        key_pattern = _compile(source, "key")
    limit = request.max_lines if request.max_lines > 0 else DEFAULT_MAX_LINES
    return LogFilter(
        min(limit, MAX_LINES), request.tail, attempt_key, key_prefix, key_pattern,
        after_id=max(request.cursor, 0), before_id=max(request.until_cursor, 0), since_ms=request.since_ms,
        substring=request.substring, line_pattern=_compile(request.regex, "line") if request.regex else None,
        min_level=min_level_value(request.min_level),
    )


class LogService:
    """Answers ``FetchLogsRequest`` from ``store`` (see the module rules)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def fetch_logs(self, request: F.FetchLogsRequest) -> F.FetchLogsResponse:
        """One page of matching lines, in seq order, and the cursor after them."""
        wanted = log_filter(request)
        if wanted is None:
            return F.FetchLogsResponse(cursor=max(request.cursor, 0))
        rows = self.store.fetch_logs(wanted)
        entries = [self._entry(row, keyed=request.match_scope != F.MATCH_SCOPE_EXACT) for row in rows]
        cursor = max((row.id for row in rows), default=max(request.cursor, 0))
        return F.FetchLogsResponse(entries=entries, cursor=cursor)

    @staticmethod
    def _entry(row: LogRow, *, keyed: bool) -> F.LogEntry:
        entry = F.LogEntry(
            timestamp=F.Timestamp(epoch_ms=row.ts_ms), source=row.source, data=row.data, attempt_id=row.attempt,
            level=cast(F.LogLevel, log_level(row.source, row.data)), seq=row.id,  # the two enums share numbers
        )
        if keyed:
            entry.key = log_key(task_id_for(row.job_id, row.idx), row.attempt)
        return entry
