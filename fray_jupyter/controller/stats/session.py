"""What the stats SQL engine (``controller.stats.sqlquery``) keeps between queries: one DataFusion
session with the namespaces registered as in-memory tables, and the plans of recent queries. Iris's
dashboard asks the same questions again and again (the newest sample of each of a job's tasks, with
thousands of task ids in the SQL): parsing and planning such a statement costs more than running it.

Rules:

* The session (its context, built by the caller's ``new_context`` at first use) lives as long as its
  owner. A namespace's table changes only when its ``Snapshot.version`` moved
  (``controller.stats.mirror``): when its new batches only add to the registered ones (the sampler
  appending), the added batches are inserted into the registered table (the plans kept over it stay,
  each dropping its physical plan, which holds the old batches); otherwise the namespace is
  registered anew and every kept plan that names it is dropped. So no plan ever reads rows the
  store no longer holds.
* A query's plan is kept (``keep``), keyed on its exact SQL text, with the namespaces its logical plan
  names (each namespace whose name occurs anywhere in the plan's text: more than it reads, never
  fewer). Its logical plan is optimized again on each use, so ``now()`` is read afresh. Its physical
  plan is kept too only while its tables are unchanged and only when running it again is the same as
  planning it again (``reusable``): one output partition, no function DataFusion fixes when it plans
  (``now()``, ``current_date()``, ``current_time()``), and only operators in ``REUSABLE_OPERATORS``
  (none that keeps state from one run to the next: no join, top-K sort, aggregate, repartition or
  subquery; those are also the operators that build DataFusion's dynamic filters).
* At most ``MAX_PLANS`` plans and ``MAX_PLANS_SQL_CHARS`` characters of their SQL are kept; the
  least recently used go first. One caller at a time (the controller's core is single-threaded).
"""

from __future__ import annotations

import dataclasses
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from fray_jupyter.controller.stats.mirror import Snapshot

MAX_PLANS: Final[int] = 16
MAX_PLANS_SQL_CHARS: Final[int] = 4_000_000
REUSABLE_OPERATORS: Final[frozenset[str]] = frozenset({
    "DataSourceExec", "FilterExec", "ProjectionExec", "SortExec", "BoundedWindowAggExec", "WindowAggExec",
    "CoalesceBatchesExec", "CoalescePartitionsExec", "GlobalLimitExec", "LocalLimitExec", "EmptyExec",
    "PlaceholderRowExec", "CooperativeExec"})
"""Operators that start afresh each time they run (a top-K ``SortExec``, whose filter is learnt as it
runs, is not one: see ``reusable``)."""
_PLANNING_TIME_CALL: Final[re.Pattern[str]] = re.compile(r"\b(?:now|current_date|current_time)\(")
_OPERATOR: Final[re.Pattern[str]] = re.compile(r"\w+")
_INCOMING: Final[str] = "incoming"


@dataclass(frozen=True)
class Plan:
    """One query's kept plan: its logical plan, its result's Arrow schema, the namespaces it names,
    whether it calls a function fixed at planning, and its physical plan while it may run again (else None)."""

    logical: Any
    schema: Any
    names: frozenset[str]
    timed: bool
    physical: Any = None


def _quoted(namespace: str) -> str:
    """``namespace`` as a table name in DataFusion's SQL (``"iris.task"``)."""
    return '"' + namespace.replace('"', '""') + '"'


def reusable(physical: Any) -> bool:
    """Whether ``physical`` has one output partition and only ``REUSABLE_OPERATORS`` (no top-K sort)."""
    if physical.partition_count != 1:
        return False
    pending = [physical]
    while pending:
        node = pending.pop()
        shown = node.display()
        operator = _OPERATOR.match(shown)
        if operator is None or operator[0] not in REUSABLE_OPERATORS or "TopK" in shown.partition("expr=")[0]:
            return False
        pending.extend(node.children())
    return True


class Session:
    """The kept session and plans (see the module rules); ``new_context`` builds the DataFusion context."""

    def __init__(self, new_context: Callable[[], Any]) -> None:
        self._new_context = new_context
        self._context: Any = None
        self._registered: dict[str, Snapshot] = {}
        self._plans: OrderedDict[str, Plan] = OrderedDict()

    @property
    def context(self) -> Any:
        """The DataFusion context queries run in (built at first use)."""
        if self._context is None:
            self._context = self._new_context()
        return self._context

    @property
    def sizes(self) -> dict[str, int]:
        """Namespace → the rows registered for it."""
        return {name: held.rows for name, held in self._registered.items()}

    def sync(self, tables: Mapping[str, Snapshot]) -> None:
        """Bring each namespace of ``tables`` whose version moved up to date (the module rules)."""
        context = self.context
        for name, snapshot in tables.items():
            held = self._registered.get(name)
            if held is not None and held.version == snapshot.version:
                continue
            self._registered[name] = snapshot
            if held is not None and len(held.batches) < len(snapshot.batches) and all(
                    old is new for old, new in zip(held.batches, snapshot.batches)):
                self._insert(name, snapshot.batches[len(held.batches):])
                stale = {sql: dataclasses.replace(plan, physical=None)
                         for sql, plan in self._plans.items() if name in plan.names}
                self._plans.update(stale)
                continue
            if held is not None:
                context.deregister_table(_quoted(name))
            context.register_record_batches(_quoted(name), [list(snapshot.batches)])
            for sql in [sql for sql, plan in self._plans.items() if name in plan.names]:
                del self._plans[sql]

    def _insert(self, name: str, batches: tuple[Any, ...]) -> None:
        """Append ``batches`` to the table registered for ``name`` (through a table that exists only
        meanwhile: queries never see it)."""
        self.context.register_record_batches(_INCOMING, [list(batches)])
        try:
            self.context.sql(f"INSERT INTO {_quoted(name)} SELECT * FROM {_INCOMING}").collect()
        finally:
            self.context.deregister_table(_INCOMING)

    def plan(self, sql: str) -> Plan | None:
        """The kept plan of ``sql``, or None."""
        found = self._plans.get(sql)
        if found is not None:
            self._plans.move_to_end(sql)
        return found

    def keep(self, sql: str, logical: Any, schema: Any, physical: Any) -> None:
        """Keep the plan of ``sql`` planned as ``logical`` then ``physical`` (the physical plan only
        when it may run again), within the bounds."""
        kept = self._plans.get(sql)
        if kept is None or kept.logical is not logical:
            shown = logical.display_indent()
            kept = Plan(logical, schema, frozenset(name for name in self._registered if name in shown),
                        bool(_PLANNING_TIME_CALL.search(shown)))
        if len(sql) > MAX_PLANS_SQL_CHARS:
            return
        self._plans[sql] = dataclasses.replace(kept, physical=None if kept.timed or not reusable(physical) else physical)
        self._plans.move_to_end(sql)
        while len(self._plans) > MAX_PLANS or sum(map(len, self._plans)) > MAX_PLANS_SQL_CHARS:
            self._plans.popitem(last=False)
