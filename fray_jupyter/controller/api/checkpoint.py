"""``BeginCheckpoint``: a consistent snapshot of the controller's store, as a genuine Iris controller
writes one (marin-iris 0.2.227, ``iris.cluster.controller.checkpoint``).

Rules:

* Where: ``<state dir>/controller-state/<created_at_ms>/controller.sqlite3.zst`` (Iris writes
  ``<remote_state_dir>/controller-state/<epoch ms>/controller.sqlite3.zst``; the embedded controller's
  state dir is its one state dir). The response's ``checkpoint_path`` is that ``<created_at_ms>`` dir,
  as Iris's is. A second checkpoint in the same millisecond waits for the next one (never overwrites).
* What: an online backup of the live SQLite store (sqlite3's backup API, read through a connection
  of its own, so it is one consistent state whatever was committed before), switched from WAL to a
  single self-contained file (``journal_mode=DELETE``), then zstd-compressed at level
  ``ZSTD_LEVEL`` (Iris's level). The uncompressed copy is removed; files are private (0600).
* Counts (the caller's, ``service``): the jobs and tasks in the store, and the workers the cluster
  lists (``worker_count``). The snapshot is taken on the controller's event loop, the store's only
  writer, so nothing is written between the backup and the counts: they are the snapshot's.
* Old checkpoints are kept (Iris prunes those older than 3 days from its bucket): an operator removes
  ``controller-state`` dirs when no longer needed (``retention`` never does; they count towards the
  state dir's size).
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

import zstandard

from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.iris.proto import controller_pb2, job_pb2

if TYPE_CHECKING:
    from fray_jupyter.controller.engine.cluster import Cluster
    from fray_jupyter.controller.store.store import Store

CHECKPOINT_DIRNAME: Final[str] = "controller-state"
"""The dir under the state dir that holds one dir per checkpoint (Iris's name)."""
SNAPSHOT_NAME: Final[str] = "controller.sqlite3.zst"
"""The compressed snapshot's file name inside a checkpoint's dir (Iris's name)."""
ZSTD_LEVEL: Final[int] = 3


@dataclass(frozen=True)
class Checkpoint:
    """A written checkpoint: its dir, when it was taken (epoch ms) and the snapshot's file."""

    path: Path
    created_ms: int

    @property
    def snapshot(self) -> Path:
        """The compressed database file."""
        return self.path / SNAPSHOT_NAME


def _fresh_dir(root: Path) -> tuple[Path, int]:
    """Create ``root/<now ms>`` (0700), moving on to the next millisecond while that one exists."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    while True:
        created_ms = int(time.time() * 1000)
        path = root / str(created_ms)
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            time.sleep(0.001)
            continue
        return path, created_ms


def write_checkpoint(store_path: Path) -> Checkpoint:
    """Back up the SQLite database at ``store_path`` into a new checkpoint under
    ``<its dir>/controller-state`` (the module's rules); raises ``OSError`` or ``sqlite3.Error``
    when it cannot, leaving no partial snapshot behind."""
    path, created_ms = _fresh_dir(store_path.parent / CHECKPOINT_DIRNAME)
    checkpoint = Checkpoint(path, created_ms)
    copy = path / "controller.sqlite3"
    try:
        source = sqlite3.connect(f"{store_path.resolve().as_uri()}?mode=ro", uri=True)
        target = sqlite3.connect(copy)
        try:
            source.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")
            target.commit()
        finally:
            target.close()
            source.close()
        with copy.open("rb") as raw, checkpoint.snapshot.open("wb") as packed:
            zstandard.ZstdCompressor(level=ZSTD_LEVEL).copy_stream(raw, packed)
    except BaseException:
        copy.unlink(missing_ok=True)
        checkpoint.snapshot.unlink(missing_ok=True)
        path.rmdir()
        raise
    copy.unlink()
    return checkpoint


def read_snapshot(snapshot: Path, destination: Path) -> Path:
    """Decompress a checkpoint's ``controller.sqlite3.zst`` to ``destination`` (an SQLite database
    file, openable with ``sqlite3``); returns ``destination``."""
    with snapshot.open("rb") as packed, destination.open("wb") as raw:
        zstandard.ZstdDecompressor().copy_stream(packed, raw)
    return destination


def begin_checkpoint(store: Store, cluster: Cluster | None) -> controller_pb2.Controller.BeginCheckpointResponse:
    """Serve ``BeginCheckpoint``: write a checkpoint of ``store`` (``write_checkpoint``) and answer with
    its dir, time and counts (the module's rules); INTERNAL with one line naming the dir when it
    cannot be written."""
    try:
        checkpoint = write_checkpoint(store.path)
    except (OSError, sqlite3.Error) as error:
        raise RpcError(Code.INTERNAL, f"could not write a checkpoint under "
                                      f"{store.path.parent / CHECKPOINT_DIRNAME}: {error}") from None
    jobs, tasks = store.counts_by_user(job_pb2.JobState.values())
    workers = cluster.list_workers(controller_pb2.Controller.ListWorkersRequest()).workers if cluster else []
    response = controller_pb2.Controller.BeginCheckpointResponse(
        checkpoint_path=str(checkpoint.path), job_count=sum(sum(by.values()) for by in jobs.values()),
        task_count=sum(sum(by.values()) for by in tasks.values()), worker_count=len(workers))
    response.created_at.epoch_ms = checkpoint.created_ms
    return response
