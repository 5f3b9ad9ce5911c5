"""``iris.arrow_ipc``, pyarrow behind one small contract: what pyarrow writes — every flat type, view
layouts, several batches, nulls — reads back with pyarrow's type names and values, timestamps as epoch
milliseconds; what we write reads back the same; a value not of its column's type, bytes that are not a
stream, a stream cut anywhere or one of too many rows is one ``ValueError``."""

from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyarrow import ipc

from fray_jupyter.iris import arrow_ipc
from fray_jupyter.iris.arrow_ipc import Column, read, rows, write

TYPES: dict[str, Any] = {
    "null": pa.null(), "bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(),
    "int64": pa.int64(), "uint8": pa.uint8(), "uint64": pa.uint64(), "float": pa.float32(), "double": pa.float64(),
    "string": pa.string(), "large_string": pa.large_string(), "string_view": pa.string_view(),
    "binary": pa.binary(), "large_binary": pa.large_binary(), "binary_view": pa.binary_view(),
    "timestamp[s]": pa.timestamp("s"), "timestamp[ms]": pa.timestamp("ms"), "timestamp[us]": pa.timestamp("us"),
    "timestamp[ns, tz=UTC]": pa.timestamp("ns", tz="UTC"),
}
"""pyarrow's name for each type → the type."""
VALUES: dict[str, Any] = {
    "null": st.none(), "bool": st.booleans(), "int8": st.integers(-128, 127), "int16": st.integers(-2**15, 2**15 - 1),
    "int32": st.integers(-2**31, 2**31 - 1), "int64": st.integers(-2**63, 2**63 - 1), "uint8": st.integers(0, 255),
    "uint64": st.integers(0, 2**64 - 1), "float": st.just(1.5), "double": st.floats(allow_nan=False),
    "string": st.text(), "large_string": st.text(), "string_view": st.text(), "binary": st.binary(),
    "large_binary": st.binary(), "binary_view": st.binary(max_size=40),
    **{name: st.integers(0, 2**40) for name in TYPES if name.startswith("timestamp")},
}
WRITABLE = ("null", "bool", "int32", "int64", "double", "string", "binary", "timestamp[ms]")
"""Types ``write`` is asked for here (pyarrow's aliases; the controller writes int64, double, string,
binary and null)."""
TO_MS = {"s": lambda v: v * 1000, "ms": lambda v: v, "us": lambda v: v // 1000, "ns": lambda v: v // 1_000_000}
"""A timestamp unit → its integer value in epoch milliseconds, rounded down."""


def _pyarrow_stream(table: Any, chunk: int) -> bytes:
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches(max_chunksize=max(chunk, 1)):
            writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())


@st.composite
def tables(draw: st.DrawFn, types: list[str]) -> list[Column]:
    chosen = draw(st.lists(st.sampled_from(types), min_size=1, max_size=5))
    count = draw(st.integers(0, 12))
    return [Column(f"c{i}", kind, draw(st.lists(st.one_of(st.none(), VALUES[kind]), min_size=count, max_size=count)))
            for i, kind in enumerate(chosen)]


def _as_pyarrow(columns: list[Column]) -> Any:
    arrays = [pa.array(c.values, type=TYPES[c.type]) for c in columns]
    return pa.Table.from_arrays(arrays, names=[c.name for c in columns])


def _read_values(table: Any) -> list[list[Any]]:
    """pyarrow's values with timestamps as epoch milliseconds, rounded down (what ``read`` gives)."""
    out = []
    for column in table.columns:
        if pa.types.is_timestamp(column.type):
            to_ms = TO_MS[column.type.unit]
            out.append([None if v is None else to_ms(v) for v in column.cast(pa.int64()).to_pylist()])
        else:
            out.append(column.to_pylist())
    return out


@settings(max_examples=50, deadline=None)
@given(tables(sorted(TYPES)), st.integers(1, 5))
def test_what_pyarrow_writes_reads_back_the_same(columns: list[Column], chunk: int) -> None:
    table = _as_pyarrow(columns)
    found = read(_pyarrow_stream(table, chunk))
    assert [(c.name, c.type) for c in found] == [(c.name, c.type) for c in columns]
    assert [c.values for c in found] == _read_values(table)


@settings(max_examples=50, deadline=None)
@given(tables(list(WRITABLE)))
def test_what_we_write_reads_back_the_same(columns: list[Column]) -> None:
    stream = write(columns)
    table = ipc.open_stream(pa.BufferReader(stream)).read_all()
    assert table.schema == _as_pyarrow(columns).schema
    assert [(c.name, c.type, c.values) for c in read(stream)] == [(c.name, c.type, c.values) for c in columns]


def test_the_task_status_row_iris_s_client_writes() -> None:
    """The batch finelog's client builds for Iris's ``TaskStatusRow`` (``iris.task_status``)."""
    when = datetime.datetime(2026, 12, 1, 12, 0, 0, 5000)
    table = pa.table({"task_id": ["/alice/train/0"], "attempt_id": [1], "ts": pa.array([when], pa.timestamp("ms")),
                      "status_text_detail_md": ["**step 3**\n\n[W&B run](https://wandb.ai/a/b)"],
                      "status_text_summary_md": ["step 3 · loss 2.0"]})
    (row,) = rows(read(_pyarrow_stream(table, 10)))
    assert row == {"task_id": "/alice/train/0", "attempt_id": 1, "ts": int(when.timestamp() * 1000),
                   "status_text_detail_md": "**step 3**\n\n[W&B run](https://wandb.ai/a/b)",
                   "status_text_summary_md": "step 3 · loss 2.0"}


def test_a_value_not_of_its_column_s_type_is_refused_naming_the_column() -> None:
    with pytest.raises(ValueError, match="'x' of type 'int64'"):
        write([Column("x", "int64", ["one"])])
    with pytest.raises(ValueError, match="'y' of type 'no such type'"):
        write([Column("y", "no such type", [1])])


def test_a_stream_of_too_many_rows_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arrow_ipc, "MAX_ROWS", 3)
    assert len(rows(read(_pyarrow_stream(pa.table({"n": [1, 2, 3]}), 2)))) == 3
    with pytest.raises(ValueError, match="more than 3 rows"):
        read(_pyarrow_stream(pa.table({"n": [1, 2, 3, 4]}), 2))


STREAM = _pyarrow_stream(pa.table({"task_id": ["/a/b/0", None], "n": [1, 2]}), 1)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=300),
                 st.integers(0, len(STREAM) - 1).map(lambda cut: STREAM[:cut]),
                 st.tuples(st.integers(0, len(STREAM) - 1), st.integers(0, 255)).map(
                     lambda edit: STREAM[:edit[0]] + bytes([edit[1]]) + STREAM[edit[0] + 1:])))
def test_garbage_is_one_value_error(data: bytes) -> None:
    try:
        read(data)
    except ValueError as error:
        assert "\n" not in str(error)
