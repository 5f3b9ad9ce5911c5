"""The embedded controller's stats namespaces, as finelog keeps Iris's: rows appended by the
controller itself (``iris.task`` by the sampler, ``iris.task_event`` by the transitions,
``iris.profile`` by profile captures) and by tasks (``iris.task_status``), read with SQL
(``controller.stats.sqlquery``).

Rules:

* Rows are kept durably in the controller's store (``controller.store.statsstore``): they survive a restart,
  and a replaced job's rows go with it.
* Retention, like the rest of the controller's state (``controller.store.retention``): no row older than
  the retention period (``--retention-days``, at least an hour: ``keep_for``), and at most each
  namespace's ``max_rows`` (``controller.store.statscatalog``); the oldest rows go first, checked at most
  every ``PRUNE_EVERY_MS``.
* ``record_task_events`` is how the transitions' decisions (``taskevents.TaskEvent``) are kept: one
  ``iris.task_event`` row each, keyed on its attempt's uid (an event of an attempt the store does not
  hold is left out), ``source`` ``taskevents.SOURCE`` and ``count`` 1.
* ``record_profile`` is how a profile capture is kept (Iris's ``IrisProfile`` row; its ``type``,
  ``format`` and ``trigger`` are checked against Iris's values).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from fray_jupyter.controller.kernel.taskevents import SOURCE, TaskEvent
from fray_jupyter.controller.runtime.runner import WORKER_ID
from fray_jupyter.controller.stats.mirror import StatsMirror
from fray_jupyter.controller.stats.sqlquery import new_session, run
from fray_jupyter.controller.store.retention import DEFAULT_DAYS
from fray_jupyter.controller.store.statscatalog import (
    APPENDED,
    CATALOG,
    PROFILE_NAMESPACE,
    TASK_EVENT_NAMESPACE,
)

if TYPE_CHECKING:
    from fray_jupyter.controller.store.store import Store

PRUNE_EVERY_MS: Final[int] = 60_000
MIN_RETENTION_MS: Final[int] = 3_600_000
PROFILE_TYPES: Final[frozenset[str]] = frozenset({"cpu", "memory", "thread"})
PROFILE_FORMATS: Final[frozenset[str]] = frozenset({"raw", "flamegraph", "speedscope", "html", "table", "stats"})
PROFILE_TRIGGERS: Final[frozenset[str]] = frozenset({"periodic", "on_demand"})


def _now_ms() -> int:
    return int(time.time() * 1000)


class Stats:
    """The namespaces over ``store`` (see the module rules); ``retention_days`` bounds their age."""

    def __init__(self, store: Store, retention_days: float = DEFAULT_DAYS) -> None:
        self.store = store
        self.retention_ms = MIN_RETENTION_MS
        self.keep_for(retention_days)
        self.mirror = StatsMirror(store)
        self.session = new_session()
        self._pruned_ms = 0

    def keep_for(self, days: float) -> None:
        """Keep rows ``days`` days (the controller's ``--retention-days``), and never less than
        ``MIN_RETENTION_MS``, so a running job's usage stays readable even with ``--retention-days 0``."""
        self.retention_ms = max(int(days * 86_400_000), MIN_RETENTION_MS)

    def append(self, namespace: str, job_id: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Append ``rows`` of an appended namespace for ``job_id`` (see the catalog for the columns)."""
        if namespace not in APPENDED:
            raise ValueError(f"namespace {namespace!r} is not appended by the controller (it appends: {APPENDED})")
        if rows:
            self.store.append_stats(namespace, job_id, rows)

    def prune(self, now_ms: int | None = None) -> None:
        """Drop rows past the retention bounds (at most once per ``PRUNE_EVERY_MS`` unless ``now_ms``
        is given)."""
        now = _now_ms() if now_ms is None else now_ms
        if now_ms is None and now - self._pruned_ms < PRUNE_EVERY_MS:
            return
        self._pruned_ms = now
        for name in APPENDED:
            self.mirror.cut(name, self.store.prune_stats(name, now - self.retention_ms, CATALOG[name].max_rows))

    def query(self, sql: str) -> tuple[bytes, int]:
        """``sqlquery.run`` over every namespace as the store holds it now, in this object's session
        (``controller.stats.session``: kept between queries)."""
        self.prune()
        return run(self.session, self.mirror.snapshots(), sql)

    def record_task_events(self, events: Sequence[TaskEvent]) -> None:
        """Keep ``events`` in ``iris.task_event``, one row each, under its job (the module rule)."""
        rows: dict[str, list[dict[str, Any]]] = {}
        uids: dict[tuple[str, int, int], str] = {}
        for event in events:
            if event.attempt < 0:
                continue
            key = (event.job_id, event.idx, event.attempt)
            if key not in uids:
                attempts = self.store.attempts(event.job_id, event.idx)
                uids.update({(a.job_id, a.idx, a.attempt): a.uid for a in attempts})
            uid = uids.get(key)
            if uid is None:
                continue
            rows.setdefault(event.job_id, []).append({
                "task_id": f"{event.job_id}/{event.idx}", "attempt_id": event.attempt, "attempt_uid": uid,
                "ts": event.ts_ms, "type": event.severity, "reason": event.reason, "message": event.message,
                "source": SOURCE, "count": 1})
        for job_id, job_rows in rows.items():
            self.append(TASK_EVENT_NAMESPACE, job_id, job_rows)

    def record_profile(self, *, source: str, job_id: str, attempt_id: int | None, captured_at_ms: int,
                       duration_seconds: int, profile_type: str, profile_format: str, trigger: str,
                       profile_data: bytes, rate_hz: int | None = None, native: bool | None = None,
                       leaks: bool | None = None, locals_dump: bool | None = None, vm_id: str = WORKER_ID) -> None:
        """Keep one profile capture in ``iris.profile`` (Iris's ``IrisProfile``): ``source`` the task
        (``/u/job/0``) or ``/system/process``, ``job_id`` the job it belongs to ("" for none);
        ValueError naming a ``profile_type`` / ``profile_format`` / ``trigger`` Iris does not know."""
        for what, value, allowed in (("type", profile_type, PROFILE_TYPES), ("format", profile_format, PROFILE_FORMATS),
                                     ("trigger", trigger, PROFILE_TRIGGERS)):
            if value not in allowed:
                raise ValueError(f"profile {what} {value!r} is not one of {sorted(allowed)}")
        self.store.append_stats(PROFILE_NAMESPACE, job_id, [{
            "source": source, "attempt_id": attempt_id, "vm_id": vm_id, "captured_at": captured_at_ms,
            "duration_seconds": duration_seconds, "type": profile_type, "format": profile_format, "trigger": trigger,
            "rate_hz": rate_hz, "native": native, "leaks": leaks, "locals_dump": locals_dump,
            "profile_data": profile_data}])
