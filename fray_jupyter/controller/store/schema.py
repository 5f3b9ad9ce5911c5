"""The embedded controller's SQLite schema, as an ordered list of migrations.

``PRAGMA user_version`` counts the ``MIGRATIONS`` a store has applied; opening a store
(``store.Store``) applies the missing ones in order, each in one transaction (a state dir from
before versioning has version 0 and the baseline tables, which migration 1 leaves as they are). A
store newer than this code is refused (``store.SchemaTooNew``) rather than misread.
"""

from __future__ import annotations

from typing import Final

BASELINE_SCHEMA: Final[str] = """
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
CREATE TABLE IF NOT EXISTS attempt_outputs (
  job_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  archive BLOB NOT NULL,
  PRIMARY KEY (job_id, idx, attempt)
) WITHOUT ROWID;
"""
"""Schema version 1: what every state dir made before schema versioning holds (``user_version`` 0)."""

_JOBS_V2: Final[str] = """
CREATE TABLE jobs_v2 (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
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
  bundle_path TEXT NOT NULL DEFAULT '',
  cleaned_ms INTEGER
);
INSERT INTO jobs_v2 (id, job_id, name, user, state, submitted_ms, started_ms, finished_ms, error, exit_code,
  status_message, replicas, coscheduled, max_retries_failure, max_task_failures, timeout_ms, scheduling_timeout_ms,
  failure_count, preemption_count, request, resources, bundle_path)
SELECT id, job_id, name, user, state, submitted_ms, started_ms, finished_ms, error, exit_code, status_message,
  replicas, coscheduled, max_retries_failure, max_task_failures, timeout_ms, scheduling_timeout_ms, failure_count,
  preemption_count, request, resources, bundle_path FROM jobs;
DROP TABLE jobs;
ALTER TABLE jobs_v2 RENAME TO jobs;
CREATE INDEX jobs_by_date ON jobs (submitted_ms, id);
CREATE INDEX jobs_by_state ON jobs (state, submitted_ms, id);
CREATE INDEX jobs_by_name ON jobs (name);
CREATE INDEX jobs_to_clean ON jobs (finished_ms) WHERE cleaned_ms IS NULL;
CREATE TABLE stray_processes (
  attempt_uid TEXT PRIMARY KEY,
  pid INTEGER NOT NULL,
  pgid INTEGER NOT NULL,
  proc_start TEXT NOT NULL DEFAULT ''
) WITHOUT ROWID;
CREATE INDEX logs_by_task ON logs (job_id, idx);
"""
"""Schema version 2: job row ids are never reused (AUTOINCREMENT: a replaced job's number never
names its replacement), ``cleaned_ms`` (when retention removed a finished job's files), and
``stray_processes`` (process groups of replaced jobs still stopping, killed by ``recover`` after
a crash)."""

_TASK_STATUS_TEXT: Final[str] = """
CREATE TABLE "iris.task_status" (
  job_id TEXT NOT NULL,
  task_id TEXT NOT NULL,
  attempt_id INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  status_text_detail_md TEXT NOT NULL,
  status_text_summary_md TEXT NOT NULL,
  PRIMARY KEY (task_id, attempt_id)
) WITHOUT ROWID;
CREATE INDEX task_status_by_job ON "iris.task_status" (job_id);
"""
"""Schema version 3: the status text each task attempt last reported (Iris's ``iris.task_status``
namespace, its columns by Iris's names; ``ts`` in epoch ms), read by ``controller.api.taskstatus``."""

_BUDGETS: Final[str] = """
CREATE TABLE user_budgets (
  user_id TEXT PRIMARY KEY,
  budget_limit INTEGER NOT NULL,
  max_band INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
) WITHOUT ROWID;
ALTER TABLE tasks ADD COLUMN priority_band INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tasks_by_state ON tasks (state, job_id)
"""
"""Schema version 4: per-user budgets (``SetUserBudget``), the band each task was given when it was
placed (``tasks.priority_band``, 0 until then; Iris stamps it the same way), and tasks by state
(spend and the scheduler's queues read the active and pending ones)."""

_TREES_V5: Final[str] = """
ALTER TABLE jobs ADD COLUMN parent_job_id TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_by_parent ON jobs (parent_job_id, submitted_ms, id)
"""
"""Schema version 5: child jobs. ``parent_job_id`` ('' for a root job; every job stored before
this version is one), indexed with the listing order, so "roots only" and "children of X" read
one index range."""


_LOGS_V6: Final[str] = """
CREATE TABLE logs_v6 (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  ts_ms INTEGER NOT NULL,
  source TEXT NOT NULL,
  data TEXT NOT NULL
);
INSERT INTO logs_v6 (id, job_id, idx, attempt, ts_ms, source, data)
SELECT id, job_id, idx, attempt, ts_ms, source, data FROM logs;
DROP TABLE logs;
ALTER TABLE logs_v6 RENAME TO logs;
CREATE INDEX logs_by_job ON logs (job_id, id);
CREATE INDEX logs_by_task ON logs (job_id, idx);
"""
"""Schema version 6: log line ids (every reader's cursor, finelog's ``seq``) are never reused
(AUTOINCREMENT): a replaced job's lines were the newest, so once deleted their ids went to its
replacement's lines, and a reader holding a cursor of the old run skipped them."""

_ENDPOINTS_V7: Final[str] = """
CREATE TABLE endpoints (
  endpoint_id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  address TEXT NOT NULL,
  job_id TEXT NOT NULL,
  idx INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  metadata TEXT NOT NULL,
  access INTEGER NOT NULL DEFAULT 0,
  registered_ms INTEGER NOT NULL,
  lease_deadline_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX endpoints_by_name ON endpoints (name);
CREATE INDEX endpoints_by_task ON endpoints (job_id, idx);
CREATE INDEX endpoints_by_deadline ON endpoints (lease_deadline_ms)
"""
"""Schema version 7: the endpoint registry (Iris's ``endpoints`` table): what tasks registered with
``RegisterEndpoint`` (``metadata`` a JSON object), the attempt that registered it and the epoch ms its lease
lapses at (read by ``controller.engine.endpoint_registry``)."""

_STATS_V8: Final[str] = """
CREATE TABLE "iris.task" (
  job_id TEXT NOT NULL, task_id TEXT, attempt_id INTEGER, worker_id TEXT, ts INTEGER, cpu_millicores INTEGER,
  memory_mb INTEGER, disk_mb INTEGER, memory_peak_mb INTEGER, accelerator_util_pct REAL, accelerator_mem_bytes INTEGER
);
CREATE INDEX task_stats_by_job ON "iris.task" (job_id);
CREATE TABLE "iris.task_event" (
  job_id TEXT NOT NULL, pod_name TEXT, pod_uid TEXT, pod_deletion_timestamp TEXT, node_name TEXT, node_uid TEXT,
  node_provider_id TEXT, node_boot_id TEXT, node_system_uuid TEXT, node_unschedulable INTEGER,
  pod_tolerations_json TEXT, pod_conditions_json TEXT, node_taints_json TEXT, node_conditions_json TEXT,
  node_labels_json TEXT, node_annotations_json TEXT, task_id TEXT, attempt_id INTEGER, attempt_uid TEXT, ts INTEGER,
  type TEXT, reason TEXT, message TEXT, source TEXT, count INTEGER
);
CREATE INDEX task_events_by_job ON "iris.task_event" (job_id);
CREATE TABLE "iris.profile" (
  job_id TEXT NOT NULL, source TEXT, attempt_id INTEGER, vm_id TEXT, captured_at INTEGER, duration_seconds INTEGER,
  type TEXT, format TEXT, trigger TEXT, rate_hz INTEGER, native INTEGER, leaks INTEGER, locals_dump INTEGER,
  profile_data BLOB
);
CREATE INDEX profiles_by_job ON "iris.profile" (job_id);
CREATE TABLE stats_generation (n INTEGER NOT NULL);
INSERT INTO stats_generation (n) VALUES (0);
CREATE TRIGGER stats_follow_jobs AFTER DELETE ON jobs BEGIN DELETE FROM "iris.task" WHERE job_id = OLD.job_id; DELETE FROM "iris.task_event" WHERE job_id = OLD.job_id; DELETE FROM "iris.profile" WHERE job_id = OLD.job_id; UPDATE stats_generation SET n = n + 1; END
"""
"""Schema version 8: the stats namespaces the controller writes itself (``controller.store.statscatalog``:
Iris's columns, ``ts``/``captured_at`` in epoch ms, plus ``job_id``), and ``stats_generation``, counted
up whenever a job's rows go with it (the trigger), so a reader of the appended rows knows to read
them again (``controller.store.statsstore``)."""

MIGRATIONS: Final[tuple[str, ...]] = (BASELINE_SCHEMA, _JOBS_V2, _TASK_STATUS_TEXT, _BUDGETS, _TREES_V5, _LOGS_V6,
                                      _ENDPOINTS_V7, _STATS_V8)
"""Ordered: entry ``n`` takes a store from ``PRAGMA user_version`` ``n`` to ``n + 1``. Append only:
never edit a released entry (a state dir may have applied it already)."""

SCHEMA_VERSION: Final[int] = len(MIGRATIONS)
