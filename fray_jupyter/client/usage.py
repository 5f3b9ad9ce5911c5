"""How a job's tasks use what they asked for, and what happened to them: read as Iris's dashboard and
CLI read it — SQL over finelog's ``iris.task`` and ``iris.task_event`` namespaces through the
controller's ``StatsService/Query`` proxy (``FrayClient.query_stats``), so the same code serves the
embedded controller, a genuine Iris and a named cluster.

Rules:

* The dashboard's two queries are sent as it writes them: the newest sample per task
  (``latest_usage_sql``, ``QUALIFY``) and a task attempt's history (``usage_history_sql``, newest
  first, at most 200 rows); a job's series reads every sample of its tasks since it was submitted
  (``job_usage_sql``, oldest first, at most ``MAX_SAMPLES`` rows).
* "Now" is a task's newest sample; "peak" the most ``memory_peak_mb`` any of its samples says (every
  attempt's); "requested" the job's ``resources`` (``cpu_millicores``, ``memory_bytes``). A peak
  over a memory request is warned of (``TaskUsage.memory_warning``): a cluster's container is
  killed at its request, where the embedded controller lets it run.
* CPU time is the integral of ``cpu_millicores`` over each attempt's samples (each sample's rate held
  until the next one); a task's wall time is its ``finished_at - started_at`` (up to now while it
  runs); a tree's totals add CPU and wall time over every task of the job and the jobs below it, and
  take the largest peak.
* Events are ``iris.task_event`` rows oldest first, as ``iris task events`` prints them.
* A namespace nobody wrote yet is "table … not found" on finelog (a cluster whose workers sampled
  nothing yet): read as no rows.
* Sizes are shown as the display vocabulary says them (``vocabulary.byte_size``: ``1.9 GiB``,
  ``600 MiB``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from fray_jupyter.client.errors import InvalidRequest
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.usage import MIB, Sample, TaskEvent, TaskUsage, Totals

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient

__all__ = ["MIB", "Sample", "TaskEvent", "TaskUsage", "Totals", "job_totals", "job_usage", "memory_root_cause",
           "stats_rows", "task_events", "totals_over", "tree_totals"]
"""The data classes are ``iris.usage``'s (re-exported: the views read them without the client)."""

MAX_SAMPLES: Final[int] = 50_000
MAX_TREE_JOBS: Final[int] = 500
OOM_MARKERS: Final[tuple[str, ...]] = ("OOMKilled", "OOM-killed", "OOM killed", "out of memory", "OutOfMemory")
SIGKILL_EXIT_CODES: Final[frozenset[int]] = frozenset({137, -9})
_SAMPLE_COLUMNS: Final[str] = "task_id, attempt_id, ts, cpu_millicores, memory_mb, memory_peak_mb, disk_mb"


def sql_string(text: str) -> str:
    """``text`` as an SQL string literal for the stats service's queries (a quote doubled)."""
    return "'" + text.replace("'", "''") + "'"


def latest_usage_sql(task_ids: Iterable[str]) -> str:
    """The dashboard's job-page query: the newest sample of each of ``task_ids``."""
    listed = ", ".join(sql_string(task_id) for task_id in task_ids)
    return ('SELECT task_id, attempt_id, cpu_millicores, memory_mb, memory_peak_mb FROM "iris.task" '
            f"WHERE task_id IN ({listed}) QUALIFY row_number() OVER (PARTITION BY task_id ORDER BY ts DESC) = 1")


def usage_history_sql(task_id: str, attempt_id: int, limit: int = 200) -> str:
    """The dashboard's task-page query: an attempt's newest ``limit`` samples, newest first."""
    return ('SELECT ts, cpu_millicores, memory_mb, memory_peak_mb, disk_mb FROM "iris.task" '
            f"WHERE task_id = {sql_string(task_id)} AND attempt_id = {int(attempt_id)} ORDER BY ts DESC LIMIT {int(limit)}")


def job_usage_sql(task_ids: Iterable[str], since_ms: int) -> str:
    """Every sample of ``task_ids`` since ``since_ms``, oldest first (at most ``MAX_SAMPLES``)."""
    listed = ", ".join(sql_string(task_id) for task_id in task_ids)
    return (f'SELECT {_SAMPLE_COLUMNS} FROM "iris.task" WHERE task_id IN ({listed}) '
            f"AND ts >= to_timestamp_millis({int(since_ms)}) ORDER BY ts ASC LIMIT {MAX_SAMPLES}")


def task_events_sql(task_ids: Iterable[str]) -> str:
    """Every event of ``task_ids``, oldest first."""
    listed = ", ".join(sql_string(task_id) for task_id in task_ids)
    return ('SELECT task_id, attempt_id, ts, type, reason, message, source, count FROM "iris.task_event" '
            f"WHERE task_id IN ({listed}) ORDER BY ts ASC")


def stats_rows(client: FrayClient, sql: str) -> list[dict[str, Any]]:
    """``client.query_stats(sql)``, a namespace not written yet read as no rows (module rules)."""
    try:
        return client.query_stats(sql)
    except InvalidRequest as error:
        if "not found" in str(error):
            return []
        raise


def row_int(value: Any) -> int:
    """A stats row's number as an int (0 for a null or a value of another type)."""
    return int(value) if isinstance(value, int | float) else 0


def job_usage(client: FrayClient, job: job_pb2.JobStatus, since_ms: int | None = None) -> dict[str, TaskUsage]:
    """Task id → its usage, for every task of ``job`` (see the module rules); with ``since_ms``, only
    the samples from then on (a reader that keeps the earlier ones asks for the new ones)."""
    task_ids = [f"{job.job_id}/{index}" for index in range(max(job.task_count, 1))]
    samples: dict[str, list[Sample]] = {task_id: [] for task_id in task_ids}
    since = job.submitted_at.epoch_ms if since_ms is None else max(since_ms, job.submitted_at.epoch_ms)
    for row in stats_rows(client, job_usage_sql(task_ids, since)):
        if row.get("task_id") in samples:
            samples[row["task_id"]].append(Sample(row_int(row.get("ts")), row_int(row.get("attempt_id")),
                                                  row_int(row.get("cpu_millicores")), row_int(row.get("memory_mb")),
                                                  row_int(row.get("memory_peak_mb")), row_int(row.get("disk_mb"))))
    cpu, memory = job.resources.cpu_millicores, job.resources.memory_bytes // MIB
    return {task_id: TaskUsage(task_id, tuple(found), cpu, memory) for task_id, found in samples.items()}


def task_events(client: FrayClient, task_ids: Sequence[str]) -> list[TaskEvent]:
    """The events of ``task_ids``, oldest first."""
    if not task_ids:
        return []
    return [TaskEvent(str(row.get("task_id")), row_int(row.get("attempt_id")), row_int(row.get("ts")), str(row.get("type")),
                      str(row.get("reason")), str(row.get("message")), str(row.get("source")), row_int(row.get("count")))
            for row in stats_rows(client, task_events_sql(task_ids))]


def _wall_seconds(task: job_pb2.TaskStatus, now_ms: int) -> float:
    started = task.started_at.epoch_ms
    if not started:
        return 0.0
    return max(0, (task.finished_at.epoch_ms or now_ms) - started) / 1000


def job_totals(usage: Mapping[str, TaskUsage], tasks: Iterable[job_pb2.TaskStatus], now_ms: int) -> Totals:
    """What one job's ``tasks`` used (``usage`` from ``job_usage``), by the module rules."""
    listed = list(tasks)
    return Totals(sum(one.cpu_seconds for one in usage.values()) / 3600,
                  sum(_wall_seconds(task, now_ms) for task in listed) / 3600,
                  max((one.peak_memory_mb for one in usage.values()), default=0), len(listed))


def totals_over(client: FrayClient, jobs: Iterable[job_pb2.JobStatus]) -> Totals:
    """What the tasks of ``jobs`` (the first ``MAX_TREE_JOBS``) used together, by the module rules."""
    now_ms = int(time.time() * 1000)
    totals = Totals(0.0, 0.0, 0, 0)
    for job in list(jobs)[:MAX_TREE_JOBS]:
        totals = totals.plus(job_totals(job_usage(client, job), client.tasks(job.job_id), now_ms))
    return totals


def tree_totals(client: FrayClient, job_id: str) -> Totals:
    """CPU hours, wall hours and the largest peak over ``job_id`` and every job below it (at most
    ``MAX_TREE_JOBS`` jobs, the first found breadth first)."""
    queue, found = [client.status(job_id)], list[job_pb2.JobStatus]()
    while queue and len(found) < MAX_TREE_JOBS:
        job = queue.pop(0)
        found.append(job)
        if job.has_children:
            queue.extend(client.children(job.job_id))
    return totals_over(client, found)


def memory_root_cause(task: job_pb2.TaskStatus, usage: TaskUsage | None) -> str | None:
    """The root-cause line about a failed task's memory, None without samples: "OOM-killed at 1.9 GiB
    of 2 GiB requested" when its error says it ran out of memory (``OOM_MARKERS``: Kubernetes'
    ``OOMKilled``, a kernel's "out of memory"); "killed by SIGKILL (possibly OOM) at …" when it was
    SIGKILLed (exit code 137, or -9 from a process runtime); else "peak memory … requested". A task
    no sample saw holding memory (it ended before its first reading) has no such line."""
    if usage is None or not usage.samples or usage.peak_memory_mb <= 0:
        return None
    error = task.error.lower()
    if any(marker.lower() in error for marker in OOM_MARKERS):
        return f"OOM-killed at {usage.memory_words()}"
    if task.exit_code in SIGKILL_EXIT_CODES or "killed by sigkill" in error:
        return f"killed by SIGKILL (possibly OOM) at {usage.memory_words()}"
    return f"peak memory {usage.memory_words()}"
