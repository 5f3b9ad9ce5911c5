"""The ``endpoints`` table of the controller's store: Iris's endpoint registry
(``controller.engine.endpoint_registry`` holds its rules), every SQL statement about it here.

Rules:

* An endpoint is listed only while its lease holds and the attempt that registered it is its task's
  current one, in a live state; expiry deletes what no longer is.
* A task holds one registration per name: registering a name again under another id replaces it.
* Names match case-sensitively (``substr``, not ``LIKE``, for a prefix).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any, Final


@dataclass
class EndpointRow:
    """One registered endpoint (``controller.engine.endpoint_registry``): the attempt that registered it, its
    ``metadata`` as a JSON object and the epoch ms its lease lapses at."""

    endpoint_id: str
    name: str
    address: str
    job_id: str
    idx: int
    attempt: int
    metadata: str
    access: int
    registered_ms: int
    lease_deadline_ms: int


def _columns(row_type: type[Any]) -> str:
    return ", ".join(field.name for field in fields(row_type))


_ENDPOINT_COLUMNS: Final[str] = _columns(EndpointRow)
_LIVE_ENDPOINT: Final[str] = (
    "EXISTS (SELECT 1 FROM tasks t WHERE t.job_id = endpoints.job_id AND t.idx = endpoints.idx "
    "AND t.attempt = endpoints.attempt AND t.state IN ({states}))")
"""SQL: the endpoint's registering attempt is its task's current one, and the task is in one of ``states``."""


class EndpointTables:
    """The store's endpoint methods (``Store`` has them; see the module rules)."""

    _db: sqlite3.Connection
    on_change: Callable[[str], None]

    def put_endpoint(self, endpoint: EndpointRow) -> None:
        """Register or renew ``endpoint`` (by its id); the task's other endpoints of the same name
        go (a task holds one registration per name)."""
        self._db.execute("DELETE FROM endpoints WHERE job_id = ? AND idx = ? AND name = ? AND endpoint_id != ?",
                         (endpoint.job_id, endpoint.idx, endpoint.name, endpoint.endpoint_id))
        values = [getattr(endpoint, field.name) for field in fields(EndpointRow)]
        self._db.execute(f"INSERT OR REPLACE INTO endpoints ({_ENDPOINT_COLUMNS}) "
                         f"VALUES ({', '.join('?' * len(values))})", values)
        self.on_change(endpoint.job_id)

    def delete_endpoint(self, endpoint_id: str) -> None:
        """Forget one endpoint (nothing happens when there is none by that id)."""
        row = self._db.execute("SELECT job_id FROM endpoints WHERE endpoint_id = ?", (endpoint_id,)).fetchone()
        if row is not None:
            self._db.execute("DELETE FROM endpoints WHERE endpoint_id = ?", (endpoint_id,))
            self.on_change(row[0])

    def live_endpoints(self, now_ms: int, states: Iterable[int], *, name: str | None = None, prefix: str = "",
                       task_ids: Sequence[str] = ()) -> list[EndpointRow]:
        """The endpoints whose lease is unexpired at ``now_ms`` and whose registering attempt is its
        task's current one, in one of ``states`` (see ``_LIVE_ENDPOINT``), by name: the one ``name``,
        else those starting with ``prefix``; registered by one of ``task_ids`` when given (wire task
        ids, ``<job id>/<index>``)."""
        marks = ", ".join("?" * len(states := list(states)))
        sql = (f"SELECT {_ENDPOINT_COLUMNS} FROM endpoints WHERE lease_deadline_ms > ? "
               f"AND {_LIVE_ENDPOINT.format(states=marks)}")
        params: list[Any] = [now_ms, *states]
        if name is not None:
            sql += " AND name = ?"
            params.append(name)
        elif prefix:
            sql += " AND substr(name, 1, ?) = ?"  # LIKE would ignore case
            params += [len(prefix), prefix]
        rows = [EndpointRow(*row) for row in self._db.execute(sql + " ORDER BY name, endpoint_id", params)]
        if task_ids:
            wanted = set(task_ids)
            rows = [row for row in rows if f"{row.job_id}/{row.idx}" in wanted]
        return rows

    def expire_endpoints(self, now_ms: int, states: Iterable[int]) -> list[str]:
        """Delete the endpoints ``live_endpoints`` no longer shows (lease lapsed, or their attempt
        ended); returns the ids of the jobs that had them."""
        marks = ", ".join("?" * len(states := list(states)))
        where = f"lease_deadline_ms <= ? OR NOT {_LIVE_ENDPOINT.format(states=marks)}"
        jobs = sorted({row[0] for row in self._db.execute(f"SELECT job_id FROM endpoints WHERE {where}",
                                                          [now_ms, *states])})
        if jobs:
            self._db.execute(f"DELETE FROM endpoints WHERE {where}", [now_ms, *states])
            for job_id in jobs:
                self.on_change(job_id)
        return jobs

    def next_endpoint_deadline(self) -> int | None:
        """The earliest lease deadline of a stored endpoint (epoch ms), or None without endpoints."""
        row = self._db.execute("SELECT min(lease_deadline_ms) FROM endpoints").fetchone()
        return None if row[0] is None else int(row[0])
