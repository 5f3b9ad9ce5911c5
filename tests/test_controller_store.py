"""SQLite store: rows survive reopening; log queries filter, page and tail."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from fray_jupyter.controller.kernel.rows import JobRow
from fray_jupyter.controller.store.schema import MIGRATIONS, SCHEMA_VERSION
from fray_jupyter.controller.store.store import ID_LIST_CHUNK, JobsPage, SchemaTooNew, Store
from fray_jupyter.iris.proto import job_pb2 as J


def _job(job_id: str, replicas: int = 2) -> JobRow:
    return JobRow(0, job_id, job_id, "alice", J.JOB_STATE_PENDING, 1000, None, None, "", None, "", replicas, 0, 0, 0,
                  None, None, 0, 0, b"", b"", "")


def test_jobs_and_tasks_survive_reopening(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite3")
    with store.transaction():
        store.insert_job(_job("/alice/a", replicas=3))
        store.update_task("/alice/a", 1, state=J.TASK_STATE_RUNNING)
    store.close()
    reopened = Store(tmp_path / "db.sqlite3")
    job = reopened.job("/alice/a")
    assert job is not None and job.id == 1 and job.replicas == 3
    assert [task.state for task in reopened.tasks("/alice/a")] == [
        J.TASK_STATE_PENDING, J.TASK_STATE_RUNNING, J.TASK_STATE_PENDING]
    assert reopened.task_state_counts(["/alice/a"]) == {"/alice/a": {J.TASK_STATE_PENDING: 2, J.TASK_STATE_RUNNING: 1}}
    reopened.delete_tree("/alice/a")
    assert reopened.job("/alice/a") is None and reopened.tasks("/alice/a") == []


def test_a_failed_transaction_leaves_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite3")
    try:
        with store.transaction():
            store.insert_job(_job("/alice/a"))
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert store.job("/alice/a") is None


def test_log_queries(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite3")
    store.append_logs([("/a/j", i % 2, 0, 100 + i, "stdout", f"line {i}") for i in range(10)])
    store.append_logs([("/a/other", 0, 0, 1, "stderr", "elsewhere")])

    def read(**overrides: object) -> list[str]:
        options: dict[str, object] = {"idx": None, "after_id": 0, "since_ms": 0, "substring": "", "attempt": None,
                                      "limit": 100, "newest": False}
        options.update(overrides)
        return [row.data for row in store.read_logs("/a/j", **options)]  # type: ignore[arg-type]

    assert read() == [f"line {i}" for i in range(10)]
    assert read(idx=1, limit=2) == ["line 1", "line 3"]
    assert read(limit=3, newest=True) == ["line 7", "line 8", "line 9"]
    assert read(after_id=8) == ["line 8", "line 9"]
    assert read(substring="e 5") == ["line 5"]
    assert read(since_ms=107) == ["line 8", "line 9"]
    assert store.last_log_id("/a/j") == 10 and store.last_log_id("/a/none") == 0


# -- schema versions -------------------------------------------------------------------------------
MAIN_BEFORE_VERSIONING_DDL = """
CREATE TABLE IF NOT EXISTS jobs (
  id INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  user TEXT NOT NULL,
  state INTEGER NOT NULL,
  submitted_ms INTEGER NOT NULL,
  started_ms INTEGER,
  finished_ms INTEGER,
  error TEXT NOT NULL DEFAULT '',
  exit_code INTEGER,
  status_message TEXT NOT NULL DEFAULT '',
  replicas INTEGER NOT NULL,
  coscheduled INTEGER NOT NULL,
  max_retries_failure INTEGER NOT NULL,
  max_task_failures INTEGER NOT NULL,
  timeout_ms INTEGER,
  scheduling_timeout_ms INTEGER,
  failure_count INTEGER NOT NULL DEFAULT 0,
  preemption_count INTEGER NOT NULL DEFAULT 0,
  request BLOB NOT NULL,
  resources BLOB NOT NULL,
  bundle_path TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS jobs_by_date ON jobs (submitted_ms, id);
CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, submitted_ms, id);
CREATE INDEX IF NOT EXISTS jobs_by_name ON jobs (name);
CREATE TABLE IF NOT EXISTS tasks (
  job_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  state INTEGER NOT NULL,
  attempt INTEGER NOT NULL DEFAULT -1,
  failure_count INTEGER NOT NULL DEFAULT 0,
  preemption_count INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER,
  error TEXT NOT NULL DEFAULT '',
  started_ms INTEGER,
  finished_ms INTEGER,
  PRIMARY KEY (job_id, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS attempts (
  job_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  uid TEXT NOT NULL,
  state INTEGER NOT NULL,
  exit_code INTEGER,
  error TEXT NOT NULL DEFAULT '',
  started_ms INTEGER,
  finished_ms INTEGER,
  pid INTEGER,
  pgid INTEGER,
  proc_start TEXT NOT NULL DEFAULT '',
  workdir TEXT NOT NULL DEFAULT '',
  worker_failure INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, idx, attempt)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS attempts_live ON attempts (finished_ms) WHERE finished_ms IS NULL;
CREATE TABLE IF NOT EXISTS logs (
  id INTEGER PRIMARY KEY,
  job_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  ts_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS logs_by_job ON logs (job_id, id);
"""
"""The tables exactly as a state dir made before schema versioning holds them (``user_version`` 0)."""


def _old_state_dir(path: Path) -> None:
    db = sqlite3.connect(path)
    db.executescript(MAIN_BEFORE_VERSIONING_DDL)
    for number, name in ((1, "/alice/kept"), (2, "/alice/newest")):
        db.execute("INSERT INTO jobs (id, job_id, name, user, state, submitted_ms, replicas, coscheduled, "
                   "max_retries_failure, max_task_failures, request, resources) "
                   "VALUES (?, ?, ?, 'alice', ?, 1000, 1, 0, 0, 0, x'', x'')",
                   (number, name, name, J.JOB_STATE_SUCCEEDED))
        db.execute("INSERT INTO tasks (job_id, idx, state) VALUES (?, 0, ?)", (name, J.TASK_STATE_SUCCEEDED))
        db.execute("INSERT INTO logs (job_id, idx, attempt, ts_ms, source, data) VALUES (?, 0, 0, 1, 'stdout', ?)",
                   (name, f"line of {name}"))
    db.commit()
    db.close()


def test_a_state_dir_from_before_schema_versions_opens_with_its_history(tmp_path: Path) -> None:
    path = tmp_path / "controller.sqlite3"
    _old_state_dir(path)
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION >= 3
    kept = store.job("/alice/kept")
    assert kept is not None and kept.id == 1 and kept.state == J.JOB_STATE_SUCCEEDED and kept.cleaned_ms is None
    assert kept.parent_job_id == "" and store.descendants("/alice/kept") == []  # every old job is a root
    assert [row.data for row in store.read_logs("/alice/kept", idx=None, after_id=0, since_ms=0, substring="",
                                                attempt=None, limit=10, newest=False)] == ["line of /alice/kept"]
    with store.transaction():  # replacing the newest job must not hand its row id to the replacement
        store.delete_tree("/alice/newest")
        replacement = store.insert_job(_job("/alice/newest", replicas=1))
    assert replacement.id == 3
    store.close()
    assert Store(path).schema_version() == SCHEMA_VERSION  # reopening applies nothing twice


def test_row_ids_are_never_reused(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite3")
    with store.transaction():
        first = store.insert_job(_job("/alice/a")).id
    with store.transaction():
        store.delete_tree("/alice/a")
        second = store.insert_job(_job("/alice/a")).id
    store.close()
    store = Store(tmp_path / "db.sqlite3")
    with store.transaction():
        store.delete_tree("/alice/a")
        third = store.insert_job(_job("/alice/a")).id
    assert first < second < third


def _child(job_id: str, parent: str) -> JobRow:
    row = _job(job_id, replicas=1)
    row.parent_job_id = parent
    return row


def test_a_tree_is_read_and_deleted_whole_and_reports_its_parents(tmp_path: Path) -> None:
    store = Store(tmp_path / "db.sqlite3")
    seen: list[str] = []
    with store.transaction():
        for row in (_job("/alice/p"), _child("/alice/p/c", "/alice/p"), _child("/alice/p/c/g", "/alice/p/c"),
                    _job("/alice/p-2"), _job("/alice/p0")):
            store.insert_job(row)
        store.on_change = seen.append
        store.insert_job(_child("/alice/p/d", "/alice/p"))
    assert seen == ["/alice/p/d", "/alice/p"]
    assert [row.job_id for row in store.descendants("/alice/p")] == ["/alice/p/c", "/alice/p/c/g", "/alice/p/d"]
    assert store.parents_among(["/alice/p", "/alice/p/c", "/alice/p/d", "/alice/p-2"]) == {"/alice/p", "/alice/p/c"}
    store.append_logs([("/alice/p/c/g", 0, 0, 1, "stdout", "deep")])
    seen.clear()
    store.update_job("/alice/p/c", failure_count=1)
    store.update_job("/alice/p/c", state=J.JOB_STATE_RUNNING)
    assert seen == ["/alice/p/c", "/alice/p/c", "/alice/p"]  # only a state change reaches the parent
    with store.transaction():
        deleted, _ = store.delete_tree("/alice/p/c")
    assert deleted == ["/alice/p/c", "/alice/p/c/g"] and store.last_log_id("/alice/p/c/g") == 0
    assert sorted(row.job_id for row in store.query_jobs(JobsPage(limit=10))[0]) == [
        "/alice/p", "/alice/p-2", "/alice/p/d", "/alice/p0"]


def test_log_ids_are_never_reused(tmp_path: Path) -> None:
    """A log line's id is every reader's cursor: a replacement's lines must come after the old run's."""
    def replace_with_one_line(store: Store, data: str) -> int:
        with store.transaction():
            store.delete_tree("/alice/a")
            store.insert_job(_job("/alice/a", replicas=1))
        store.append_logs([("/alice/a", 0, 0, 1, "stdout", data)])
        return store.last_log_id("/alice/a")

    store = Store(tmp_path / "db.sqlite3")
    first = replace_with_one_line(store, "first run")
    second = replace_with_one_line(store, "second run")
    store.close()
    store = Store(tmp_path / "db.sqlite3")
    third = replace_with_one_line(store, "third run")
    assert first < second < third
    assert [row.data for row in store.read_logs("/alice/a", idx=None, after_id=second, since_ms=0, substring="",
                                                attempt=None, limit=10, newest=False)] == ["third run"]


def test_a_store_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    with pytest.raises(SchemaTooNew, match="newer than this fray-jupyter"):
        Store(path)


def test_a_version_2_store_gains_budgets_and_unstamped_task_bands(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    db = sqlite3.connect(path)
    for number, migration in enumerate(MIGRATIONS[:2]):
        db.executescript(migration)
        db.execute(f"PRAGMA user_version = {number + 1}")
    db.execute("INSERT INTO jobs (job_id, name, user, state, submitted_ms, replicas, coscheduled, "
               "max_retries_failure, max_task_failures, request, resources) "
               "VALUES ('/alice/old', '/alice/old', 'alice', ?, 1000, 1, 0, 0, 0, x'', x'')", (J.JOB_STATE_RUNNING,))
    db.execute("INSERT INTO tasks (job_id, idx, state) VALUES ('/alice/old', 0, ?)", (J.TASK_STATE_RUNNING,))
    db.commit()
    db.close()
    store = Store(path)
    assert store.schema_version() == SCHEMA_VERSION >= 3
    assert store.task_counts([J.TASK_STATE_RUNNING]) == [("/alice/old", 1, 0, 1)]
    assert store.user_budgets() == {}
    store.set_user_budget("alice", 100, J.PRIORITY_BAND_INTERACTIVE, 5)
    store.set_user_budget("alice", 200, J.PRIORITY_BAND_BATCH, 6)
    assert store.user_budgets() == {"alice": (200, J.PRIORITY_BAND_BATCH)}
    store.close()
    assert Store(path).user_budgets() == {"alice": (200, J.PRIORITY_BAND_BATCH)}  # kept across restarts


def test_lookups_by_many_ids_answer_past_one_id_list(tmp_path: Path) -> None:
    """Lookups that take any number of ids read them in chunks (``ID_LIST_CHUNK``); the answer is
    the same as for one list."""
    store = Store(tmp_path / "db.sqlite3")
    with store.transaction():
        for parent in ("/alice/first", "/alice/last"):
            store.insert_job(_job(parent, replicas=1))
            store.insert_job(_child(f"{parent}/step", parent))
    asked = ["/alice/first", *(f"/alice/absent-{i}" for i in range(2 * ID_LIST_CHUNK)), "/alice/last"]
    assert store.parents_among(asked) == {"/alice/first", "/alice/last"}
    assert store.job_states(asked) == {"/alice/first": J.JOB_STATE_PENDING, "/alice/last": J.JOB_STATE_PENDING}
    counts = store.task_state_counts(asked)
    assert len(counts) == len(asked) and counts["/alice/last"] == {J.TASK_STATE_PENDING: 1}
