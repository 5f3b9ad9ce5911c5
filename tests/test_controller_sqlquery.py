"""The stats namespaces' SQL engine (``controller.stats.sqlquery`` through ``controller.stats.stats``): DataFusion's
dialect as finelog answers it, and hostile SQL refused or bounded with one clear line, the store
unharmed; plans kept between queries (``controller.stats.session``) answer as fresh ones would."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.stats import session, sqlquery
from fray_jupyter.controller.stats.stats import Stats
from fray_jupyter.controller.store.statscatalog import CATALOG
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris import arrow_ipc

NOW = int(time.time() * 1000)


@pytest.fixture
def stats(tmp_path: Path) -> Iterator[Stats]:
    store = Store(tmp_path / "controller.sqlite3")
    found = Stats(store)
    found.append("iris.task", "/u/j", [
        {"task_id": f"/u/j/{task}", "attempt_id": 0, "worker_id": "w", "ts": NOW - 1000 * (5 - sample),
         "cpu_millicores": 100 * sample, "memory_mb": 10 * sample + task, "disk_mb": 1, "memory_peak_mb": 10 * sample}
        for task in range(3) for sample in range(5)])
    try:
        yield found
    finally:
        store.close()


def _rows(stats: Stats, sql: str) -> list[dict[str, object]]:
    return arrow_ipc.rows(arrow_ipc.read(stats.query(sql)[0]))


def _refused(stats: Stats, sql: str, code: Code = Code.INVALID_ARGUMENT) -> str:
    with pytest.raises(RpcError) as error:
        stats.query(sql)
    assert error.value.code == code, error.value.message
    assert "\n" not in error.value.message
    return error.value.message


def test_iris_s_dialect_works(stats: Stats) -> None:
    latest = _rows(stats, 'SELECT task_id, attempt_id, cpu_millicores, memory_mb, memory_peak_mb FROM "iris.task" '
                          "WHERE task_id IN ('/u/j/0', '/u/j/2') "
                          "QUALIFY row_number() OVER (PARTITION BY task_id ORDER BY ts DESC) = 1")
    assert sorted((row["task_id"], row["memory_mb"]) for row in latest) == [("/u/j/0", 40), ("/u/j/2", 42)]
    recent = _rows(stats, 'SELECT count(*) AS n FROM "iris.task" WHERE ts >= now() - INTERVAL \'1 hour\' '
                          f"AND ts >= to_timestamp_millis({NOW - 60_000})")
    assert recent == [{"n": 15}]
    assert _rows(stats, 'SELECT * FROM "iris.task_event"') == []


def test_a_missing_namespace_answers_as_finelog_does(stats: Stats) -> None:
    message = _refused(stats, 'SELECT * FROM "iris.worker"')
    assert "table" in message and "not found" in message


@pytest.mark.parametrize(("sql", "words"), [
    ('INSERT INTO "iris.task" (task_id) VALUES (\'x\')', "DML not supported"),
    ('CREATE TABLE t AS SELECT * FROM "iris.task"', "DDL not supported"),
    ("CREATE EXTERNAL TABLE t STORED AS CSV LOCATION '/etc/passwd'", "DDL not supported"),
    ('COPY "iris.task" TO \'/tmp/stolen.csv\'', "not supported"),
    ("SET datafusion.execution.batch_size = 1", "Statement not supported"),
    ("SELECT * FROM '/etc/passwd'", "not found"),
    ("SELECT * FROM read_csv('/etc/passwd')", "not found"),
    ("SELECT * FROM range(1000000000000)", "range() is not allowed"),
    ("SELECT repeat('x', 2000000000)", "repeat() is not allowed"),
    ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n", "recursive"),
    ('SELECT 1; DROP TABLE "iris.task"', "single SQL statement"),
    (('SELECT sum(a.cpu_millicores) FROM "iris.task" a, "iris.task" b, "iris.task" c, "iris.task" d, "iris.task" e, '
     '"iris.task" f, "iris.task" g'), "step limit"),
])
def test_hostile_sql_is_refused_before_it_runs(stats: Stats, sql: str, words: str) -> None:
    message = _refused(stats, sql)
    assert message.startswith("query failed: ") and words in message
    assert _rows(stats, 'SELECT count(*) AS n FROM "iris.task"') == [{"n": 15}]
    assert not Path("/tmp/stolen.csv").exists()


def test_a_result_past_the_row_bound_is_resource_exhausted(stats: Stats, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlquery, "MAX_QUERY_ROWS", 10)
    message = _refused(stats, 'SELECT * FROM "iris.task"', Code.RESOURCE_EXHAUSTED)
    assert "more than 10 rows" in message
    assert len(_rows(stats, 'SELECT * FROM "iris.task" LIMIT 10')) == 10


def test_a_query_past_the_memory_bound_is_resource_exhausted(stats: Stats, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlquery, "MEMORY_LIMIT_BYTES", 1024)
    message = _refused(stats, 'SELECT task_id, ts FROM "iris.task" ORDER BY memory_mb, ts', Code.RESOURCE_EXHAUSTED)
    assert "needed more than" in message


LATEST = ('SELECT task_id, memory_mb FROM "iris.task" WHERE task_id IN (\'/u/j/0\', \'/u/j/1\') '
          "QUALIFY row_number() OVER (PARTITION BY task_id ORDER BY ts DESC) = 1 ORDER BY task_id")


def _sample(task: int, ts: int, memory_mb: int) -> dict[str, object]:
    return {"task_id": f"/u/j/{task}", "attempt_id": 0, "worker_id": "w", "ts": ts, "cpu_millicores": 0,
            "memory_mb": memory_mb, "disk_mb": 0, "memory_peak_mb": memory_mb}


def test_a_kept_plan_runs_again_and_sees_every_change_of_its_rows(stats: Stats, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _rows(stats, LATEST) == [{"task_id": "/u/j/0", "memory_mb": 40}, {"task_id": "/u/j/1", "memory_mb": 41}]
    kept = stats.session.plan(LATEST)
    assert kept is not None and kept.physical is not None  # the dashboard's query runs again unplanned
    assert _rows(stats, LATEST) == [{"task_id": "/u/j/0", "memory_mb": 40}, {"task_id": "/u/j/1", "memory_mb": 41}]
    stats.append("iris.task", "/u/j", [_sample(0, NOW + 1, 99)])  # appended: inserted into the kept table
    assert _rows(stats, LATEST) == [{"task_id": "/u/j/0", "memory_mb": 99}, {"task_id": "/u/j/1", "memory_mb": 41}]
    again = stats.session.plan(LATEST)
    assert again is not None and again.logical is kept.logical  # not parsed again
    stats.append("iris.task", "/u/j", [_sample(1, NOW + 2, 77)])
    assert _rows(stats, LATEST) == [{"task_id": "/u/j/0", "memory_mb": 99}, {"task_id": "/u/j/1", "memory_mb": 77}]
    monkeypatch.setitem(CATALOG, "iris.task", dataclasses.replace(CATALOG["iris.task"], max_rows=1))
    stats.prune(NOW)  # cut: the namespace is registered anew
    assert _rows(stats, LATEST) == [{"task_id": "/u/j/1", "memory_mb": 77}]
    assert _rows(stats, 'SELECT count(*) AS n FROM "iris.task"') == [{"n": 1}]


def test_now_is_read_afresh_by_a_kept_plan(stats: Stats) -> None:
    sql = "SELECT CAST(now() AS BIGINT) AS t"
    first = _rows(stats, sql)[0]["t"]
    second = _rows(stats, sql)[0]["t"]
    assert isinstance(first, int) and isinstance(second, int) and second > first
    kept = stats.session.plan(sql)
    assert kept is not None and kept.physical is None


@pytest.mark.parametrize(("sql", "answer"), [
    ('SELECT memory_mb FROM "iris.task" ORDER BY ts DESC, task_id LIMIT 2', [{"memory_mb": 40}, {"memory_mb": 41}]),
    ('SELECT max(ts) AS ts FROM "iris.task"', [{"ts": NOW - 1000}]),
    ('SELECT min(memory_mb) AS m FROM "iris.task"', [{"m": 0}]),
])
def test_operators_that_learn_as_they_run_are_planned_again(stats: Stats, sql: str, answer: list[object]) -> None:
    for _ in range(3):
        assert _rows(stats, sql) == answer


def test_a_kept_plan_keeps_its_bounds(stats: Stats, monkeypatch: pytest.MonkeyPatch) -> None:
    everything = 'SELECT * FROM "iris.task"'
    assert len(_rows(stats, everything)) == 15
    monkeypatch.setattr(sqlquery, "MAX_QUERY_ROWS", 10)
    assert "more than 10 rows" in _refused(stats, everything, Code.RESOURCE_EXHAUSTED)
    pairs = 'SELECT count(*) AS n FROM "iris.task" a, "iris.task" b'
    monkeypatch.setattr(sqlquery, "MAX_JOIN_ROWS", 300)
    assert _rows(stats, pairs) == [{"n": 225}]
    stats.append("iris.task", "/u/j", [_sample(0, NOW + i, 1) for i in range(3)])  # 18 x 18 rows > 300
    assert "step limit of 300 rows" in _refused(stats, pairs)


def test_the_kept_plans_are_bounded(stats: Stats, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "MAX_PLANS", 2)
    queries = [f'SELECT count(*) AS n FROM "iris.task" WHERE memory_mb >= {least}' for least in range(3)]
    for sql in queries:
        _rows(stats, sql)
    assert stats.session.plan(queries[0]) is None
    assert all(stats.session.plan(sql) is not None for sql in queries[1:])
