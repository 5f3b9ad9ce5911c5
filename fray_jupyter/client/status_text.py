"""Task status text — what a running task reports about itself (Levanter: step/total, loss, MFU, ETA
and its W&B link) — read as Iris's dashboard reads it: SQL over finelog's ``iris.task_status``
namespace through the controller's ``StatsService.Query`` proxy. A real Iris controller proxies its
finelog there; the embedded controller answers from its own store (``controller.api.taskstatus``).

Rules:

* One query per job: for each of its task ids, the newest row reported since the job was submitted
  (newest ``ts``, then highest ``attempt_id``). The SQL is plain enough for both DataFusion and
  SQLite: a window function in a subquery, no ``QUALIFY`` or ``INTERVAL``.
* Task ids are quoted as SQL strings (quotes doubled), as the dashboard quotes them.
* Each report has two markdown texts: ``detail_md`` (the task page's) and ``summary_md`` (the one
  line a job's task table shows), and when it was made (``ts_ms``, epoch ms: what "reported 4 min
  ago" counts from; not part of a report's equality).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fray_jupyter.client.usage import sql_string
from fray_jupyter.iris import arrow_ipc
from fray_jupyter.iris.wire import STATUS_TEXT_NAMESPACE


@dataclass(frozen=True)
class StatusText:
    """A task's newest status report: its markdown detail and summary, the attempt that sent it, and
    when (epoch ms; 0 when unknown)."""

    detail_md: str
    summary_md: str
    attempt: int
    ts_ms: int = field(default=0, compare=False)


def status_text_sql(task_ids: Iterable[str], since_ms: int) -> str:
    """The SQL for the newest report of each of ``task_ids`` made at or after ``since_ms``."""
    listed = ", ".join(sql_string(task_id) for task_id in task_ids)
    return (
        "SELECT task_id, attempt_id, ts, status_text_detail_md, status_text_summary_md FROM ("
        "SELECT task_id, attempt_id, ts, status_text_detail_md, status_text_summary_md, "
        "row_number() OVER (PARTITION BY task_id ORDER BY ts DESC, attempt_id DESC) AS newest "
        f'FROM "{STATUS_TEXT_NAMESPACE}" WHERE task_id IN ({listed}) AND ts >= to_timestamp_millis({int(since_ms)})'
        ") AS reports WHERE newest = 1"
    )


def status_texts(answer: Mapping[str, Any]) -> dict[str, StatusText]:
    """Task id → its report, from a Connect JSON ``QueryResponse`` to ``status_text_sql``;
    ``ValueError`` when the answer is not such a table. An answer of no rows (``rowCount`` 0, which
    JSON leaves out) is read without decoding its table, so pyarrow is not imported for a job whose
    tasks reported nothing (most jobs; the sidebar's first job read waited on that import)."""
    found: dict[str, StatusText] = {}
    for row in arrow_ipc.query_rows(answer):
        task_id = row.get("task_id")
        if isinstance(task_id, str):
            found[task_id] = StatusText(str(row.get("status_text_detail_md") or ""),
                                        str(row.get("status_text_summary_md") or ""), int(row.get("attempt_id") or 0),
                                        int(ts) if isinstance(ts := row.get("ts"), int | float) else 0)
    return found
