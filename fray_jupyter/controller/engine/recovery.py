"""Recovery at start: what a previous run of the controller left behind, cleanly stopped or killed.

Rules:

* A graceful stop (SIGTERM/SIGINT) already ended every running attempt as WORKER_FAILED
  (``Engine.close``); a crash (``kill -9``) left them unfinished. Either way no task stays RUNNING:
  each unfinished attempt's process group is killed if its leader is still the process recorded
  (``runner.kill_stale_group``), and an attempt still its task's current one, of a task still
  active, is lost (``transitions.worker_lost``: WORKER_FAILED with ``RESTART_REASON``, gang
  siblings too); the others were settled while their process was still exiting and only get their
  finish time.
* The process groups of replaced jobs' attempts that were still stopping (``stray_processes``) are
  killed and forgotten.
* Pending work is kept: the PENDING tasks of every PENDING or RUNNING job are queued again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

from fray_jupyter.controller.engine.attempt_lifecycle import now_ms
from fray_jupyter.controller.kernel.rows import JobRow
from fray_jupyter.controller.kernel.state_rules import ACTIVE_TASK_STATES
from fray_jupyter.controller.runtime.runner import kill_stale_group
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.proto import job_pb2

J = job_pb2
RESTART_REASON: Final[str] = "controller restarted while the task was running"


class Recovered(NamedTuple):
    """Process groups killed and tasks lost."""

    killed: int
    lost: int


def recover(store: Store, lose: Callable[[str, int, str], None], admit: Callable[[JobRow, list[int]], None]) -> Recovered:
    """Apply the module rules to ``store``: ``lose(job id, task index, reason)`` ends a lost task
    (inside the store's transaction), ``admit(job, indices)`` queues pending tasks again."""
    killed = lost = 0
    with store.transaction():
        for uid, pid, pgid, token in store.strays():
            killed += kill_stale_group(pid, pgid, token)
            store.remove_stray(uid)
        for attempt in store.unfinished_attempts():
            if attempt.pid and attempt.pgid:
                killed += kill_stale_group(attempt.pid, attempt.pgid, attempt.proc_start)
            job = store.job(attempt.job_id)
            task = store.task(attempt.job_id, attempt.idx)
            if job is None or task is None or task.attempt != attempt.attempt or task.state not in ACTIVE_TASK_STATES:
                store.update_attempt(attempt.job_id, attempt.idx, attempt.attempt, finished_ms=now_ms())
                continue
            lose(job.job_id, task.idx, RESTART_REASON)
            lost += 1
    for job in store.jobs_in_states((J.JOB_STATE_PENDING, J.JOB_STATE_RUNNING)):
        pending = [task.idx for task in store.tasks(job.job_id) if task.state == J.TASK_STATE_PENDING]
        if pending:
            admit(job, pending)
    return Recovered(killed, lost)
