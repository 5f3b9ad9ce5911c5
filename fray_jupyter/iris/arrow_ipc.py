"""Arrow IPC streams, the form finelog's stats rows travel in (``WriteRowsRequest.arrow_ipc``,
``QueryResponse.arrow_ipc``): read and write the flat tables the task-status namespace needs,
without pyarrow.

Rules (Apache Arrow's columnar format and IPC stream, version 5, little-endian):

* A stream is messages, each ``0xFFFFFFFF``, its metadata's length, a flatbuffer ``Message``
  padded to 8 bytes, then its body; a zero length ends it. The first message is the ``Schema``, then
  any number of ``RecordBatch`` messages, whose columns are concatenated.
* ``read`` knows the flat types: null, bool, signed and unsigned ints, float32/64, utf8 and binary
  (plain, large and view layouts) and timestamps (values in their own unit, ``ts[<unit>]``). A
  nested or dictionary-encoded column, a compressed body, a big-endian schema, a batch of more than
  ``MAX_ROWS`` rows or anything that does not fit in the bytes given is ``ValueError`` naming it:
  the input is never trusted.
* ``write`` produces one schema and one record batch from columns of the types ``WRITABLE``,
  every column nullable.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

CONTINUATION: Final[bytes] = b"\xff\xff\xff\xff"
_HEADER_SCHEMA, _HEADER_RECORD_BATCH = 1, 3
_METADATA_V5: Final[int] = 4
_INT_TYPES: Final[dict[tuple[int, bool], str]] = {
    (bits, signed): f"{'' if signed else 'u'}int{bits}" for bits in (8, 16, 32, 64) for signed in (True, False)}
_UNITS: Final[tuple[str, ...]] = ("s", "ms", "us", "ns")
_VARIABLE: Final[dict[int, str]] = {4: "binary", 5: "utf8", 19: "large_binary", 20: "large_utf8", 23: "binary_view",
                                    24: "utf8_view"}
"""Arrow ``Type`` union ids of the variable-width types → their names here."""
_FIXED: Final[dict[str, str]] = {
    "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B", "uint16": "H", "uint32": "I", "uint64": "Q",
    "float32": "f", "float64": "d", **{f"ts[{unit}]": "q" for unit in _UNITS}}
"""Fixed-width column types and their ``struct`` format letter (little-endian)."""
MAX_ROWS: Final[int] = 1_000_000
"""Most rows ``read`` accepts in one record batch."""
WRITABLE: Final[frozenset[str]] = frozenset({"null", "bool", "int32", "int64", "float64", "utf8", "binary", "ts[ms]"})


@dataclass(frozen=True)
class Column:
    """One column: its name, its type (``"utf8"``, ``"int64"``, ``"ts[ms]"`` …) and its values
    (None where null; timestamps as integers in their unit, binary as bytes)."""

    name: str
    type: str
    values: list[Any]


def rows(columns: Sequence[Column]) -> list[dict[str, Any]]:
    """The table as one ``{column name: value}`` dict per row."""
    count = len(columns[0].values) if columns else 0
    return [{column.name: column.values[i] for column in columns} for i in range(count)]


# -- reading flatbuffers -------------------------------------------------------------------------
class _Table:
    """A flatbuffer table at ``pos`` of ``buf``; every read is bounds-checked (``struct.error``)."""

    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf, self.pos = buf, pos
        vtable = pos - struct.unpack_from("<i", buf, pos)[0]
        if vtable < 0:
            raise ValueError("malformed Arrow IPC stream: a flatbuffer table points before its buffer")
        size = struct.unpack_from("<H", buf, vtable)[0]
        self.slots = struct.unpack_from(f"<{max(size - 4, 0) // 2}H", buf, vtable + 4)

    def _at(self, slot: int) -> int | None:
        offset = self.slots[slot] if slot < len(self.slots) else 0
        return self.pos + offset if offset else None

    def scalar(self, slot: int, fmt: str, default: int) -> int:
        at = self._at(slot)
        return default if at is None else int(struct.unpack_from(fmt, self.buf, at)[0])

    def _target(self, slot: int) -> int | None:
        at = self._at(slot)
        return None if at is None else at + struct.unpack_from("<I", self.buf, at)[0]

    def table(self, slot: int) -> _Table | None:
        at = self._target(slot)
        return None if at is None else _Table(self.buf, at)

    def string(self, slot: int) -> str:
        at = self._target(slot)
        if at is None:
            return ""
        length = struct.unpack_from("<I", self.buf, at)[0]
        return _slice(self.buf, at + 4, length).decode("utf-8", "replace")

    def vector(self, slot: int) -> tuple[int, int]:
        """(first element's position, length); (0, 0) when absent."""
        at = self._target(slot)
        return (0, 0) if at is None else (at + 4, struct.unpack_from("<I", self.buf, at)[0])

    def tables(self, slot: int) -> list[_Table]:
        start, length = self.vector(slot)
        _slice(self.buf, start, 4 * length)
        return [_Table(self.buf, start + 4 * i + struct.unpack_from("<I", self.buf, start + 4 * i)[0])
                for i in range(length)]

    def structs(self, slot: int, fmt: str) -> list[tuple[int, ...]]:
        start, length = self.vector(slot)
        size = struct.calcsize(fmt)
        _slice(self.buf, start, size * length)
        return [struct.unpack_from(fmt, self.buf, start + size * i) for i in range(length)]


def _slice(buf: bytes, start: int, length: int) -> bytes:
    if start < 0 or length < 0 or start + length > len(buf):
        raise ValueError(f"malformed Arrow IPC stream: {length} bytes at {start} run past its {len(buf)} bytes")
    return buf[start:start + length]


def _field_type(field: _Table) -> str:
    kind = field.scalar(2, "<B", 0)
    detail = field.table(3)
    if kind == 1:
        return "null"
    if kind == 6:
        return "bool"
    if kind == 2 and detail is not None:
        name = _INT_TYPES.get((detail.scalar(0, "<i", 0), bool(detail.scalar(1, "<B", 0))))
        if name:
            return name
    if kind == 3 and detail is not None and detail.scalar(0, "<h", 0) in (1, 2):
        return "float32" if detail.scalar(0, "<h", 0) == 1 else "float64"
    if kind in _VARIABLE:
        return _VARIABLE[kind]
    if kind == 10 and detail is not None and 0 <= detail.scalar(0, "<h", 0) < len(_UNITS):
        return f"ts[{_UNITS[detail.scalar(0, '<h', 0)]}]"
    raise ValueError(f"Arrow column {field.string(0)!r} has a type this reader does not know (type id {kind})")


def _schema(message: _Table) -> list[tuple[str, str]]:
    schema = message.table(2)
    if schema is None or schema.scalar(0, "<h", 0) != 0:
        raise ValueError("Arrow schema missing or not little-endian")
    fields = []
    for field in schema.tables(1):
        if field.table(4) is not None or field.vector(5)[1]:
            raise ValueError(f"Arrow column {field.string(0)!r} is dictionary-encoded or nested: not supported")
        fields.append((field.string(0), _field_type(field)))
    return fields


# -- reading columns -----------------------------------------------------------------------------
class _Body:
    """A record batch's body and its buffer list, handed out in order."""

    def __init__(self, body: bytes, buffers: list[tuple[int, ...]], variadic: list[int]) -> None:
        self.body, self.buffers, self.variadic = body, iter(buffers), iter(variadic)

    def next(self) -> bytes:
        try:
            offset, length = next(self.buffers)
        except StopIteration:
            raise ValueError("Arrow record batch has fewer buffers than its columns need") from None
        return _slice(self.body, offset, length)


def _valid(bitmap: bytes, count: int, nulls: int) -> list[bool]:
    if nulls == 0:
        return [True] * count
    _slice(bitmap, 0, (count + 7) // 8)
    return [bool(bitmap[i >> 3] >> (i & 7) & 1) for i in range(count)]


def _view_items(count: int, body: _Body) -> list[bytes]:
    """The values of a view-layout column: 16-byte views, short values inline, longer ones in the
    variadic data buffers."""
    views = _slice(body.next(), 0, 16 * count)
    data = [body.next() for _ in range(next(body.variadic, 0))]
    items = []
    for i in range(count):
        length, = struct.unpack_from("<i", views, 16 * i)
        if 0 <= length <= 12:
            items.append(views[16 * i + 4:16 * i + 4 + length])
            continue
        index, offset = struct.unpack_from("<ii", views, 16 * i + 8)
        if length < 0 or not 0 <= index < len(data):
            raise ValueError("Arrow view column points past its data buffers")
        items.append(_slice(data[index], offset, length))
    return items


def _offset_items(kind: str, count: int, body: _Body) -> list[bytes]:
    """The values of an offsets-and-data column (32-bit offsets, 64-bit for the large types)."""
    width = 8 if kind.startswith("large") else 4
    offsets = struct.unpack(f"<{count + 1}{'q' if width == 8 else 'i'}", _slice(body.next(), 0, width * (count + 1)))
    data = body.next()
    return [_slice(data, offsets[i], offsets[i + 1] - offsets[i]) for i in range(count)]


def _column(kind: str, count: int, nulls: int, body: _Body) -> list[Any]:
    if kind == "null":
        return [None] * count
    valid = _valid(body.next(), count, nulls)
    if kind == "bool":
        bits = _slice(body.next(), 0, (count + 7) // 8)
        return [bool(bits[i >> 3] >> (i & 7) & 1) if valid[i] else None for i in range(count)]
    if kind in _FIXED:
        letter = _FIXED[kind]
        data = _slice(body.next(), 0, struct.calcsize(letter) * count)
        values = list(struct.unpack(f"<{count}{letter}", data))
        return [value if ok else None for value, ok in zip(values, valid, strict=True)]
    text = "utf8" in kind
    items = _view_items(count, body) if kind.endswith("_view") else _offset_items(kind, count, body)
    return [(item.decode("utf-8", "replace") if text else item) if ok else None for item, ok in zip(items, valid, strict=True)]


def _batch(message: _Table, body: bytes, fields: list[tuple[str, str]]) -> list[list[Any]]:
    batch = message.table(2)
    if batch is None:
        raise ValueError("Arrow record batch message has no header")
    if batch.table(3) is not None:
        raise ValueError("Arrow record batch body is compressed: not supported")
    nodes = batch.structs(1, "<qq")
    if len(nodes) != len(fields):
        raise ValueError(f"Arrow record batch has {len(nodes)} columns, its schema {len(fields)}")
    if any(not 0 <= count <= MAX_ROWS or not 0 <= nulls <= count for count, nulls in nodes):
        raise ValueError(f"Arrow record batch claims more than {MAX_ROWS} rows, or more nulls than rows")
    start, length = batch.vector(4)
    variadic = [struct.unpack_from("<q", batch.buf, start + 8 * i)[0] for i in range(length)]
    reader = _Body(body, batch.structs(2, "<qq"), variadic)
    return [_column(kind, count, nulls, reader) for (_, kind), (count, nulls) in zip(fields, nodes, strict=True)]


def read(stream: bytes) -> list[Column]:
    """The columns of an Arrow IPC stream (see the module rules); ``ValueError`` when it cannot be read."""
    fields: list[tuple[str, str]] | None = None
    values: list[list[Any]] = []
    pos = 0
    try:
        while pos + 4 <= len(stream):
            if stream[pos:pos + 4] == CONTINUATION:
                pos += 4
            size = struct.unpack_from("<i", stream, pos)[0]
            pos += 4
            if size == 0:
                break
            metadata = _slice(stream, pos, size)
            message = _Table(metadata, struct.unpack_from("<I", metadata, 0)[0])
            body_length = message.scalar(3, "<q", 0)
            body = _slice(stream, pos + size, body_length)
            pos += size + body_length
            kind = message.scalar(1, "<B", 0)
            if kind == _HEADER_SCHEMA and fields is None:
                fields = _schema(message)
                values = [[] for _ in fields]
            elif kind == _HEADER_RECORD_BATCH and fields is not None:
                for column, batch_values in zip(values, _batch(message, body, fields), strict=True):
                    column.extend(batch_values)
            else:
                raise ValueError(f"unexpected Arrow IPC message (header type {kind})")
    except (struct.error, IndexError, OverflowError, MemoryError) as error:
        raise ValueError(f"malformed Arrow IPC stream: {error}") from None
    if fields is None:
        raise ValueError("Arrow IPC stream has no schema")
    return [Column(name, kind, column) for (name, kind), column in zip(fields, values, strict=True)]


# -- writing -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _T:
    """A flatbuffer table to write: scalars ``(slot, struct format, value)`` and references
    ``(slot, child)`` to a table, string, table vector or struct vector."""

    scalars: tuple[tuple[int, str, int], ...] = ()
    refs: tuple[tuple[int, Any], ...] = ()


@dataclass(frozen=True)
class _Structs:
    """A vector of structs, each packed with ``fmt`` (8-byte aligned)."""

    fmt: str
    items: tuple[tuple[int, ...], ...]


class _Builder:
    """Flatbuffer bytes written front to back: a parent first, its children after it, so every
    unsigned offset points forward as the format requires; scalars aligned to their size."""

    def __init__(self, root: _T) -> None:
        self.buf = bytearray(4)
        struct.pack_into("<I", self.buf, 0, self._emit(root))

    def _pad(self, align: int, ahead: int = 0) -> None:
        self.buf.extend(bytes(-(len(self.buf) + ahead) % align))

    def _patch(self, at: int, child: Any) -> None:
        struct.pack_into("<I", self.buf, at, self._emit(child) - at)

    def _emit(self, node: Any) -> int:
        if isinstance(node, str):
            self._pad(4)
            at = len(self.buf)
            data = node.encode()
            self.buf += struct.pack("<I", len(data)) + data + b"\0"
            return at
        if isinstance(node, list):  # a vector of tables
            self._pad(4)
            at = len(self.buf)
            self.buf += struct.pack("<I", len(node)) + bytes(4 * len(node))
            for i, child in enumerate(node):
                self._patch(at + 4 + 4 * i, child)
            return at
        if isinstance(node, _Structs):
            self._pad(8, ahead=4)
            at = len(self.buf)
            self.buf += struct.pack("<I", len(node.items)) + b"".join(struct.pack(node.fmt, *i) for i in node.items)
            return at
        return self._table(node)

    def _table(self, table: _T) -> int:
        fields = [(slot, fmt, value) for slot, fmt, value in table.scalars] + [(slot, "<I", 0) for slot, _ in table.refs]
        place, size = {}, 4
        for slot, fmt, _ in sorted(fields, key=lambda f: -struct.calcsize(f[1])):
            width = struct.calcsize(fmt)
            size += -size % width
            place[slot], size = size, size + width
        size += -size % 4
        count = max(place, default=-1) + 1
        vtable = struct.pack(f"<HH{count}H", 4 + 2 * count, size, *(place.get(slot, 0) for slot in range(count)))
        self._pad(8, ahead=len(vtable))
        self.buf += vtable
        at = len(self.buf)
        self.buf += bytes(size)
        struct.pack_into("<i", self.buf, at, len(vtable))
        for slot, fmt, value in fields:
            struct.pack_into(fmt, self.buf, at + place[slot], value)
        for slot, child in table.refs:
            self._patch(at + place[slot], child)
        return at


_TYPE_TABLES: Final[dict[str, tuple[int, _T]]] = {
    "null": (1, _T()), "bool": (6, _T()), "int32": (2, _T(((0, "<i", 32), (1, "<B", 1)))),
    "int64": (2, _T(((0, "<i", 64), (1, "<B", 1)))), "float64": (3, _T(((0, "<h", 2),))),
    "utf8": (5, _T()), "binary": (4, _T()), "ts[ms]": (10, _T(((0, "<h", 1),))),
}
"""Writable type → (Arrow ``Type`` union id, its type table)."""


def _message(header_type: int, header: _T, body_length: int) -> bytes:
    metadata = bytes(_Builder(_T(((0, "<h", _METADATA_V5), (1, "<B", header_type), (3, "<q", body_length)),
                                 ((2, header),))).buf)
    metadata += bytes(-len(metadata) % 8)
    return CONTINUATION + struct.pack("<i", len(metadata)) + metadata


def _bitmap(flags: Sequence[bool]) -> bytes:
    out = bytearray((len(flags) + 7) // 8)
    for i, flag in enumerate(flags):
        if flag:
            out[i >> 3] |= 1 << (i & 7)
    return bytes(out)


def _buffers(column: Column) -> list[bytes]:
    values = column.values
    if column.type == "null":
        return []
    valid = _bitmap([value is not None for value in values]) if None in values else b""
    if column.type == "bool":
        return [valid, _bitmap([bool(value) for value in values])]
    if column.type in _FIXED:
        letter = _FIXED[column.type]
        return [valid, struct.pack(f"<{len(values)}{letter}", *(value or 0 for value in values))]
    items = [b"" if value is None else value.encode() if isinstance(value, str) else bytes(value) for value in values]
    offsets = [0]
    for item in items:
        offsets.append(offsets[-1] + len(item))
    return [valid, struct.pack(f"<{len(offsets)}i", *offsets), b"".join(items)]


def write(columns: Sequence[Column]) -> bytes:
    """One Arrow IPC stream: the schema of ``columns`` and one record batch holding them (each
    column's type one of ``WRITABLE``, all of the same length)."""
    count = len(columns[0].values) if columns else 0
    for column in columns:
        if column.type not in WRITABLE or len(column.values) != count:
            raise ValueError(f"cannot write column {column.name!r} of type {column.type!r} and "
                             f"{len(column.values)} values (types: {sorted(WRITABLE)}; {count} values)")
    fields = [_T(((1, "<B", 1), (2, "<B", _TYPE_TABLES[c.type][0])),
                 ((0, c.name), (3, _TYPE_TABLES[c.type][1]), (5, []))) for c in columns]
    schema = _message(_HEADER_SCHEMA, _T(((0, "<h", 0),), ((1, fields),)), 0)
    body, spans = bytearray(), []
    for column in columns:
        for buffer in _buffers(column):
            spans.append((len(body), len(buffer)))
            body += buffer + bytes(-len(buffer) % 8)
    nodes = tuple((count, sum(value is None for value in c.values)) for c in columns)
    batch = _T(((0, "<q", count),), ((1, _Structs("<qq", nodes)), (2, _Structs("<qq", tuple(spans)))))
    return schema + _message(_HEADER_RECORD_BATCH, batch, len(body)) + bytes(body) + CONTINUATION + bytes(4)
