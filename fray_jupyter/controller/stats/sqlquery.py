"""finelog's ``StatsService/Query`` on the embedded controller: the SQL runs on Apache DataFusion, the
engine finelog's own store answers with, over the stats namespaces' Arrow batches
(``controller.stats.mirror``), so the SQL Iris's dashboard and CLI send works unchanged (``QUALIFY``,
window functions, ``to_timestamp_millis``, ``INTERVAL``, ``now()``).

Rules (what a query may do, and the answer to one that may not):

* One read-only statement: DDL, DML (``INSERT``, ``COPY``) and other statements (``SET``) are refused
  by DataFusion's ``SQLOptions``; only the namespaces are tables (no file is ever named: a path as a
  table is "table … not found", and no file-reading table function exists). Refused or unplannable
  SQL is INVALID_ARGUMENT ``query failed: <DataFusion's first line>``; a namespace that does not exist
  is DataFusion's ``table '…' not found``, as finelog answers.
* No runaway: a plan whose tables are anything but the namespaces (``range()``), that recurses
  (``WITH RECURSIVE``), or whose joins could make more than ``MAX_JOIN_ROWS`` rows (the product of
  their inputs' row counts) is refused before it runs (INVALID_ARGUMENT, naming the step limit), as
  are the functions in ``GROWING_FUNCTIONS`` (they build values of any size from small ones).
  Running, a query holds at most ``MEMORY_LIMIT_BYTES`` for its joins, sorts and aggregates, and gives
  at most ``MAX_QUERY_ROWS`` rows within ``MAX_QUERY_SECONDS``: past any, RESOURCE_EXHAUSTED saying which.
* The answer is an Arrow IPC stream of the result (its schema, then its batches) and its row count.
* What is kept between queries (the DataFusion session, the namespaces registered in it, recent
  plans) and when it is dropped is ``controller.stats.session``'s; a query answered from a kept
  plan answers as planning it again would, within the same bounds (its SQL passed the checks
  above when it was planned; rows and time are counted on every run).
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.stats.session import Session

if TYPE_CHECKING:
    from fray_jupyter.controller.stats.mirror import Snapshot

MAX_JOIN_ROWS: Final[int] = 20_000_000
MAX_QUERY_ROWS: Final[int] = 100_000
MAX_QUERY_SECONDS: Final[float] = 10.0
MEMORY_LIMIT_BYTES: Final[int] = 256 * 1024 * 1024
GROWING_FUNCTIONS: Final[frozenset[str]] = frozenset({
    "range", "generate_series", "repeat", "array_repeat", "lpad", "rpad", "overlay", "string_to_array"})
_CALL: Final[re.Pattern[str]] = re.compile(r"\b([a-z_][a-z0-9_]*)\s*\(", re.IGNORECASE)
_LITERAL: Final[re.Pattern[str]] = re.compile(r"'(?:[^']|'')*'")
_MULTIPLIERS: Final[frozenset[str]] = frozenset({"Join", "CrossJoin"})
_ADDERS: Final[frozenset[str]] = frozenset({"Union"})


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    line = text[0] if text else type(error).__name__
    return line.removeprefix("DataFusion error: ")


def _refused(detail: str) -> RpcError:
    return RpcError(Code.INVALID_ARGUMENT, f"query failed: {detail}")


def _exhausted(detail: str) -> RpcError:
    return RpcError(Code.RESOURCE_EXHAUSTED, f"query stopped: {detail}: narrow it")


def _growing_call(sql: str) -> str | None:
    """The first function of ``GROWING_FUNCTIONS`` the SQL calls (outside string literals), or None."""
    lowered = sql.lower()
    if not any(name in lowered for name in GROWING_FUNCTIONS):
        return None
    for match in _CALL.finditer(_LITERAL.sub("''", sql)):
        if match[1].lower() in GROWING_FUNCTIONS:
            return match[1]
    return None


def _bound(plan: Any, sizes: Mapping[str, int]) -> int:
    """The most rows ``plan`` can make (see the module rules); RpcError when it is refused."""
    variant = plan.to_variant()
    kind = type(variant).__name__
    if kind == "RecursiveQuery":
        raise _refused("recursive queries are not allowed (they can run without end)")
    inputs = [_bound(child, sizes) for child in plan.inputs()]
    if kind == "TableScan":
        name = str(variant.table_name())
        if name not in sizes:
            raise _refused(f"table {name!r} is not a stats namespace (tables: {', '.join(sorted(sizes))})")
        return sizes[name]
    if kind in _MULTIPLIERS:
        rows = 1
        for count in inputs:
            rows *= max(count, 1)
        if rows > MAX_JOIN_ROWS:
            raise _refused(f"its joins could make {rows:,} rows, past the step limit of {MAX_JOIN_ROWS:,} rows")
        return rows
    if kind in _ADDERS:
        return sum(inputs)
    return max(inputs, default=1)


def _failed(error: BaseException) -> RpcError:
    """DataFusion's error while planning or running a query, as the module rules answer it."""
    line = _first_line(error)
    if "Resources exhausted" in line or "Not enough memory" in line:
        return _exhausted(f"it needed more than {MEMORY_LIMIT_BYTES // 2**20} MiB ({line})")
    return _refused(line)


def _new_context() -> Any:
    from datafusion import RuntimeEnvBuilder, SessionConfig, SessionContext

    config = SessionConfig().with_target_partitions(1).with_information_schema(False)
    return SessionContext(config, RuntimeEnvBuilder().with_greedy_memory_pool(MEMORY_LIMIT_BYTES))


def new_session() -> Session:
    """A session for ``run``: a DataFusion context holding at most ``MEMORY_LIMIT_BYTES`` (as set
    when its first query runs)."""
    return Session(_new_context)


def _physical(session: Session, sql: str) -> tuple[Any, Any, Any]:
    """The physical plan of ``sql``, its result's schema and the frame it was planned from (None
    for a kept physical plan, which has one partition): planned afresh from the SQL or from a kept
    logical plan, unless a kept physical plan may run again (``controller.stats.session``)."""
    kept = session.plan(sql)
    if kept is not None and kept.physical is not None:
        return kept.physical, kept.schema, None
    if kept is None:
        from datafusion import SQLOptions

        if (growing := _growing_call(sql)) is not None:
            raise _refused(f"{growing}() is not allowed here (it can build values of any size)")
        options = SQLOptions().with_allow_ddl(False).with_allow_dml(False).with_allow_statements(False)
        try:
            frame = session.context.sql_with_options(sql, options)
        except Exception as error:  # noqa: BLE001 - DataFusion raises plain Exception for every SQL error
            raise _refused(_first_line(error)) from None
        logical, schema = frame.logical_plan(), frame.schema()
    else:
        logical, schema = kept.logical, kept.schema
        frame = session.context.create_dataframe_from_logical_plan(logical)
    _bound(logical, session.sizes)
    try:
        physical = frame.execution_plan()
    except Exception as error:  # noqa: BLE001 - as above
        raise _failed(error) from None
    session.keep(sql, logical, schema, physical)
    return physical, schema, frame


def run(session: Session, tables: Mapping[str, Snapshot], sql: str) -> tuple[bytes, int]:
    """The Arrow IPC stream and row count of ``sql`` over ``tables`` (namespace → its snapshot), in
    ``session``, by the module rules."""
    pa: Any = importlib.import_module("pyarrow")
    session.sync(tables)
    physical, schema, frame = _physical(session, sql)
    deadline = time.monotonic() + MAX_QUERY_SECONDS
    found: list[Any] = []
    rows = 0
    try:
        # a kept physical plan has one partition; DataFusion's frame merges several
        stream = session.context.execute(physical, 0) if physical.partition_count == 1 else frame.execute_stream()
        for chunk in stream:
            batch = chunk.to_pyarrow()
            rows += batch.num_rows
            found.append(batch)
            if rows > MAX_QUERY_ROWS:
                raise _exhausted(f"its result has more than {MAX_QUERY_ROWS:,} rows")
            if time.monotonic() > deadline:
                raise _exhausted(f"it ran longer than {MAX_QUERY_SECONDS:g} s")
    except RpcError:
        raise
    except Exception as error:  # noqa: BLE001 - as above
        raise _failed(error) from None
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        for batch in found:
            writer.write_batch(batch)
    return sink.getvalue().to_pybytes(), rows
