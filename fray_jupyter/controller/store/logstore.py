"""The ``logs`` table of the controller's store: captured output lines, written in batches and
read by typed filters (``LogFilter``), every SQL statement about them here.

Rules:

* A line's id is one counter for every job (AUTOINCREMENT: never reused, even after a job is
  deleted), so it is every reader's cursor.
* A level filter keeps the lines whose level (Iris's, ``iris.loglines.log_level`` of stream and
  text) passes ``min_level`` by ``iris.loglines.passes_min_level``; UNKNOWN always passes.
* Keys are ``<job id>/<task index>:<attempt>`` (finelog's). A key prefix selects every line of
  a job whose ``<job id>/`` starts with it (an index range on job ids, descendants included) and
  the lines of the one job the prefix reaches into (its tasks and attempts starting with what
  follows the job id's ``/``), all literally (``%`` and ``_`` are plain characters).
* Regular expressions (on keys, anchored at the start; on lines, anywhere) are Python's, run as
  SQL functions defined for the one read that uses them (the store has one thread).
"""

from __future__ import annotations

import re
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields
from typing import Any, Final, cast

from fray_jupyter.iris.loglines import Level, log_level, passes_min_level
from fray_jupyter.iris.states import descendant_bounds


@dataclass
class LogRow:
    """One captured output line (without its newline)."""

    id: int
    job_id: str
    idx: int
    attempt: int
    ts_ms: int
    source: str
    data: str


@dataclass(frozen=True)
class LogFilter:
    """Which lines a finelog read wants: by key (one ``attempt_key`` ``(job id, index, attempt)``,
    a ``key_prefix``, or a ``key_pattern`` matched at the key's start; none of them: every key),
    ids strictly between ``after_id`` and ``before_id`` (0: unbounded), stamped after ``since_ms``,
    containing ``substring``, matching ``line_pattern`` anywhere, passing ``min_level``; at most
    ``limit`` of them, the newest ones when ``newest``."""

    limit: int
    newest: bool = False
    attempt_key: tuple[str, int, int] | None = None
    key_prefix: str = ""
    key_pattern: re.Pattern[str] | None = None
    after_id: int = 0
    before_id: int = 0
    since_ms: int = 0
    substring: str = ""
    line_pattern: re.Pattern[str] | None = None
    min_level: int | None = None


def like_pattern(text: str, *, prefix: bool) -> str:
    """A ``LIKE … ESCAPE '\\'`` pattern matching ``text`` literally (``%``, ``_`` and ``\\`` are
    plain characters): at the start of a value (``prefix``), else anywhere in it."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"{escaped}%" if prefix else f"%{escaped}%"


_LEVEL_FUNCTION: Final[str] = "fray_passes_min_level"
_LEVEL_CONDITION: Final[str] = f"{_LEVEL_FUNCTION}(source, data, ?)"
_KEY_FUNCTION: Final[str] = "fray_key_matches"
_LINE_FUNCTION: Final[str] = "fray_line_matches"
_KEY_SQL: Final[str] = "(job_id || '/' || idx || ':' || attempt)"
_LOG_COLUMNS: Final[str] = ", ".join(field.name for field in fields(LogRow))


def _passes_min_level(source: str, data: str, minimum: int) -> bool:
    return passes_min_level(log_level(source, data), cast(Level, minimum))


def _after(text: str) -> str:
    """The first string above every string that starts with ``text`` (non-empty)."""
    code = ord(text[-1]) + 1
    return text[:-1] + chr(0xE000 if 0xD800 <= code < 0xE000 else code)


def _prefix_condition(source: str) -> tuple[str, list[Any]]:
    """The condition selecting the keys that start with ``source`` (non-empty; module rules)."""
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
    return "(" + " OR ".join(clauses) + ")", params


class LogTables(ABC):
    """The store's log methods (``Store`` has them; see the module rules)."""

    _db: sqlite3.Connection
    on_change: Callable[[str], None]

    @abstractmethod
    def transaction(self) -> AbstractContextManager[None]:
        """Group writes into one atomic commit (``Store.transaction``)."""

    def _define_log_functions(self) -> None:
        self._define(_LEVEL_FUNCTION, 3, _passes_min_level)

    def _define(self, name: str, arity: int, function: Callable[..., Any]) -> None:
        self._db.create_function(name, arity, function, deterministic=True)

    def append_logs(self, lines: Sequence[tuple[str, int, int, int, str, str]]) -> None:
        """Insert ``(job_id, idx, attempt, ts_ms, source, data)`` lines in one transaction."""
        with self.transaction():
            self._db.executemany(
                "INSERT INTO logs (job_id, idx, attempt, ts_ms, source, data) VALUES (?, ?, ?, ?, ?, ?)",
                lines,
            )
        for job_id in dict.fromkeys(line[0] for line in lines):
            self.on_change(job_id)

    def read_logs(
        self,
        job_ids: str | Sequence[str],
        *,
        idx: int | None,
        after_id: int,
        since_ms: int,
        substring: str,
        attempt: int | None,
        limit: int,
        newest: bool,
        min_level: int | None = None,
    ) -> list[LogRow]:
        """Up to ``limit`` lines of a job, or of several (or of one task of a single job) with id >
        ``after_id``, filtered (``min_level``: see the module rules), in id order; ``newest`` picks
        the last ``limit`` matches instead of the first."""
        jobs = [job_ids] if isinstance(job_ids, str) else list(job_ids)
        conditions, params = [f"job_id IN ({', '.join('?' * len(jobs))})", "id > ?"], [*jobs, after_id]
        for column, value in (("idx", idx), ("attempt", attempt)):
            if value is not None:
                conditions.append(f"{column} = ?")
                params.append(value)
        self._filter(conditions, params, since_ms, substring, min_level)
        return self._select(conditions, params, limit, newest)

    def fetch_logs(self, wanted: LogFilter) -> list[LogRow]:
        """The lines ``wanted`` names (``LogFilter``), in id order."""
        conditions: list[str] = []
        params: list[Any] = []
        if wanted.attempt_key is not None:
            conditions.append("job_id = ? AND idx = ? AND attempt = ?")
            params += wanted.attempt_key
        if wanted.key_prefix:
            condition, values = _prefix_condition(wanted.key_prefix)
            conditions.append(condition)
            params += values
        if wanted.key_pattern is not None:
            self._define(_KEY_FUNCTION, 1, lambda text, find=wanted.key_pattern.match: find(text) is not None)
            conditions.append(f"{_KEY_FUNCTION}({_KEY_SQL})")
        for bound, value in (("id > ?", wanted.after_id), ("id < ?", wanted.before_id)):
            if value > 0:
                conditions.append(bound)
                params.append(value)
        if wanted.line_pattern is not None:
            self._define(_LINE_FUNCTION, 1, lambda text, find=wanted.line_pattern.search: find(text) is not None)
            conditions.append(f"{_LINE_FUNCTION}(data)")
        self._filter(conditions, params, wanted.since_ms, wanted.substring, wanted.min_level)
        return self._select(conditions, params, wanted.limit, wanted.newest)

    @staticmethod
    def _filter(conditions: list[str], params: list[Any], since_ms: int, substring: str,
                min_level: int | None) -> None:
        """Add the time, text and level filters both reads take."""
        if since_ms:
            conditions.append("ts_ms > ?")
            params.append(since_ms)
        if substring:
            conditions.append("instr(data, ?) > 0")
            params.append(substring)
        if min_level is not None:
            conditions.append(_LEVEL_CONDITION)
            params.append(min_level)

    def _select(self, conditions: list[str], params: list[Any], limit: int, newest: bool) -> list[LogRow]:
        sql = (f"SELECT {_LOG_COLUMNS} FROM logs WHERE {' AND '.join(conditions) or '1'} "
               f"ORDER BY id {'DESC' if newest else 'ASC'} LIMIT ?")
        rows = [LogRow(*row) for row in self._db.execute(sql, [*params, limit])]
        return rows[::-1] if newest else rows

    def last_log_id(self, job_ids: str | Sequence[str]) -> int:
        """The id of the newest line of a job, or of several (0 when they have none)."""
        jobs = [job_ids] if isinstance(job_ids, str) else list(job_ids)
        row = self._db.execute(f"SELECT max(id) FROM logs WHERE job_id IN ({', '.join('?' * len(jobs))})",
                               jobs).fetchone()
        return int(row[0] or 0)

    def log_count(self, job_id: str, idx: int) -> int:
        """Stored lines of one task."""
        return int(self._db.execute("SELECT count(*) FROM logs WHERE job_id = ? AND idx = ?",
                                    (job_id, idx)).fetchone()[0])

    def log_line_total(self) -> int:
        """Stored lines of every job."""
        return int(self._db.execute("SELECT count(*) FROM logs").fetchone()[0])

    def _delete_logs(self, job_id: str) -> None:
        """Drop a job's lines (``Store.delete_tree``, inside its transaction)."""
        self._db.execute("DELETE FROM logs WHERE job_id = ?", (job_id,))
