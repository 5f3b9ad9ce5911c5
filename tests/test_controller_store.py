"""SQLite store: rows survive reopening; log queries filter, page and tail."""

from __future__ import annotations

from pathlib import Path

from fray_jupyter.controller.store import JobRow, Store
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
    reopened.delete_job("/alice/a")
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
