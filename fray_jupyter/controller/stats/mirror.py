"""The stats namespaces as Arrow record batches, the form the SQL engine reads (``controller.stats.sqlquery``):
kept in memory beside the store's rows, so a query never exports a whole table.

Rules:

* An appended namespace's batches hold exactly its stored rows: rows appended since the last read
  are read by rowid (``Store.stats_since``) and added as a batch; rows pruned oldest-first are cut
  off the front; when rows went with their job (``Store.stats_generation`` moved) it is read again
  whole.
* Many small batches are merged into one once there are more than ``MAX_BATCHES`` (the sampler adds
  one per pass), so a query scans a few large batches.
* ``iris.task_status`` (kept newest-per-attempt, updated in place) is read again whole whenever
  anything in the store changed since its last read; it holds one row per attempt.
* Values become Arrow values by the catalog's types (epoch ms → timestamp[ms], 0/1 → bool).
* Each namespace is handed out as a ``Snapshot``: its batches (at least one, an empty one when it
  holds no rows) and a version that moves exactly when they change (rows added or cut, read again
  whole, or ``iris.task_status``'s rows differ from the last read), so a reader may keep what it
  built from a version (``controller.stats.session``) until the version moves.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from fray_jupyter.controller.store.statscatalog import APPENDED, CATALOG, Namespace
from fray_jupyter.iris.wire import STATUS_TEXT_NAMESPACE

if TYPE_CHECKING:
    from fray_jupyter.controller.store.store import Store

MAX_BATCHES: Final[int] = 16


def _pa() -> Any:
    return importlib.import_module("pyarrow")


def schema_of(namespace: Namespace) -> Any:
    """The Arrow schema of ``namespace`` (every column nullable)."""
    pa = _pa()
    return pa.schema([pa.field(name, pa.type_for_alias(kind) if not kind.startswith("timestamp") else pa.timestamp("ms"))
                      for name, kind in namespace.columns])


def batch_of(namespace: Namespace, rows: Sequence[Sequence[Any]]) -> Any:
    """One record batch of ``rows`` (tuples in the namespace's column order, store values)."""
    pa = _pa()
    schema = schema_of(namespace)
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in namespace.columns]
    arrays = []
    for (_, kind), field, values in zip(namespace.columns, schema, columns, strict=True):
        if kind == "bool":
            values = tuple(None if value is None else bool(value) for value in values)
        arrays.append(pa.array(values, type=field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


@dataclass(frozen=True)
class Snapshot:
    """One namespace as the store holds it now: its batches and their version (the module rules)."""

    version: int
    batches: tuple[Any, ...]

    @property
    def rows(self) -> int:
        """How many rows the batches hold."""
        return sum(batch.num_rows for batch in self.batches)


class _Appended:
    """One appended namespace's batches, with the rowid each row was stored under."""

    def __init__(self, namespace: Namespace) -> None:
        self.namespace = namespace
        self.batches: list[Any] = []
        self.rowids: list[Any] = []
        self.last = 0

    def add(self, rows: list[tuple[Any, ...]]) -> bool:
        """Add ``rows`` (``(rowid, *columns)``); whether there were any."""
        if not rows:
            return False
        pa = _pa()
        self.rowids.append(pa.array([row[0] for row in rows], type=pa.int64()))
        self.batches.append(batch_of(self.namespace, [row[1:] for row in rows]))
        self.last = rows[-1][0]
        if len(self.batches) > MAX_BATCHES:
            table = pa.Table.from_batches(self.batches, schema=schema_of(self.namespace)).combine_chunks()
            self.batches = table.to_batches()
            self.rowids = [pa.concat_arrays(self.rowids)]
        return True

    def cut(self, keep_from: int) -> bool:
        """Drop the rows stored under rowids below ``keep_from``; whether any were held."""
        pc = importlib.import_module("pyarrow.compute")
        held = sum(len(rowids) for rowids in self.rowids)
        kept = [(rowids, batch) for rowids, batch in zip(self.rowids, self.batches, strict=True)
                if len(rowids) and rowids[-1].as_py() >= keep_from]
        if kept and kept[0][0][0].as_py() < keep_from:
            mask = pc.greater_equal(kept[0][0], keep_from)
            kept[0] = (kept[0][0].filter(mask), kept[0][1].filter(mask))
        self.rowids = [rowids for rowids, _ in kept]
        self.batches = [batch for _, batch in kept]
        return sum(len(rowids) for rowids in self.rowids) != held


class StatsMirror:
    """Every namespace's batches, kept up to date with the store (see the module rules)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._versions = itertools.count(1)
        self._empty = {name: batch_of(CATALOG[name], []) for name in (*APPENDED, STATUS_TEXT_NAMESPACE)}
        self._appended: dict[str, _Appended] = {}
        self._appended_versions: dict[str, int] = {}
        self._reset()
        self._generation = -1
        self._status = Snapshot(next(self._versions), (self._empty[STATUS_TEXT_NAMESPACE],))
        self._status_changes = -1

    def _reset(self) -> None:
        self._appended = {name: _Appended(CATALOG[name]) for name in APPENDED}
        self._appended_versions = {name: next(self._versions) for name in APPENDED}

    def cut(self, namespace: str, keep_from: int) -> None:
        """Rows of ``namespace`` below rowid ``keep_from`` were pruned from the store."""
        if keep_from and self._appended[namespace].cut(keep_from):
            self._appended_versions[namespace] = next(self._versions)

    def snapshots(self) -> dict[str, Snapshot]:
        """Namespace → its ``Snapshot`` as the store holds it now."""
        generation = self.store.stats_generation()
        if generation != self._generation:
            self._reset()
            self._generation = generation
        found: dict[str, Snapshot] = {}
        for name, mirror in self._appended.items():
            if mirror.add(self.store.stats_since(name, mirror.last)):
                self._appended_versions[name] = next(self._versions)
            found[name] = Snapshot(self._appended_versions[name], tuple(mirror.batches) or (self._empty[name],))
        changes = self.store.changes()
        if changes != self._status_changes:
            status = batch_of(CATALOG[STATUS_TEXT_NAMESPACE], self.store.status_text_rows())
            if not status.equals(self._status.batches[0]):
                self._status = Snapshot(next(self._versions), (status,))
            self._status_changes = changes
        found[STATUS_TEXT_NAMESPACE] = self._status
        return found
