"""A controller store holding thousands of finished jobs at once, for the benches and browser tests
that need a shared cluster's worth of them: the rows a controller keeps after that many launches
(jobs, their tasks, parents), written through the controller's own ``Store`` in one transaction
before the controller starts. 10,000 jobs take about a second, where launching them would run
10,000 processes.

Rules: each ``Seed`` is one job, finished in ``state`` with every task in the matching task state
(its tasks' counts are what the sidebar's bar draws); its user is its id's first component; its
name is the id lower-cased, as Iris stores it; parents must come before their children.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from fray_jupyter.controller.kernel.rows import JobRow
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.proto import job_pb2
from tests.controller_harness import launch_request

TASK_STATE_OF: Final[dict[int, int]] = {
    job_pb2.JOB_STATE_SUCCEEDED: job_pb2.TASK_STATE_SUCCEEDED,
    job_pb2.JOB_STATE_FAILED: job_pb2.TASK_STATE_FAILED,
    job_pb2.JOB_STATE_KILLED: job_pb2.TASK_STATE_KILLED,
}


@dataclass(frozen=True)
class Seed:
    """One finished job: its id, its parent's (``""``: a root), when it was submitted (epoch ms)."""

    job_id: str
    parent: str = ""
    submitted_ms: int = 0
    state: int = job_pb2.JOB_STATE_SUCCEEDED


def seed_store(state_dir: Path, seeds: Iterable[Seed], *, replicas: int = 1) -> int:
    """Write ``seeds`` into the store under ``state_dir`` (created if needed); returns how many."""
    request = launch_request("seed", "true", replicas=replicas)
    now = int(time.time() * 1000)
    template = JobRow(
        id=0, job_id="", name="", user="", state=job_pb2.JOB_STATE_SUCCEEDED, submitted_ms=0, started_ms=now,
        finished_ms=now, error="", exit_code=0, status_message="", replicas=replicas, coscheduled=0,
        max_retries_failure=0, max_task_failures=0, timeout_ms=None, scheduling_timeout_ms=None, failure_count=0,
        preemption_count=0, request=request.SerializeToString(), resources=request.resources.SerializeToString(),
        bundle_path="")
    state_dir.mkdir(parents=True, exist_ok=True)
    store = Store(state_dir / "controller.sqlite3")
    count = 0
    try:
        with store.transaction():
            for seed in seeds:
                failed = seed.state == job_pb2.JOB_STATE_FAILED
                store.insert_job(replace(
                    template, job_id=seed.job_id, name=seed.job_id.lower(), user=seed.job_id.split("/")[1],
                    state=seed.state, submitted_ms=seed.submitted_ms or now, parent_job_id=seed.parent,
                    exit_code=1 if failed else 0, error="Exit code 1" if failed else ""))
                for index in range(replicas):
                    store.update_task(seed.job_id, index, state=TASK_STATE_OF[seed.state])
                count += 1
    finally:
        store.close()
    return count


ME: Final[str] = "alice"
NEEDLE: Final[str] = "needle-step"
"""The one child of ``shared_cluster`` whose name holds "needle": 9,000 jobs from the newest, past the
deepest page Iris lists (offset 5,000), so only a search reaches it."""


def shared_cluster(jobs: int = 10_000, users: int = 50, *, now_ms: int | None = None) -> list[Seed]:
    """A shared cluster's jobs: ``jobs`` finished jobs of ``users`` users (``ME`` and ``user01``…),
    a fifth of them roots, each with 4 children (steps); every tenth root is ``ME``'s, the others go
    round the rest; every seventh root failed. The newest come last; one old step is ``NEEDLE``."""
    names = [ME, *(f"user{i:02d}" for i in range(1, users))]
    now = now_ms or int(time.time() * 1000)
    roots = max(jobs // 5, 1)
    needle_root = max(0, roots - 9_000 // 5)
    seeds: list[Seed] = []
    for index in range(roots):
        user = ME if index % 10 == 0 else names[1 + index % (len(names) - 1)]
        root = f"/{user}/coordinator-{index:05d}"
        submitted = now - (roots - index) * 5_000
        state = job_pb2.JOB_STATE_FAILED if index % 7 == 3 else job_pb2.JOB_STATE_SUCCEEDED
        seeds.append(Seed(root, "", submitted, state))
        for step in range(4):
            name = NEEDLE if index == needle_root and step == 0 else f"step-{step}"
            seeds.append(Seed(f"{root}/{name}", root, submitted + 1 + step))
    return seeds[:jobs]
