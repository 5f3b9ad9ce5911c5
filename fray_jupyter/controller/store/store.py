"""SQLite persistence for the embedded controller: jobs, tasks and attempts (their rows are ``rows``),
log lines (``logstore``), status text, endpoints (``endpointstore``), stats (``statsstore``) and users'
budgets (``userstore``); every SQL statement of the controller's tables is in these modules.

One file, ``<state dir>/controller.sqlite3`` (created 0600: it holds jobs' env vars), in WAL mode with ``synchronous=NORMAL``: a
committed transaction survives the controller being killed (even ``kill -9``); only a power
loss can drop the last few. The store is used from one thread (the controller's event loop);
every method is one short statement or one transaction. Log lines arrive in batches
(``append_logs``) so a chatty task costs one commit per batch, not per line. Reads of a job never
read its stored launch request (a sweep's can be megabytes): ``launch_request`` does.

Schema versions: the tables are ``schema.MIGRATIONS`` applied in order (``PRAGMA user_version``
counts them); a store newer than this code is refused (``SchemaTooNew``) rather than misread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple

from fray_jupyter.controller.kernel.rows import AttemptRow, JobRow, TaskRow
from fray_jupyter.controller.store.endpointstore import EndpointTables
from fray_jupyter.controller.store.logstore import LogTables, like_pattern
from fray_jupyter.controller.store.schema import MIGRATIONS, SCHEMA_VERSION
from fray_jupyter.controller.store.statsstore import StatsTables
from fray_jupyter.controller.store.userstore import UserTables
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.iris.states import JOB_STATE_SORT_ORDER, descendant_bounds, parent_job_id

C = controller_pb2.Controller


class SchemaTooNew(RuntimeError):
    """The store was written by a newer fray-jupyter (its ``user_version`` is above ours)."""


JobSort = Literal["date", "name", "state", "failures", "preemptions"]
"""What ``JobsPage`` sorts by: submission time, name, state (``iris.states.JOB_STATE_SORT_ORDER``),
failure or preemption count."""
_SORT_SQL: Final[dict[JobSort, str]] = {
    "date": "submitted_ms", "name": "name", "failures": "failure_count", "preemptions": "preemption_count",
    "state": "CASE state " + " ".join(f"WHEN {state} THEN {rank}" for state, rank in JOB_STATE_SORT_ORDER.items())
             + " ELSE 99 END",
}


@dataclass(frozen=True)
class JobsPage:
    """One page of jobs: ``limit`` rows from ``offset``, only roots (``roots_only``) or only the
    direct children of ``parent_job_id``, only in ``state``, whose name contains ``name_contains``
    and whose id starts with ``id_prefix`` (both literally), sorted by ``sort`` (ties by row id, in
    the same direction)."""

    limit: int
    offset: int = 0
    roots_only: bool = False
    parent_job_id: str | None = None
    state: int | None = None
    name_contains: str = ""
    id_prefix: str = ""
    sort: JobSort = "date"
    descending: bool = True


class Descendant(NamedTuple):
    """A job below another (``Store.descendants``): what walking a tree needs of it."""

    job_id: str
    replicas: int


ID_LIST_CHUNK: Final[int] = 500
"""Ids per ``IN (…)`` list when a lookup takes any number of them (far under SQLite's limit on
bound parameters)."""


def _id_lists(ids: Sequence[str]) -> Iterator[tuple[str, list[str]]]:
    """``ids`` in chunks of ``ID_LIST_CHUNK``, each with its ``?, ?, …`` placeholders."""
    for start in range(0, len(ids), ID_LIST_CHUNK):
        chunk = list(ids[start:start + ID_LIST_CHUNK])
        yield ", ".join("?" * len(chunk)), chunk


def _columns(row_type: type[Any]) -> str:
    return ", ".join(field.name for field in fields(row_type))


_JOB_COLUMNS: Final[str] = ", ".join("NULL" if field.name == "request" else field.name for field in fields(JobRow))
"""The columns a job is read with: all but its request blob (read as NULL)."""
_TASK_COLUMNS: Final[str] = _columns(TaskRow)
_ATTEMPT_COLUMNS: Final[str] = _columns(AttemptRow)


class Store(LogTables, EndpointTables, StatsTables, UserTables):
    """The controller's tables (see ``MIGRATIONS``). Methods name what they read or change."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.path = path
        path.touch(mode=0o600, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._migrate()
        self._define_log_functions()
        self.on_change: Callable[[str], None] = lambda job_id: None
        """Called with the job id after every write to a job, its tasks or its logs, and with its
        parent's id too when a child job is added, removed or changes state (the change feed)."""

    def _migrate(self) -> None:
        """Bring the tables to ``SCHEMA_VERSION`` by ``MIGRATIONS``, each in one transaction."""
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(f"{self.path} has schema version {version}, newer than this fray-jupyter's "
                               f"{SCHEMA_VERSION}: upgrade fray-jupyter or use another --state-dir")
        for number in range(version, SCHEMA_VERSION):
            statements = [part.strip() for part in MIGRATIONS[number].split(";\n") if part.strip()]
            with self.transaction():
                for statement in statements:
                    self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {number + 1}")

    def schema_version(self) -> int:
        """``PRAGMA user_version``: how many ``MIGRATIONS`` this store has applied."""
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    def close(self) -> None:
        """Close the connection (the WAL is checkpointed by SQLite)."""
        self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group writes into one atomic commit (nesting is not supported)."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # -- jobs ---------------------------------------------------------------------------------
    def insert_job(self, job: JobRow) -> JobRow:
        """Insert ``job`` and its ``job.replicas`` PENDING tasks; returns it with its row id."""
        if job.request is None:
            raise ValueError(f"job {job.job_id} has no launch request to store")
        names = [field.name for field in fields(JobRow)][1:]
        cursor = self._db.execute(
            f"INSERT INTO jobs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            [getattr(job, name) for name in names],
        )
        job.id = int(cursor.lastrowid or 0)
        self._db.executemany(
            "INSERT INTO tasks (job_id, idx, state) VALUES (?, ?, ?)",
            [(job.job_id, index, job_pb2.TASK_STATE_PENDING) for index in range(job.replicas)],
        )
        self._changed(job.job_id, tree=True)
        return job

    def delete_tree(self, job_id: str) -> tuple[list[str], list[AttemptRow]]:
        """Forget a job and all its descendants with their tasks, attempts and logs (call inside
        ``transaction()``), as Iris's delete cascades down ``parent_job_id``. Their unfinished
        attempts with a process are kept in ``stray_processes`` (for ``recover`` to kill after a
        crash). Returns the ids deleted (the job first, then its descendants in submission order)
        and those attempts."""
        deleted = [job_id, *(row.job_id for row in self.descendants(job_id))]
        live = [attempt for one in deleted for attempt in self.attempts(one) if attempt.finished_ms is None]
        for attempt in live:
            if attempt.pid and attempt.pgid:
                self.add_stray(attempt.uid, attempt.pid, attempt.pgid, attempt.proc_start)
        for one in deleted:
            self._delete_logs(one)
            for table in ("attempt_outputs", '"iris.task_status"', "endpoints", "attempts", "tasks", "jobs"):
                self._db.execute(f"DELETE FROM {table} WHERE job_id = ?", (one,))
        for one in deleted:
            self._changed(one, tree=True)
        return deleted, live

    def _changed(self, job_id: str, *, tree: bool) -> None:
        """Report a write to ``job_id``, and to its parent when ``tree`` (the child came, went or
        changed state)."""
        self.on_change(job_id)
        if tree and (parent := parent_job_id(job_id)):
            self.on_change(parent)

    # -- trees --------------------------------------------------------------------------------
    def descendants(self, job_id: str) -> list[Descendant]:
        """Every job below ``job_id`` (children, theirs, …), in submission order (a parent before
        its children): ids and task counts only, never the stored requests (a sweep's can be
        megabytes, and a tree's log reads ask for its jobs at every poll)."""
        low, high = descendant_bounds(job_id)
        return [Descendant(*row) for row in self._db.execute(
            "SELECT job_id, replicas FROM jobs WHERE job_id >= ? AND job_id < ? ORDER BY id", (low, high))]

    def parents_among(self, job_ids: Sequence[str]) -> set[str]:
        """Those of ``job_ids`` that have at least one child job (in any state)."""
        found: set[str] = set()
        for marks, chunk in _id_lists(job_ids):
            found.update(row[0] for row in self._db.execute(
                f"SELECT DISTINCT parent_job_id FROM jobs WHERE parent_job_id IN ({marks})", chunk))
        return found

    # -- retention ----------------------------------------------------------------------------
    def job_row_ids(self) -> set[int]:
        """Row ids of every stored job."""
        return {row[0] for row in self._db.execute("SELECT id FROM jobs")}

    def finished_jobs_with_files(self) -> list[JobRow]:
        """Finished jobs whose files retention has not removed yet, oldest finish first."""
        rows = self._db.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE finished_ms IS NOT NULL AND cleaned_ms IS NULL "
                                "ORDER BY finished_ms, id").fetchall()
        return [JobRow(*row) for row in rows]

    def bundle_in_use(self, bundle_path: str) -> bool:
        """Whether a job whose files are kept still uses this bundle."""
        return self._db.execute("SELECT 1 FROM jobs WHERE bundle_path = ? AND cleaned_ms IS NULL LIMIT 1",
                                (bundle_path,)).fetchone() is not None

    def retention_counts(self) -> dict[str, int]:
        """Jobs (all, unfinished, finished with files, cleaned) and stored log lines."""
        total, unfinished, with_files, cleaned = self._db.execute(
            "SELECT count(*), sum(finished_ms IS NULL), sum(finished_ms IS NOT NULL AND cleaned_ms IS NULL), "
            "sum(cleaned_ms IS NOT NULL) FROM jobs").fetchone()
        lines = self.log_line_total()
        return {"jobs": int(total), "jobs_unfinished": int(unfinished or 0), "jobs_with_files": int(with_files or 0),
                "jobs_cleaned": int(cleaned or 0), "log_lines": int(lines)}

    # -- stray processes ----------------------------------------------------------------------
    def add_stray(self, attempt_uid: str, pid: int, pgid: int, proc_start: str) -> None:
        """Remember the live process group of a replaced job's attempt."""
        self._db.execute("INSERT OR REPLACE INTO stray_processes (attempt_uid, pid, pgid, proc_start) "
                         "VALUES (?, ?, ?, ?)", (attempt_uid, pid, pgid, proc_start))

    def remove_stray(self, attempt_uid: str) -> None:
        """That attempt's processes have exited."""
        self._db.execute("DELETE FROM stray_processes WHERE attempt_uid = ?", (attempt_uid,))

    def strays(self) -> list[tuple[str, int, int, str]]:
        """``(attempt uid, pid, pgid, proc_start)`` of every remembered stray process group."""
        return [tuple(row) for row in self._db.execute(
            "SELECT attempt_uid, pid, pgid, proc_start FROM stray_processes")]

    def job(self, job_id: str) -> JobRow | None:
        """The job with this id, or None."""
        row = self._db.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return JobRow(*row) if row else None

    def launch_request(self, job_id: str) -> C.LaunchJobRequest | None:
        """The request the job was launched with (without its bundle), or None for no such job."""
        row = self._db.execute("SELECT request FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return C.LaunchJobRequest.FromString(row[0]) if row else None

    def jobs_in_states(self, states: Iterable[int]) -> list[JobRow]:
        """Jobs in any of ``states``, oldest submission first."""
        marks = ", ".join("?" * len(states := list(states)))
        rows = self._db.execute(
            f"SELECT {_JOB_COLUMNS} FROM jobs WHERE state IN ({marks}) ORDER BY id", states
        ).fetchall()
        return [JobRow(*row) for row in rows]

    def job_states(self, job_ids: Sequence[str]) -> dict[str, int]:
        """``job_id → state`` for the known ids among ``job_ids``."""
        result: dict[str, int] = {}
        for marks, chunk in _id_lists(job_ids):
            result.update(self._db.execute(
                f"SELECT job_id, state FROM jobs WHERE job_id IN ({marks})", chunk
            ).fetchall())
        return result

    def update_job(self, job_id: str, **values: Any) -> None:
        """Set the given columns of one job."""
        assignments = ", ".join(f"{name} = ?" for name in values)
        self._db.execute(f"UPDATE jobs SET {assignments} WHERE job_id = ?", [*values.values(), job_id])
        self._changed(job_id, tree="state" in values)

    def query_jobs(self, page: JobsPage) -> tuple[list[JobRow], int]:
        """The jobs of ``page`` (see ``JobsPage``), and how many match before paging."""
        conditions = ["parent_job_id = ''"] if page.roots_only else []
        params: list[Any] = []
        for condition, value in (("parent_job_id = ?", page.parent_job_id), ("state = ?", page.state)):
            if value is not None:
                conditions.append(condition)
                params.append(value)
        for column, text, prefix in (("name", page.name_contains, False), ("job_id", page.id_prefix, True)):
            if text:
                conditions.append(f"{column} LIKE ? ESCAPE '\\'")
                params.append(like_pattern(text, prefix=prefix))
        where = " AND ".join(conditions) or "1"
        word = "DESC" if page.descending else "ASC"
        total = self._db.execute(f"SELECT count(*) FROM jobs WHERE {where}", params).fetchone()[0]
        rows = self._db.execute(
            f"SELECT {_JOB_COLUMNS} FROM jobs WHERE {where} ORDER BY {_SORT_SQL[page.sort]} {word}, id {word} "
            "LIMIT ? OFFSET ?", [*params, page.limit, page.offset],
        ).fetchall()
        return [JobRow(*row) for row in rows], int(total)

    def task_state_counts(self, job_ids: Sequence[str]) -> dict[str, dict[int, int]]:
        """``job_id → {task state → count}`` for each of ``job_ids``."""
        result: dict[str, dict[int, int]] = {job_id: {} for job_id in job_ids}
        for marks, chunk in _id_lists(job_ids):
            for job_id, state, count in self._db.execute(
                f"SELECT job_id, state, count(*) FROM tasks WHERE job_id IN ({marks}) GROUP BY job_id, state",
                chunk,
            ):
                result[job_id][state] = count
        return result

    # -- tasks and attempts -------------------------------------------------------------------
    def tasks(self, job_id: str) -> list[TaskRow]:
        """The tasks of a job in index order."""
        rows = self._db.execute(
            f"SELECT {_TASK_COLUMNS} FROM tasks WHERE job_id = ? ORDER BY idx", (job_id,)
        ).fetchall()
        return [TaskRow(*row) for row in rows]

    def task(self, job_id: str, idx: int) -> TaskRow | None:
        """One task, or None."""
        row = self._db.execute(
            f"SELECT {_TASK_COLUMNS} FROM tasks WHERE job_id = ? AND idx = ?", (job_id, idx)
        ).fetchone()
        return TaskRow(*row) if row else None

    def update_task(self, job_id: str, idx: int, **values: Any) -> None:
        """Set the given columns of one task."""
        assignments = ", ".join(f"{name} = ?" for name in values)
        self._db.execute(
            f"UPDATE tasks SET {assignments} WHERE job_id = ? AND idx = ?", [*values.values(), job_id, idx]
        )
        self.on_change(job_id)

    def insert_attempt(self, attempt: AttemptRow) -> None:
        """Record a new attempt."""
        values = [getattr(attempt, field.name) for field in fields(AttemptRow)]
        self._db.execute(
            f"INSERT INTO attempts ({_ATTEMPT_COLUMNS}) VALUES ({', '.join('?' * len(values))})", values
        )

    def update_attempt(self, job_id: str, idx: int, attempt: int, **values: Any) -> None:
        """Set the given columns of one attempt."""
        assignments = ", ".join(f"{name} = ?" for name in values)
        self._db.execute(
            f"UPDATE attempts SET {assignments} WHERE job_id = ? AND idx = ? AND attempt = ?",
            [*values.values(), job_id, idx, attempt],
        )

    def attempts(self, job_id: str, idx: int | None = None) -> list[AttemptRow]:
        """A job's attempts (or one task's), by task index then attempt id."""
        sql = f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE job_id = ?"
        params: list[Any] = [job_id]
        if idx is not None:
            sql += " AND idx = ?"
            params.append(idx)
        return [AttemptRow(*row) for row in self._db.execute(sql + " ORDER BY idx, attempt", params)]

    def unfinished_attempts(self) -> list[AttemptRow]:
        """Attempts with no finish time: the ones that were running when the controller stopped."""
        rows = self._db.execute(
            f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE finished_ms IS NULL"
        ).fetchall()
        return [AttemptRow(*row) for row in rows]

    def set_output_archive(self, job_id: str, idx: int, attempt: int, archive: bytes) -> None:
        """Record an attempt's serialized ``TaskOutputArchive`` (kept beside ``attempts``, as Iris
        keeps its own table of them)."""
        self._db.execute(
            "INSERT OR REPLACE INTO attempt_outputs (job_id, idx, attempt, archive) VALUES (?, ?, ?, ?)",
            (job_id, idx, attempt, archive),
        )

    def output_archives(self, job_id: str, idx: int | None = None) -> dict[tuple[int, int], bytes]:
        """``(task index, attempt) → serialized TaskOutputArchive`` of a job's (or one task's) attempts."""
        sql = "SELECT idx, attempt, archive FROM attempt_outputs WHERE job_id = ?"
        params: list[str | int] = [job_id]
        if idx is not None:
            sql += " AND idx = ?"
            params.append(idx)
        return {(row[0], row[1]): row[2] for row in self._db.execute(sql, params)}

    def put_status_text(self, job_id: str, task_id: str, attempt: int, ts_ms: int, detail_md: str,
                        summary_md: str) -> None:
        """Keep an attempt's status text unless the one stored is newer (``ts_ms``)."""
        self._db.execute(
            'INSERT INTO "iris.task_status" (job_id, task_id, attempt_id, ts, status_text_detail_md, '
            "status_text_summary_md) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (task_id, attempt_id) DO UPDATE SET "
            "ts = excluded.ts, status_text_detail_md = excluded.status_text_detail_md, "
            "status_text_summary_md = excluded.status_text_summary_md WHERE excluded.ts >= ts",
            (job_id, task_id, attempt, ts_ms, detail_md, summary_md),
        )
        self.on_change(job_id)
