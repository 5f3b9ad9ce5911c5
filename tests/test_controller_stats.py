"""The stats namespaces' rows (``controller.stats.stats``, ``statsstore``, ``stats.mirror``): kept durably,
bounded by retention, gone with a replaced job, profiles recorded with Iris's values only; each
namespace's mirror versioned by its rows."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fray_jupyter.controller.api.service import ControllerService
from fray_jupyter.controller.stats.stats import Stats
from fray_jupyter.controller.store.statscatalog import CATALOG
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris import arrow_ipc
from fray_jupyter.iris.proto import controller_pb2
from tests.controller_harness import launch_request

C = controller_pb2.Controller
NOW = int(time.time() * 1000)


def _sample(task_id: str, ts: int, memory_mb: int = 1) -> dict[str, object]:
    return {"task_id": task_id, "attempt_id": 0, "worker_id": "w", "ts": ts, "cpu_millicores": 0,
            "memory_mb": memory_mb, "disk_mb": 0, "memory_peak_mb": memory_mb}


def _rows(stats: Stats, sql: str) -> list[dict[str, object]]:
    return arrow_ipc.rows(arrow_ipc.read(stats.query(sql)[0]))


def test_rows_survive_a_restart(tmp_path: Path) -> None:
    store = Store(tmp_path / "controller.sqlite3")
    stats = Stats(store)
    stats.append("iris.task", "/u/j", [_sample("/u/j/0", NOW, 600)])
    assert _rows(stats, 'SELECT memory_mb FROM "iris.task"') == [{"memory_mb": 600}]
    stats.append("iris.task", "/u/j", [_sample("/u/j/0", NOW + 1, 700)])
    store.close()
    reopened = Stats(Store(tmp_path / "controller.sqlite3"))
    rows = _rows(reopened, 'SELECT memory_mb, ts FROM "iris.task" ORDER BY ts')
    assert rows == [{"memory_mb": 600, "ts": NOW}, {"memory_mb": 700, "ts": NOW + 1}]
    reopened.store.close()


def test_retention_drops_the_oldest_rows_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = Store(tmp_path / "controller.sqlite3")
    stats = Stats(store, retention_days=1)
    day = 86_400_000
    stats.append("iris.task", "/u/j", [_sample("/u/j/0", NOW - 3 * day), _sample("/u/j/0", NOW - 2 * day)])
    stats.append("iris.task", "/u/j", [_sample("/u/j/1", NOW - 1000 - i) for i in range(5)])
    assert {row["task_id"] for row in _rows(stats, 'SELECT task_id FROM "iris.task"')} == {"/u/j/1"}
    monkeypatch.setitem(CATALOG, "iris.task", CATALOG["iris.task"].__class__(
        **{**CATALOG["iris.task"].__dict__, "max_rows": 2}))
    stats.prune(NOW)
    assert _rows(stats, 'SELECT ts FROM "iris.task" ORDER BY ts') == [{"ts": NOW - 1004}, {"ts": NOW - 1003}]  # the last two to arrive
    store.close()


def test_a_replaced_job_takes_its_rows_with_it(service: ControllerService) -> None:
    request = launch_request("again", "true")
    job = service.launch_job(request).job_id
    stats = service.engine.stats
    stats.append("iris.task", job, [_sample(f"{job}/0", NOW)])
    stats.append("iris.task", "/alice/other", [_sample("/alice/other/0", NOW)])
    assert len(_rows(stats, 'SELECT * FROM "iris.task"')) == 2
    service.terminate_job(C.TerminateJobRequest(job_id=job))
    request.existing_job_policy = 3  # RECREATE
    service.launch_job(request)
    assert _rows(stats, 'SELECT task_id FROM "iris.task"') == [{"task_id": "/alice/other/0"}]
    service.terminate_job(C.TerminateJobRequest(job_id=job))


def test_a_profile_is_recorded_with_iris_s_values_only(tmp_path: Path) -> None:
    store = Store(tmp_path / "controller.sqlite3")
    stats = Stats(store)
    stats.record_profile(source="/u/j/0", job_id="/u/j", attempt_id=0, captured_at_ms=NOW, duration_seconds=10,
                         profile_type="cpu", profile_format="speedscope", trigger="on_demand", profile_data=b"{}",
                         rate_hz=100)
    (row,) = _rows(stats, 'SELECT source, type, format, trigger, rate_hz, native, profile_data FROM "iris.profile"')
    assert row == {"source": "/u/j/0", "type": "cpu", "format": "speedscope", "trigger": "on_demand", "rate_hz": 100,
                   "native": None, "profile_data": b"{}"}
    with pytest.raises(ValueError, match="profile format 'svg' is not one of"):
        stats.record_profile(source="/u/j/0", job_id="/u/j", attempt_id=0, captured_at_ms=NOW, duration_seconds=1,
                             profile_type="cpu", profile_format="svg", trigger="on_demand", profile_data=b"")
    store.close()


def test_rows_are_kept_at_least_an_hour_whatever_the_retention(tmp_path: Path) -> None:
    store = Store(tmp_path / "controller.sqlite3")
    stats = Stats(store, retention_days=0)
    assert stats.retention_ms == 3_600_000
    stats.keep_for(2)
    assert stats.retention_ms == 2 * 86_400_000
    store.close()


def test_a_namespace_s_version_moves_exactly_when_its_rows_change(tmp_path: Path) -> None:
    store = Store(tmp_path / "controller.sqlite3")
    stats = Stats(store, retention_days=1)
    first = stats.mirror.snapshots()
    assert {name: snapshot.rows for name, snapshot in first.items()} == dict.fromkeys(CATALOG, 0)
    assert stats.mirror.snapshots() == first
    stats.append("iris.task", "/u/j", [_sample("/u/j/0", NOW - 2 * 86_400_000), _sample("/u/j/0", NOW)])
    stats.record_task_events([])  # writes nothing
    second = stats.mirror.snapshots()
    assert [name for name in CATALOG if second[name].version != first[name].version] == ["iris.task"]
    assert second["iris.task"].rows == 2
    stats.prune(NOW)  # the day-old row goes (retention is a day): the version moves again
    third = stats.mirror.snapshots()
    assert third["iris.task"].version != second["iris.task"].version and third["iris.task"].rows == 1
    store.close()
