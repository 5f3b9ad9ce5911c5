"""Task status text on the embedded controller: what a task reports with Iris's own
``report_task_status_text``, kept per attempt and read back by SQL, as a real Iris keeps it in finelog's
``iris.task_status`` namespace.

The path is Iris's, end to end:

* A task's Iris client (``iris.client.client.get_iris_ctx()``, built from ``IRIS_CONTROLLER_ADDRESS``)
  looks up ``/system/log-server`` in the controller's endpoint registry (``ListEndpoints``): the
  answer is this controller's own finelog proxy, ``<controller URL>/proxy/system.log-server``.
* Its finelog client registers the namespace (``RegisterTable``: the schema is echoed back as the one in
  force) and appends rows (``WriteRows``, an Arrow IPC batch of Iris's ``TaskStatusRow``:
  ``task_id``, ``attempt_id``, ``ts``, ``status_text_detail_md``, ``status_text_summary_md``).
* Only ``iris.task_status`` is kept (any other namespace is INVALID_ARGUMENT, and Iris's client
  drops the rows quietly). A row is kept when its task exists; per attempt the newest row wins (Iris keeps
  every row for an hour; its readers want the newest). Each text is cut at ``MAX_TEXT_CHARS``.
* ``Query`` runs the SQL on a read-only SQLite connection allowed to read that one table (its
  columns are Iris's, ``ts`` in epoch milliseconds, plus ``job_id``) and a few plain functions,
  within ``MAX_QUERY_STEPS`` and ``MAX_QUERY_ROWS``; the result is an Arrow IPC stream. SQL only
  DataFusion knows (``QUALIFY``, ``INTERVAL``) is INVALID_ARGUMENT with SQLite's message;
  ``to_timestamp_millis(ms)`` is the identity, so Iris's dashboard filter
  ``ts >= to_timestamp_millis(<submitted ms>)`` works on both.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from typing import Any, Final

from fray_jupyter.controller.rpc import Code, RpcError
from fray_jupyter.controller.store import Store
from fray_jupyter.iris import arrow_ipc
from fray_jupyter.iris.proto import controller_pb2, finelog_stats_pb2
from fray_jupyter.iris.states import task_index, task_job
from fray_jupyter.iris.wire import LOG_SERVER_ENDPOINT, LOG_SERVER_PROXY_PATH
from fray_jupyter.iris.wire import STATUS_TEXT_NAMESPACE as NAMESPACE

C = controller_pb2.Controller
S = finelog_stats_pb2
MAX_TEXT_CHARS: Final[int] = 64 * 1024
MAX_QUERY_STEPS: Final[int] = 5_000_000
MAX_QUERY_ROWS: Final[int] = 100_000
FUNCTIONS: Final[frozenset[str]] = frozenset({
    "to_timestamp_millis", "row_number", "rank", "count", "max", "min", "sum", "coalesce", "ifnull", "lower", "upper",
    "length", "substr", "instr", "like", "glob", "abs", "round"})
"""Functions a query may call (SQLite's, and ``to_timestamp_millis``)."""
_STRINGS: Final[frozenset[str]] = frozenset({"string", "large_string", "string_view"})
_INTEGERS: Final[frozenset[str]] = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"})
_REQUIRED: Final[dict[str, frozenset[str]]] = {"task_id": _STRINGS, "attempt_id": _INTEGERS,
                                               "status_text_detail_md": _STRINGS, "status_text_summary_md": _STRINGS}
"""The columns of Iris's ``TaskStatusRow`` a row must have, and the Arrow types each may take."""


def _refuse(namespace: str) -> RpcError:
    return RpcError(Code.INVALID_ARGUMENT, f"namespace {namespace!r} is not kept by the embedded fray-jupyter "
                    f"controller: it keeps {NAMESPACE!r} (task status text) only")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS - 1] + "…"


class TaskStatusText:
    """The stats and endpoint methods above, over the controller's store (see the module rules)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- endpoints ---------------------------------------------------------------------------------
    @staticmethod
    def list_endpoints(request: C.ListEndpointsRequest, controller_url: str) -> C.ListEndpointsResponse:
        """``/system/log-server`` (this controller's finelog proxy) when the request's name or prefix
        covers it; no other endpoint exists (tasks cannot register any)."""
        name = LOG_SERVER_ENDPOINT
        covered = name == request.prefix if request.exact else name.startswith(request.prefix)
        if not covered or request.task_ids or not controller_url:
            return C.ListEndpointsResponse()
        endpoint = C.Endpoint(endpoint_id="system-log-server", name=name,
                              address=controller_url.rstrip("/") + LOG_SERVER_PROXY_PATH)
        return C.ListEndpointsResponse(endpoints=[endpoint])

    # -- writes --------------------------------------------------------------------------------------
    def register_table(self, request: S.RegisterTableRequest) -> S.RegisterTableResponse:
        """Accept ``iris.task_status``: the requested schema and policy are the ones in force."""
        if request.namespace != NAMESPACE:
            raise _refuse(request.namespace)
        return S.RegisterTableResponse(effective_schema=request.schema, effective_policy=request.storage_policy)

    def write_rows(self, request: S.WriteRowsRequest) -> S.WriteRowsResponse:
        """Keep each row of the batch whose task exists; ``rows_written`` counts those kept."""
        if request.namespace != NAMESPACE:
            raise _refuse(request.namespace)
        try:
            columns = {column.name: column for column in arrow_ipc.read(request.arrow_ipc)}
        except ValueError as error:
            raise RpcError(Code.INVALID_ARGUMENT, f"WriteRows: {error}") from None
        for name, kinds in _REQUIRED.items():
            if name not in columns or columns[name].type not in kinds:
                raise RpcError(Code.INVALID_ARGUMENT, f"WriteRows to {NAMESPACE}: column {name!r} must be "
                               f"{'an integer' if kinds is _INTEGERS else 'a string'} (columns: {sorted(columns)})")
        stamp = columns.get("ts")
        stamps = stamp.values if stamp is not None and stamp.type.startswith("timestamp") else None
        now = int(time.time() * 1000)
        written = 0
        with self.store.transaction():
            for i, row in enumerate(arrow_ipc.rows(list(columns.values()))):
                task_id, attempt = row["task_id"], row["attempt_id"]
                job = self.store.job(task_job(task_id)) if isinstance(task_id, str) else None
                index = task_index(task_id) if job is not None else None
                if job is None or index is None or index >= job.replicas or not isinstance(attempt, int):
                    continue
                ts = stamps[i] if stamps is not None else None
                self.store.put_status_text(job.job_id, task_id, attempt, now if ts is None else ts,
                                           _cut(row["status_text_detail_md"] or ""),
                                           _cut(row["status_text_summary_md"] or ""))
                written += 1
        return S.WriteRowsResponse(rows_written=written)

    # -- reads ---------------------------------------------------------------------------------------
    def query(self, request: S.QueryRequest) -> S.QueryResponse:
        """The SQL's result as an Arrow IPC stream (see the module rules), read on a connection of
        its own that ends with the call."""
        steps = [0]

        def progress() -> int:
            steps[0] += 1
            return int(steps[0] * 1000 > MAX_QUERY_STEPS)
        with closing(self._reader()) as reader:
            reader.set_progress_handler(progress, 1000)
            try:
                cursor = reader.execute(request.sql)
                found = cursor.fetchmany(MAX_QUERY_ROWS + 1)
                names = [column[0] for column in cursor.description or ()]
            except sqlite3.Error as error:
                detail = ("it ran past the step limit" if "interrupt" in str(error) else
                          f"{error} (the embedded controller reads only {NAMESPACE!r}, with SQLite)")
                raise RpcError(Code.INVALID_ARGUMENT, f"query failed: {detail}") from None
        if len(found) > MAX_QUERY_ROWS:
            raise RpcError(Code.RESOURCE_EXHAUSTED, f"query result has more than {MAX_QUERY_ROWS} rows: narrow it")
        columns = [_arrow_column(name, [row[i] for row in found]) for i, name in enumerate(names)]
        return S.QueryResponse(arrow_ipc=arrow_ipc.write(columns), row_count=len(found))

    def _reader(self) -> sqlite3.Connection:
        """A read-only connection to the store that may read the namespace's table and nothing else."""
        reader = sqlite3.connect(f"{self.store.path.resolve().as_uri()}?mode=ro", uri=True)
        reader.create_function("to_timestamp_millis", 1, lambda ms: ms, deterministic=True)
        reader.set_authorizer(_authorize)
        return reader


def _authorize(action: int, first: str | None, second: str | None, database: str | None, inner: str | None) -> int:
    """SQLite authorizer: SELECT, reads of the namespace's table, and ``FUNCTIONS``; nothing else."""
    del database, inner
    if action == sqlite3.SQLITE_SELECT:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_READ:
        return sqlite3.SQLITE_OK if first == NAMESPACE else sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_OK if (second or "").lower() in FUNCTIONS else sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_DENY


def _arrow_column(name: str, values: list[Any]) -> arrow_ipc.Column:
    """A result column typed by its values: int64, float64, binary, string (anything mixed, as text), or null."""
    present = {type(value) for value in values if value is not None}
    if not present:
        return arrow_ipc.Column(name, "null", values)
    if present <= {int, float}:
        return arrow_ipc.Column(name, "int64" if present == {int} else "float64", values)
    if present == {bytes}:
        return arrow_ipc.Column(name, "binary", values)
    return arrow_ipc.Column(name, "string", [value if value is None or isinstance(value, str) else str(value)
                                             for value in values])
