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
from collections.abc import Callable
from typing import Any, Final, cast

from fray_jupyter.controller.rpc import Code, RpcError
from fray_jupyter.controller.store import LEVEL_CONDITION, LogRow, Store, like_pattern
from fray_jupyter.iris.loglines import log_level, min_level_value
from fray_jupyter.iris.proto import finelog_logging_pb2
from fray_jupyter.iris.states import descendant_bounds, log_key, task_id_for

F = finelog_logging_pb2
DEFAULT_MAX_LINES: Final[int] = 1000
MAX_LINES: Final[int] = 100_000
_KEY_SQL: Final[str] = "(job_id || '/' || idx || ':' || attempt)"
_EXACT_KEY: Final[re.Pattern[str]] = re.compile(r"(/[^/]+(?:/[^/]+)+)/(0|[1-9][0-9]*):(0|[1-9][0-9]*)")


def _compile(pattern: str, what: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except (re.error, RecursionError) as error:
        raise RpcError(Code.INVALID_ARGUMENT, f"bad {what} regular expression {pattern!r}: {error}") from None


def _after(text: str) -> str:
    """The first string above every string that starts with ``text`` (non-empty)."""
    code = ord(text[-1]) + 1
    return text[:-1] + chr(0xE000 if 0xD800 <= code < 0xE000 else code)


def _prefix_conditions(source: str) -> tuple[list[str], list[Any]]:
    """Conditions on a log row's job id (and task) for the keys ``<job id>/<index>:<attempt>`` that
    start with ``source``: every row of a job whose ``<job id>/`` starts with it (an index range on
    job ids, descendants included), and the rows of the one job ``source`` reaches into (its tasks
    and attempts starting with what follows the job id's ``/``)."""
    if not source:
        return [], []
    params: list[Any]
    if source[-1] == "/":
        clauses, params = ["job_id = ?", "(job_id >= ? AND job_id < ?)"], [source[:-1], *descendant_bounds(source[:-1])]
    elif ord(source[-1]) < 0x10FFFF:
        clauses, params = ["(job_id >= ? AND job_id < ?)"], [source, _after(source)]
    else:
        clauses, params = ["substr(job_id, 1, ?) = ?"], [len(source), source]
    head, _, rest = source.rpartition("/")
    if head and rest:
        clauses.append("(job_id = ? AND (idx || ':' || attempt) LIKE ? ESCAPE '\\')")
        params += [head, like_pattern(rest, prefix=True)]
    return ["(" + " OR ".join(clauses) + ")"], params


class LogService:
    """Answers ``FetchLogsRequest`` from ``store`` (see the module rules)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def fetch_logs(self, request: F.FetchLogsRequest) -> F.FetchLogsResponse:
        """One page of matching lines, in seq order, and the cursor after them."""
        conditions, params = self._key_conditions(request)
        if conditions is None or request.cluster:
            return F.FetchLogsResponse(cursor=max(request.cursor, 0))
        if request.cursor > 0:
            conditions.append("id > ?")
            params.append(request.cursor)
        if request.until_cursor > 0:
            conditions.append("id < ?")
            params.append(request.until_cursor)
        if request.since_ms:
            conditions.append("ts_ms > ?")
            params.append(request.since_ms)
        if request.substring:
            conditions.append("instr(data, ?) > 0")
            params.append(request.substring)
        if request.regex:
            conditions.append(f"{self._matcher('fray_line_matches', _compile(request.regex, 'line'), anchored=False)}(data)")
        if (level := min_level_value(request.min_level)) is not None:
            conditions.append(LEVEL_CONDITION)
            params.append(level)
        limit = request.max_lines if request.max_lines > 0 else DEFAULT_MAX_LINES
        rows = self.store.query_logs(" AND ".join(conditions) or "1", params, min(limit, MAX_LINES),
                                     newest=request.tail)
        entries = [self._entry(row, keyed=request.match_scope != F.MATCH_SCOPE_EXACT) for row in rows]
        cursor = max((row.id for row in rows), default=max(request.cursor, 0))
        return F.FetchLogsResponse(entries=entries, cursor=cursor)

    def _key_conditions(self, request: F.FetchLogsRequest) -> tuple[list[str] | None, list[Any]]:
        """SQL conditions selecting the keys ``source`` names under ``match_scope``; None when
        no key can match."""
        source, scope = request.source, request.match_scope
        if scope == F.MATCH_SCOPE_EXACT:
            match = _EXACT_KEY.fullmatch(source)
            if match is None:
                return None, []
            return ["job_id = ?", "idx = ?", "attempt = ?"], [match[1], int(match[2]), int(match[3])]
        if scope == F.MATCH_SCOPE_PREFIX:
            return _prefix_conditions(source)
        return [f"{self._matcher('fray_key_matches', _compile(source, 'key'), anchored=True)}({_KEY_SQL})"], []

    def _matcher(self, name: str, pattern: re.Pattern[str], *, anchored: bool) -> str:
        """(Re)define the one-argument SQL function ``name`` as a match of ``pattern`` (at the
        start of the text when ``anchored``, else anywhere in it) and return ``name``. Safe
        because a request is answered in one go on the store's one thread."""
        find = pattern.match if anchored else pattern.search
        matches: Callable[[str], bool] = lambda text: find(text) is not None
        self.store.define_function(name, 1, matches)
        return name

    @staticmethod
    def _entry(row: LogRow, *, keyed: bool) -> F.LogEntry:
        entry = F.LogEntry(
            timestamp=F.Timestamp(epoch_ms=row.ts_ms), source=row.source, data=row.data, attempt_id=row.attempt,
            level=cast(F.LogLevel, log_level(row.source, row.data)), seq=row.id,  # the two enums share numbers
        )
        if keyed:
            entry.key = log_key(task_id_for(row.job_id, row.idx), row.attempt)
        return entry
