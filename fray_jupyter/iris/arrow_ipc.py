"""Arrow IPC streams, the form finelog's stats rows travel in (``WriteRowsRequest.arrow_ipc``,
``QueryResponse.arrow_ipc``), read and written with pyarrow — which every Iris environment has
(Iris's finelog client requires it). pyarrow is imported on first use: it takes a few tenths of a
second to import, and ``%load_ext fray_jupyter`` and the server extension never need it.

Rules:

* A column is its name, its type in pyarrow's spelling (``str(pyarrow type)``: ``"string"``,
  ``"int64"``, ``"double"``, ``"timestamp[ms]"`` …) and its values, None where null.
* ``read`` takes a stream (one schema, any number of record batches, whose columns are
  concatenated) and gives pyarrow's Python values, except timestamps: integers of epoch
  milliseconds whatever the column's unit (rounded down). The input is never trusted: bytes that are
  not a valid stream (every batch is validated in full) or a stream of more than ``MAX_ROWS`` rows
  is one ``ValueError`` naming what is wrong.
* ``query_rows`` reads the rows of finelog's ``QueryResponse`` as Connect's JSON carries it
  (``arrowIpc`` base64, ``rowCount``): an answer of no rows (``rowCount`` 0, which JSON leaves out) is
  read without decoding its table, so pyarrow is not imported for it.
* ``write`` makes one schema and one record batch from columns whose type is any name
  ``pyarrow.type_for_alias`` knows (``"string"``, ``"int64"``, ``"float64"``, ``"binary"``,
  ``"null"`` …; a timestamp's values are integers in its unit), every column nullable; a value that
  is not of its column's type is ``ValueError`` naming the column.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from fray_jupyter.lazy import loaded

MAX_ROWS: Final[int] = 1_000_000
"""Most rows ``read`` accepts in one stream."""
_PER_MS: Final[dict[str, tuple[int, int]]] = {"s": (1000, 1), "ms": (1, 1), "us": (1, 1000), "ns": (1, 1_000_000)}
"""A timestamp unit → (multiplier, divisor) that turns its values into milliseconds."""


@dataclass(frozen=True)
class Column:
    """One column: its name, its type (pyarrow's spelling) and its values (None where null)."""

    name: str
    type: str
    values: list[Any]


def rows(columns: Sequence[Column]) -> list[dict[str, Any]]:
    """The table as one ``{column name: value}`` dict per row."""
    count = len(columns[0].values) if columns else 0
    return [{column.name: column.values[i] for column in columns} for i in range(count)]


def _pyarrow() -> Any:
    """pyarrow, with its IPC module, imported on first use (pyarrow ships no types: its names are Any)."""
    loaded("pyarrow.ipc")
    return loaded("pyarrow")


def _one_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def _values(pa: Any, column: Any) -> list[Any]:
    """A column's Python values, timestamps as epoch milliseconds."""
    if not pa.types.is_timestamp(column.type):
        return list(column.to_pylist())
    times, per = _PER_MS[column.type.unit]
    return [None if value is None else value * times // per for value in column.cast(pa.int64()).to_pylist()]


def read(stream: bytes) -> list[Column]:
    """The columns of an Arrow IPC stream (see the module rules)."""
    pa = _pyarrow()
    try:
        reader = pa.ipc.open_stream(pa.py_buffer(stream))
        batches, count = [], 0
        for batch in reader:
            count += batch.num_rows
            if count > MAX_ROWS:
                raise ValueError(f"Arrow IPC stream has more than {MAX_ROWS} rows")
            batch.validate(full=True)
            batches.append(batch)
        table = pa.Table.from_batches(batches, schema=reader.schema)
    except (pa.ArrowException, OSError) as error:  # pyarrow reports some malformed streams as OSError
        raise ValueError(f"malformed Arrow IPC stream: {_one_line(error)}") from None
    return [Column(field.name, str(field.type), _values(pa, table.column(i))) for i, field in enumerate(table.schema)]


def query_rows(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The rows of a Connect JSON ``QueryResponse`` (module rules); ``ValueError`` when it is not an
    Arrow table."""
    if not int(answer.get("rowCount") or 0):
        return []
    return rows(read(base64.b64decode(str(answer.get("arrowIpc", "")), validate=True)))


def write(columns: Sequence[Column]) -> bytes:
    """One Arrow IPC stream of ``columns`` (see the module rules)."""
    pa = _pyarrow()
    arrays = []
    for column in columns:
        try:
            arrays.append(pa.array(column.values, type=pa.type_for_alias(column.type)))
        except (pa.ArrowException, ValueError) as error:
            raise ValueError(f"Arrow column {column.name!r} of type {column.type!r}: {_one_line(error)}") from None
    batch = pa.RecordBatch.from_arrays(arrays, names=[column.name for column in columns])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return bytes(sink.getvalue().to_pybytes())
