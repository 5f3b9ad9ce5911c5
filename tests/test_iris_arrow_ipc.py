"""``iris.arrow_ipc`` against pyarrow (the reference implementation): what pyarrow writes — every flat
type, view layouts, several batches, nulls — reads back the same; what we write pyarrow reads the
same; and bytes that are not a stream, or a stream cut anywhere, are one ``ValueError``."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fray_jupyter.iris.arrow_ipc import WRITABLE, Column, read, rows, write

pa = pytest.importorskip("pyarrow")
ipc = pytest.importorskip("pyarrow.ipc")

TYPES: dict[str, Any] = {
    "null": pa.null(), "bool": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(),
    "int64": pa.int64(), "uint8": pa.uint8(), "uint64": pa.uint64(), "float32": pa.float32(), "float64": pa.float64(),
    "utf8": pa.string(), "large_utf8": pa.large_string(), "utf8_view": pa.string_view(), "binary": pa.binary(),
    "large_binary": pa.large_binary(), "binary_view": pa.binary_view(), "ts[s]": pa.timestamp("s"),
    "ts[ms]": pa.timestamp("ms"), "ts[us]": pa.timestamp("us"), "ts[ns]": pa.timestamp("ns", tz="UTC"),
}
VALUES: dict[str, Any] = {
    "null": st.none(), "bool": st.booleans(), "int8": st.integers(-128, 127), "int16": st.integers(-2**15, 2**15 - 1),
    "int32": st.integers(-2**31, 2**31 - 1), "int64": st.integers(-2**63, 2**63 - 1), "uint8": st.integers(0, 255),
    "uint64": st.integers(0, 2**64 - 1), "float32": st.just(1.5), "float64": st.floats(allow_nan=False),
    "utf8": st.text(), "large_utf8": st.text(), "utf8_view": st.text(), "binary": st.binary(),
    "large_binary": st.binary(), "binary_view": st.binary(max_size=40),
    **{f"ts[{unit}]": st.integers(0, 2**40) for unit in ("s", "ms", "us", "ns")},
}


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


def _unit_values(table: Any) -> list[list[Any]]:
    """pyarrow's columns with timestamps as integers in their unit (what ``read`` gives)."""
    out = []
    for column in table.columns:
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.int64())
        out.append(column.to_pylist())
    return out


@settings(max_examples=200, deadline=None)
@given(tables(sorted(TYPES)), st.integers(1, 5))
def test_what_pyarrow_writes_reads_back_the_same(columns: list[Column], chunk: int) -> None:
    table = _as_pyarrow(columns)
    found = read(_pyarrow_stream(table, chunk))
    assert [(c.name, c.type) for c in found] == [(c.name, c.type) for c in columns]
    assert [c.values for c in found] == _unit_values(table)


@settings(max_examples=200, deadline=None)
@given(tables(sorted(WRITABLE)))
def test_what_we_write_pyarrow_reads_the_same(columns: list[Column]) -> None:
    table = ipc.open_stream(pa.BufferReader(write(columns))).read_all()
    assert table.schema == _as_pyarrow(columns).schema
    assert _unit_values(table) == [c.values for c in columns]


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


def test_unsupported_columns_and_writes_are_refused_naming_them() -> None:
    nested = pa.table({"tags": pa.array([["a"]], pa.list_(pa.string()))})
    with pytest.raises(ValueError, match="'tags'"):
        read(_pyarrow_stream(nested, 1))
    with pytest.raises(ValueError, match="'x' of type 'uint8'"):
        write([Column("x", "uint8", [1])])


STREAM = _pyarrow_stream(pa.table({"task_id": ["/a/b/0", None], "n": [1, 2]}), 1)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=300),
                 st.integers(0, len(STREAM) - 1).map(lambda cut: STREAM[:cut]),
                 st.tuples(st.integers(0, len(STREAM) - 1), st.integers(0, 255)).map(
                     lambda edit: STREAM[:edit[0]] + bytes([edit[1]]) + STREAM[edit[0] + 1:])))
def test_garbage_is_one_value_error(data: bytes) -> None:
    try:
        read(data)
    except ValueError:
        pass
