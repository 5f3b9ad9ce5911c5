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
* Tasks write ``iris.task_status`` only (the other namespaces, ``controller.store.statscatalog``, are
  written by the controller itself: WriteRows to them, or to a namespace it does not keep, is
  INVALID_ARGUMENT, and Iris's client drops the rows quietly); RegisterTable accepts every namespace
  it keeps. A row is kept when its task exists; per attempt the newest row wins (Iris keeps
  every row for an hour; its readers want the newest). Each text is cut at ``MAX_TEXT_CHARS``.
* ``Query`` runs the SQL on Apache DataFusion over every namespace (``controller.stats.stats``,
  ``controller.stats.sqlquery``), as finelog does: Iris's own SQL works unchanged; the answer is an Arrow
  IPC stream.
"""

from __future__ import annotations

import time
from typing import Final

from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.stats.stats import Stats
from fray_jupyter.controller.store.statscatalog import CATALOG
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris import arrow_ipc
from fray_jupyter.iris.proto import controller_pb2, finelog_stats_pb2
from fray_jupyter.iris.states import task_index, task_job
from fray_jupyter.iris.wire import LOG_SERVER_ENDPOINT, LOG_SERVER_PROXY_PATH
from fray_jupyter.iris.wire import STATUS_TEXT_NAMESPACE as NAMESPACE

C = controller_pb2.Controller
S = finelog_stats_pb2
MAX_TEXT_CHARS: Final[int] = 64 * 1024
_STRINGS: Final[frozenset[str]] = frozenset({"string", "large_string", "string_view"})
_INTEGERS: Final[frozenset[str]] = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"})
_REQUIRED: Final[dict[str, frozenset[str]]] = {"task_id": _STRINGS, "attempt_id": _INTEGERS,
                                               "status_text_detail_md": _STRINGS, "status_text_summary_md": _STRINGS}
"""The columns of Iris's ``TaskStatusRow`` a row must have, and the Arrow types each may take."""


def _refuse(namespace: str) -> RpcError:
    if namespace in CATALOG:
        return RpcError(Code.INVALID_ARGUMENT, f"namespace {namespace!r} is written by the embedded fray-jupyter "
                        f"controller itself: tasks write {NAMESPACE!r} (task status text) only")
    return RpcError(Code.INVALID_ARGUMENT, f"namespace {namespace!r} is not kept by the embedded fray-jupyter "
                    f"controller: it keeps {', '.join(repr(name) for name in CATALOG)}")


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS - 1] + "…"


class TaskStatusText:
    """The stats and endpoint methods above, over the controller's store (see the module rules)."""

    def __init__(self, store: Store, stats: Stats | None = None) -> None:
        self.store = store
        self.stats = stats or Stats(store)

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
        """Accept a namespace the controller keeps: the requested schema and policy are the ones in force."""
        if request.namespace not in CATALOG:
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
        """The SQL's result as an Arrow IPC stream (see the module rules)."""
        stream, rows = self.stats.query(request.sql)
        return S.QueryResponse(arrow_ipc=stream, row_count=rows)
