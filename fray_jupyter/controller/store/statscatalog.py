"""The stats namespaces the embedded controller keeps, as data: each one's columns by Iris's names
and types (marin-iris 0.2.227 ``iris/cluster/stats/tables.py``, as finelog stores them: ``int`` →
int64, ``float`` → double, ``bool`` → bool, ``bytes`` → binary, ``datetime`` → timestamp[ms], every
column nullable), the row cap that bounds it and who writes it.

Rules:

* ``iris.task_status`` is written by tasks (finelog's ``WriteRows``) and kept newest-per-attempt in
  its own table (``controller.api.taskstatus``); the other namespaces are written by the controller
  itself (the sampler, the transitions, profile captures) and kept as appended rows.
* Each appended namespace is a SQLite table of the same name (schema version 8) holding the
  columns below plus ``job_id`` (the job the row belongs to, so a replaced job takes its rows with
  it); ``ts``-like columns are stored as epoch milliseconds, bools as 0/1.
* A namespace keeps at most ``max_rows`` rows (the oldest go first) and no row older than the
  controller's retention period (``controller.store.retention``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from fray_jupyter.iris.wire import STATUS_TEXT_NAMESPACE

TASK_NAMESPACE: Final[str] = "iris.task"
TASK_EVENT_NAMESPACE: Final[str] = "iris.task_event"
PROFILE_NAMESPACE: Final[str] = "iris.profile"


@dataclass(frozen=True)
class Namespace:
    """One namespace: its name, its ``(column, Arrow type)`` pairs in Iris's order, the column its
    time lives in, the most rows it keeps, and whether tasks write it (``WriteRows``)."""

    name: str
    columns: tuple[tuple[str, str], ...]
    time_column: str
    max_rows: int
    written_by_tasks: bool = False

    @property
    def column_names(self) -> tuple[str, ...]:
        """The column names, in order."""
        return tuple(name for name, _ in self.columns)


_S, _I, _TS, _F, _B, _BIN = "string", "int64", "timestamp[ms]", "double", "bool", "binary"
_DIAGNOSTICS: Final[tuple[tuple[str, str], ...]] = tuple(
    (name, _B if name == "node_unschedulable" else _S) for name in (
        "pod_name", "pod_uid", "pod_deletion_timestamp", "node_name", "node_uid", "node_provider_id", "node_boot_id",
        "node_system_uuid", "node_unschedulable", "pod_tolerations_json", "pod_conditions_json", "node_taints_json",
        "node_conditions_json", "node_labels_json", "node_annotations_json"))
"""``TaskEventDiagnostics``: Kubernetes evidence, always null here (a dataclass base: its fields come first)."""

CATALOG: Final[dict[str, Namespace]] = {ns.name: ns for ns in (
    Namespace(TASK_NAMESPACE, (
        ("task_id", _S), ("attempt_id", _I), ("worker_id", _S), ("ts", _TS), ("cpu_millicores", _I),
        ("memory_mb", _I), ("disk_mb", _I), ("memory_peak_mb", _I), ("accelerator_util_pct", _F),
        ("accelerator_mem_bytes", _I)), "ts", 1_000_000),
    Namespace(TASK_EVENT_NAMESPACE, (*_DIAGNOSTICS, (
        "task_id", _S), ("attempt_id", _I), ("attempt_uid", _S), ("ts", _TS), ("type", _S), ("reason", _S),
        ("message", _S), ("source", _S), ("count", _I)), "ts", 200_000),
    Namespace(PROFILE_NAMESPACE, (
        ("source", _S), ("attempt_id", _I), ("vm_id", _S), ("captured_at", _TS), ("duration_seconds", _I),
        ("type", _S), ("format", _S), ("trigger", _S), ("rate_hz", _I), ("native", _B), ("leaks", _B),
        ("locals_dump", _B), ("profile_data", _BIN)), "captured_at", 2_000),
    Namespace(STATUS_TEXT_NAMESPACE, (
        ("task_id", _S), ("attempt_id", _I), ("ts", _TS), ("status_text_detail_md", _S),
        ("status_text_summary_md", _S)), "ts", 0, written_by_tasks=True),
)}
"""Every namespace the embedded controller answers for, by name."""

APPENDED: Final[tuple[str, ...]] = tuple(name for name, ns in CATALOG.items() if not ns.written_by_tasks)
"""The namespaces kept as appended rows (the controller writes them)."""
