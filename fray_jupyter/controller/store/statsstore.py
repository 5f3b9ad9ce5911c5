"""The appended stats namespaces in the controller's store (``iris.task``, ``iris.task_event``,
``iris.profile``: schema version 8, columns in ``controller.store.statscatalog``), every SQL statement about
them here.

Rules:

* Rows are only appended (in rowid order, which is their order of arrival) and removed: oldest
  first (``prune_stats``), or with their job (the ``stats_follow_jobs`` trigger, which also counts
  ``stats_generation`` up so readers read them again).
* Values are stored as the catalog says: timestamps as epoch ms, bools as 0/1; a row is a mapping of
  column name → value, missing columns stored as null.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from fray_jupyter.controller.store.statscatalog import CATALOG
from fray_jupyter.iris.wire import STATUS_TEXT_NAMESPACE


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class StatsTables:
    """The store's stats methods (``Store`` has them; see the module rules)."""

    _db: sqlite3.Connection

    def append_stats(self, namespace: str, job_id: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append ``rows`` of ``namespace`` belonging to ``job_id`` (inside or outside a transaction)."""
        names = CATALOG[namespace].column_names
        self._db.executemany(
            f"INSERT INTO {_quoted(namespace)} (job_id, {', '.join(names)}) VALUES ({', '.join('?' * (len(names) + 1))})",
            [(job_id, *(row.get(name) for name in names)) for row in rows])

    def stats_since(self, namespace: str, after_rowid: int) -> list[tuple[Any, ...]]:
        """``(rowid, *columns)`` of every row of ``namespace`` appended after ``after_rowid``, in order."""
        names = ", ".join(CATALOG[namespace].column_names)
        return self._db.execute(f"SELECT rowid, {names} FROM {_quoted(namespace)} WHERE rowid > ? ORDER BY rowid",
                                (after_rowid,)).fetchall()

    def stats_generation(self) -> int:
        """How many times rows went with their job (``stats_follow_jobs``)."""
        return int(self._db.execute("SELECT n FROM stats_generation").fetchone()[0])

    def prune_stats(self, namespace: str, before_ms: int, max_rows: int) -> int:
        """Remove the oldest rows of ``namespace``: those before the first row stamped at or after
        ``before_ms``, and those past the newest ``max_rows``; returns the first rowid kept (0: none
        removed)."""
        table, when = _quoted(namespace), CATALOG[namespace].time_column
        first_recent = self._db.execute(f"SELECT min(rowid) FROM {table} WHERE {when} >= ?", (before_ms,)).fetchone()[0]
        newest = self._db.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0]
        if newest is None:
            return 0
        keep_from = max(newest + 1 if first_recent is None else first_recent, newest - max_rows + 1)
        if self._db.execute(f"SELECT 1 FROM {table} WHERE rowid < ? LIMIT 1", (keep_from,)).fetchone() is None:
            return 0
        self._db.execute(f"DELETE FROM {table} WHERE rowid < ?", (keep_from,))
        return int(keep_from)

    def status_text_rows(self) -> list[tuple[Any, ...]]:
        """Every ``iris.task_status`` row, in the catalog's column order."""
        names = ", ".join(CATALOG[STATUS_TEXT_NAMESPACE].column_names)
        return self._db.execute(f"SELECT {names} FROM {_quoted(STATUS_TEXT_NAMESPACE)}").fetchall()

    def changes(self) -> int:
        """How many rows this connection has written so far (any table): moves on every write."""
        return self._db.total_changes
