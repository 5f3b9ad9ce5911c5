"""BeginCheckpoint against the real controller process: a zstd snapshot of the store under
``<state dir>/controller-state/<created_at ms>/controller.sqlite3.zst`` that opens as an SQLite
database holding the jobs, with the counts it answers; refused without the token."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.controller.api.checkpoint import (
    CHECKPOINT_DIRNAME,
    SNAPSHOT_NAME,
    read_snapshot,
    write_checkpoint,
)
from fray_jupyter.controller.api.methods import UNSUPPORTED
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.proto import controller_pb2
from fray_jupyter.iris.wire import CONTROLLER_SERVICE, method_path
from tests.controller_harness import (
    TERMINAL,
    ControllerProcess,
    WireError,
    launch_request,
    start_controller,
    stop_quietly,
)

C = controller_pb2.Controller


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    started = start_controller(tmp_path_factory.mktemp("checkpoint") / "state")
    yield started
    stop_quietly(started)


def _rows(database: Path, sql: str) -> list[tuple[object, ...]]:
    connection = sqlite3.connect(database)
    try:
        return list(connection.execute(sql))
    finally:
        connection.close()


@pytest.mark.parametrize("transport", ["connect", "grpc"])
def test_a_checkpoint_is_a_database_holding_the_jobs_with_the_counts_it_answers(
        controller: ControllerProcess, tmp_path: Path, transport: str) -> None:
    wire = controller.wire(transport)
    jobs = [wire.launch(launch_request(f"kept-{transport}-{n}", "true", replicas=n + 1)) for n in range(2)]
    for job_id in jobs:
        wire.wait(job_id, TERMINAL, timeout=60)
    answer = wire.call("BeginCheckpoint", C.BeginCheckpointRequest())
    path = Path(answer.checkpoint_path)
    assert path == controller.state_dir.resolve() / CHECKPOINT_DIRNAME / str(answer.created_at.epoch_ms)
    assert sorted(p.name for p in path.iterdir()) == [SNAPSHOT_NAME]
    database = read_snapshot(path / SNAPSHOT_NAME, tmp_path / "restored.sqlite3")
    stored = {row[0] for row in _rows(database, "SELECT job_id FROM jobs")}
    assert set(jobs) <= stored
    assert answer.job_count == len(stored) and answer.task_count == _rows(database, "SELECT count(*) FROM tasks")[0][0]
    assert _rows(database, "PRAGMA journal_mode") == [("delete",)]  # one self-contained file
    assert answer.worker_count == len(wire.call("ListWorkers", C.ListWorkersRequest()).workers) > 0


def test_only_an_authenticated_caller_may_take_a_checkpoint(controller: ControllerProcess) -> None:
    before = set((controller.state_dir / CHECKPOINT_DIRNAME).glob("*"))
    for transport in ("connect", "grpc"):
        with pytest.raises(WireError) as refused:
            controller.wire(transport).call("BeginCheckpoint", C.BeginCheckpointRequest(), token="wrong")
        assert refused.value.code == "unauthenticated"
    assert set((controller.state_dir / CHECKPOINT_DIRNAME).glob("*")) == before
    assert method_path(CONTROLLER_SERVICE, "BeginCheckpoint") not in UNSUPPORTED


def test_two_checkpoints_never_share_a_dir_and_a_failed_one_leaves_no_snapshot(tmp_path: Path) -> None:
    store = Store(tmp_path / "controller.sqlite3")
    first, second = write_checkpoint(store.path), write_checkpoint(store.path)
    assert first.path != second.path and first.snapshot.exists() and second.snapshot.exists()
    store.close()
    (tmp_path / "controller.sqlite3").unlink()
    with pytest.raises(sqlite3.Error):
        write_checkpoint(tmp_path / "controller.sqlite3")
    assert sorted((tmp_path / CHECKPOINT_DIRNAME).rglob("*")) == sorted(
        [first.path, first.snapshot, second.path, second.snapshot])


def test_iris_s_own_client_takes_a_checkpoint(controller: ControllerProcess) -> None:
    """Marin's ``iris`` deploy path calls ``begin_checkpoint`` with Iris's generated client (as this
    machine's user, without a token, over loopback); the answer reads the same through it."""
    from iris.rpc import controller_pb2 as iris_controller_pb2
    from iris.rpc.controller_connect import ControllerServiceClientSync

    with ControllerServiceClientSync(controller.info.url) as iris:
        answer = iris.begin_checkpoint(iris_controller_pb2.Controller.BeginCheckpointRequest(), timeout_ms=30_000)
    assert Path(answer.checkpoint_path).parent == controller.state_dir.resolve() / CHECKPOINT_DIRNAME
    assert (Path(answer.checkpoint_path) / SNAPSHOT_NAME).is_file() and answer.created_at.epoch_ms > 0
