"""The controller's moving part: queue, slots, task attempts, state transitions, recovery.

Everything runs on one asyncio event loop (the one serving both transports), so no locks are
needed: RPC handlers call ``submit`` / ``terminate`` / ``forget``; ``run`` schedules queued
tasks whenever something changes (and every second, for scheduling timeouts); each attempt is
a coroutine (``runner.Attempt``) whose end feeds back into ``_attempt_ended``. State rules
live in ``states``, placement in ``scheduler``, persistence in ``store``.

What happens to tasks when the controller stops: a graceful stop (SIGTERM/SIGINT) and a crash
(``kill -9``, found by ``recover`` at the next start) both end every running attempt as
WORKER_FAILED with a reason saying so (never left RUNNING); leftover processes of a crashed
run are killed. Pending work is kept and scheduled again after a restart.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from fray_jupyter.controller import scheduler
from fray_jupyter.controller.cluster import Cluster
from fray_jupyter.controller.logbuffer import LogBuffer
from fray_jupyter.controller.runner import (
    OUTPUT_DIRNAME,
    Attempt,
    Outcome,
    TaskIdentity,
    kill_stale_group,
    prepare_workdir,
    task_environment,
)
from fray_jupyter.controller.states import ACTIVE_TASK_STATES, derive_job_state, task_retries_after_failure
from fray_jupyter.controller.store import AttemptRow, JobRow, Store, TaskRow
from fray_jupyter.iris import outputs
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.iris.states import TERMINAL_JOB_STATES, TERMINAL_TASK_STATES

J = job_pb2
RESTART_REASON: Final[str] = "controller restarted while the task was running"
SHUTDOWN_REASON: Final[str] = "controller stopped while the task was running"
_LOG = logging.getLogger(__name__)


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds (the unit of every stored timestamp)."""
    return int(time.time() * 1000)


@dataclass
class Running:
    """A task holding a slot: from the moment it is placed until its last process exits.
    ``settled`` means its state was already decided elsewhere (stopped, bounced)."""

    job: JobRow
    idx: int
    attempt: int
    process: Attempt
    settled: bool = False
    uid: str = ""
    output_archive: job_pb2.TaskOutputArchive | None = None


class Engine:
    """Owns the queue and the running tasks; see the module docstring."""

    def __init__(self, store: Store, work_root: Path, slots: int, cluster: Cluster | None = None) -> None:
        self.store = store
        self.cluster = cluster
        self.work_root = work_root
        self.slots = slots
        self.controller_url = ""
        self.queue: dict[str, scheduler.QueuedJob] = {}
        self.running: dict[tuple[int, int], Running] = {}
        self._deadlines: dict[str, int] = {}
        self.logs = LogBuffer(store)
        self._forgotten: set[int] = set()
        self._wake = asyncio.Event()
        self._closing = False

    # -- entry points -------------------------------------------------------------------------
    def submit(self, job: JobRow) -> None:
        """Queue a freshly stored job (or mark it UNSCHEDULABLE if it can never fit)."""
        self._admit(job, list(range(job.replicas)))

    def _admit(self, job: JobRow, indices: list[int]) -> None:
        """Queue ``indices`` of the job, unless they form a gang larger than this controller."""
        reason = scheduler.unschedulable_reason(len(indices), bool(job.coscheduled), self.slots)
        if reason is None:
            self._enqueue(job, indices)
            return
        with self.store.transaction():
            for task in self.store.tasks(job.job_id):
                if task.state == J.TASK_STATE_PENDING:
                    self._end_task(task, J.TASK_STATE_UNSCHEDULABLE, reason)
            self._recompute(job.job_id)

    def terminate(self, job_id: str, reason: str) -> None:
        """Kill every unfinished task of the job (state KILLED) and stop its processes."""
        with self.store.transaction():
            self._stop_tasks(job_id, J.TASK_STATE_KILLED, reason)
            self._recompute(job_id)

    def forget(self, job_id: str) -> None:
        """Drop a job from the queue and stop its processes; the caller deletes its rows."""
        self.queue.pop(job_id, None)
        self._deadlines.pop(job_id, None)
        for running in self.running.values():
            if running.job.job_id == job_id:
                self._forgotten.add(running.job.id)
                running.settled = True
                running.process.stop("job replaced by a new submission")

    def pending_reason(self, job_id: str) -> str:
        """Why a PENDING job has not started (empty when it is not waiting for slots)."""
        queued = self.queue.get(job_id)
        if queued is None:
            return ""
        if queued.hold:
            return queued.hold
        holding = sum(1 for running in self.running.values() if running.job.job_id == job_id)
        return scheduler.pending_reason(queued, self.free_slots(), self.slots, len(self.queue), holding)

    def free_slots(self) -> int:
        """Slots not held by any task."""
        return self.slots - len(self.running)

    async def run(self) -> None:
        """Schedule whenever woken (or every second) and flush captured logs, until closed."""
        flusher = asyncio.ensure_future(self.logs.flush_periodically())
        try:
            while not self._closing:
                try:
                    await asyncio.wait_for(self._wake.wait(), 1.0)
                except TimeoutError:
                    pass
                self._wake.clear()
                if not self._closing:
                    try:
                        self.schedule()
                    except Exception:  # noqa: BLE001 - keep scheduling whatever one pass hit
                        _LOG.exception("scheduling pass failed")
        finally:
            flusher.cancel()

    async def close(self) -> None:
        """Stop scheduling, end running tasks as WORKER_FAILED, wait for their processes."""
        self._closing = True
        self._wake.set()
        with self.store.transaction():
            for running in list(self.running.values()):
                task = self.store.task(running.job.job_id, running.idx)
                if task is not None and not running.settled:
                    self._lose_task(running.job, task, SHUTDOWN_REASON)
                    self._recompute(running.job.job_id)
        while self.running:
            await asyncio.sleep(0.02)
        self.logs.flush()

    # -- scheduling ---------------------------------------------------------------------------
    def schedule(self) -> None:
        """Expire scheduling deadlines, then start what fits (``scheduler.place``)."""
        self._expire_deadlines()
        holding = Counter(running.job.job_id for running in self.running.values())
        starts = scheduler.place(self.queue.values(), self.free_slots(), holding)
        if not starts:
            return
        with self.store.transaction():
            for queued, indices in starts:
                job = self.store.job(queued.job_id)
                queued.pending = [index for index in queued.pending if index not in indices]
                if not queued.pending:
                    del self.queue[queued.job_id]
                if job is None:
                    continue
                request = controller_pb2.Controller.LaunchJobRequest.FromString(job.request)
                for index in indices:
                    self._start(job, request, index)

    def _start(self, job: JobRow, request: controller_pb2.Controller.LaunchJobRequest, idx: int) -> None:
        task = self.store.task(job.job_id, idx)
        assert task is not None
        attempt = task.attempt + 1
        identity = TaskIdentity(job.job_id, idx, attempt, secrets.token_hex(8), job.replicas)
        workdir = self.work_root / f"job-{job.id}" / f"{idx}.{attempt}"  # names stay out of paths
        entrypoint = request.entrypoint
        steps = [["bash", "-c", command] for command in entrypoint.setup_commands]
        steps.append(list(entrypoint.run_command.argv))
        env = task_environment(
            identity, request.environment.env_vars, request.environment.setup_scripts,
            request.resources, workdir, self.controller_url, request.bundle_id,
        )
        process = Attempt(
            steps=steps, workdir=workdir, env=env,
            timeout_s=job.timeout_ms / 1000 if job.timeout_ms else None,
            sink=lambda source, line: self._capture(job, idx, attempt, source, line),
            on_spawn=lambda pid, token: self._spawned(job, idx, attempt, pid, token),
        )
        self.store.insert_attempt(AttemptRow(
            job.job_id, idx, attempt, identity.attempt_uid, J.TASK_STATE_ASSIGNED, None, "", None, None,
            None, None, "", str(workdir), 0,
        ))
        self.store.update_task(job.job_id, idx, state=J.TASK_STATE_ASSIGNED, attempt=attempt)
        running = Running(job, idx, attempt, process, uid=identity.attempt_uid)
        self.running[(job.id, idx)] = running
        bundle = Path(job.bundle_path) if job.bundle_path else None
        files = dict(entrypoint.workdir_files)
        asyncio.ensure_future(self._execute(running, bundle, files))

    async def _execute(self, running: Running, bundle: Path | None, files: dict[str, bytes]) -> None:
        try:
            await asyncio.to_thread(prepare_workdir, running.process.workdir, bundle, files)
        except (OSError, ValueError) as error:
            outcome = Outcome(J.TASK_STATE_FAILED, None, f"could not prepare the work dir: {error}")
        else:
            try:
                outcome = await running.process.run()
            except Exception as error:  # noqa: BLE001 - an attempt must always give its slot back
                _LOG.exception("attempt %d of %s/%d failed", running.attempt, running.job.job_id, running.idx)
                outcome = Outcome(J.TASK_STATE_FAILED, None, f"controller error while running the task: {error}")
        if running.job.id not in self._forgotten:
            running.output_archive = await self._capture_outputs(running)
        self._attempt_ended(running, outcome)

    async def _capture_outputs(self, running: Running) -> job_pb2.TaskOutputArchive:
        """Archive what the attempt wrote under ``$IRIS_OUTPUT_DIR`` before its end is recorded,
        as an Iris worker does; a stopped attempt's outputs are UNAVAILABLE (``cancelled``)."""
        if running.process.stop_reason is not None:
            return J.TaskOutputArchive(state=J.TaskOutputArchive.TASK_OUTPUT_ARCHIVE_STATE_UNAVAILABLE,
                                       error="cancelled")
        destination = (self.work_root.parent / "outputs" / f"job-{running.job.id}" / str(running.idx)
                       / running.uid / outputs.ARCHIVE_NAME)
        return await asyncio.to_thread(outputs.capture, running.process.workdir / OUTPUT_DIRNAME, destination)

    def _capture(self, job: JobRow, idx: int, attempt: int, source: str, line: str) -> None:
        if job.id not in self._forgotten:
            self.logs.add(job.job_id, idx, attempt, source, line)

    def _spawned(self, job: JobRow, idx: int, attempt: int, pid: int, token: str) -> None:
        running = self.running.get((job.id, idx))
        if job.id in self._forgotten:
            return
        with self.store.transaction():
            self.store.update_attempt(job.job_id, idx, attempt, pid=pid, pgid=pid, proc_start=token)
            if running is None or running.settled:
                return
            task = self.store.task(job.job_id, idx)
            if task is not None and task.state == J.TASK_STATE_ASSIGNED:
                ts = now_ms()
                self.store.update_attempt(job.job_id, idx, attempt, state=J.TASK_STATE_RUNNING, started_ms=ts)
                self.store.update_task(job.job_id, idx, state=J.TASK_STATE_RUNNING, started_ms=ts)
                self._recompute(job.job_id)

    # -- attempt outcomes ---------------------------------------------------------------------
    def _attempt_ended(self, running: Running, outcome: Outcome) -> None:
        self.running.pop((running.job.id, running.idx), None)
        self._wake.set()
        self.logs.flush()
        if running.job.id in self._forgotten:
            if not any(other.job.id == running.job.id for other in self.running.values()):
                self._forgotten.discard(running.job.id)
            return
        job_id, idx = running.job.job_id, running.idx
        with self.store.transaction():
            if running.settled:
                if running.output_archive is not None:
                    self.store.set_output_archive(job_id, idx, running.attempt,
                                                  running.output_archive.SerializeToString())
                self.store.update_attempt(job_id, idx, running.attempt, exit_code=outcome.exit_code,
                                          finished_ms=now_ms())
                return
            if running.output_archive is not None:
                self.store.set_output_archive(job_id, idx, running.attempt, running.output_archive.SerializeToString())
            ts = now_ms()
            self.store.update_attempt(
                job_id, idx, running.attempt, state=outcome.state, exit_code=outcome.exit_code,
                error=outcome.error, finished_ms=ts,
            )
            task = self.store.task(job_id, idx)
            job = self.store.job(job_id)
            if task is None or job is None:
                return
            if outcome.state != J.TASK_STATE_FAILED:
                self.store.update_task(job_id, idx, state=outcome.state, exit_code=outcome.exit_code,
                                       error=outcome.error, finished_ms=ts)
            else:
                self._task_failed(job, task, outcome)
            self._recompute(job_id)

    def _task_failed(self, job: JobRow, task: TaskRow, outcome: Outcome) -> None:
        failures = task.failure_count + 1
        self.store.update_job(job.job_id, failure_count=job.failure_count + 1)
        retry = task_retries_after_failure(failures, job.max_retries_failure, timed_out=outcome.timed_out)
        if retry:
            self.store.update_task(job.job_id, task.idx, state=J.TASK_STATE_PENDING, failure_count=failures,
                                   exit_code=outcome.exit_code, error=outcome.error)
        else:
            self.store.update_task(job.job_id, task.idx, state=J.TASK_STATE_FAILED, failure_count=failures,
                                   exit_code=outcome.exit_code, error=outcome.error, finished_ms=now_ms())
        requeue = [task.idx] if retry else []
        if job.coscheduled:
            sibling_id = f"{job.job_id}/{task.idx}"
            for sibling in self.store.tasks(job.job_id):
                if sibling.idx == task.idx or sibling.state not in ACTIVE_TASK_STATES:
                    continue
                if retry:
                    message = f"Coscheduled sibling {sibling_id} bounced for atomic re-scheduling"
                    self._settle(job.job_id, sibling, J.TASK_STATE_PENDING, message, J.TASK_STATE_COSCHED_FAILED)
                    requeue.append(sibling.idx)
                else:
                    self._end_task(sibling, J.TASK_STATE_COSCHED_FAILED, f"Coscheduled sibling {sibling_id} failed")
        if requeue:
            self._enqueue(job, sorted(requeue))

    def _recompute(self, job_id: str) -> None:
        """Re-derive the job's state from its tasks; on a terminal state, stop the rest."""
        job = self.store.job(job_id)
        if job is None or job.state in TERMINAL_JOB_STATES:
            return
        counts = self.store.task_state_counts([job_id])[job_id]
        state = derive_job_state(job.state, counts, job.failure_count, job.max_task_failures,
                                 job.started_ms is not None)
        if state == job.state:
            return
        changes: dict[str, object] = {"state": state}
        if state == J.JOB_STATE_RUNNING and job.started_ms is None:
            changes["started_ms"] = now_ms()
            self._deadlines.pop(job_id, None)
        if state in TERMINAL_JOB_STATES:
            self.queue.pop(job_id, None)
            self._deadlines.pop(job_id, None)
            changes.update(self._final_summary(job, state))
            self.store.update_job(job_id, **changes)
            self._stop_tasks(job_id, J.TASK_STATE_KILLED, f"job ended ({J.JobState.Name(state)})")
            return
        self.store.update_job(job_id, **changes)

    def _final_summary(self, job: JobRow, state: int) -> dict[str, object]:
        """Finish time, exit code and error of a job reaching terminal ``state``."""
        tasks = self.store.tasks(job.job_id)
        culprit = next((t for t in tasks if t.state != J.TASK_STATE_SUCCEEDED and t.error), None)
        error = culprit.error if culprit and state != J.JOB_STATE_SUCCEEDED else ""
        if state == J.JOB_STATE_FAILED and job.failure_count > job.max_task_failures:
            error = (f"Cumulative failed task attempts exceeded max_task_failures: failures={job.failure_count}, "
                     f"limit={job.max_task_failures}" + (f"; {error}" if error else ""))
        exit_code = culprit.exit_code if culprit and culprit.exit_code is not None else 0
        return {"finished_ms": now_ms(), "error": error, "exit_code": exit_code if error else 0}

    # -- task transitions ---------------------------------------------------------------------
    def _stop_tasks(self, job_id: str, state: int, reason: str) -> None:
        self.queue.pop(job_id, None)
        for task in self.store.tasks(job_id):
            if task.state not in TERMINAL_TASK_STATES:
                self._end_task(task, state, reason)

    def _end_task(self, task: TaskRow, state: int, reason: str) -> None:
        """Make an unfinished task terminal in ``state``, stopping its process if it has one."""
        self._settle(task.job_id, task, state, reason, state)
        self.store.update_task(task.job_id, task.idx, finished_ms=now_ms())

    def _settle(self, job_id: str, task: TaskRow, state: int, reason: str, attempt_state: int) -> None:
        """Set a task's state (and its live attempt's) from outside its attempt coroutine. An
        attempt whose process is still stopping gets its finish time when the process exits, so
        a crash meanwhile leaves it for ``recover`` to kill."""
        self.store.update_task(job_id, task.idx, state=state, error=reason)
        running = next((r for r in self.running.values() if r.job.job_id == job_id and r.idx == task.idx), None)
        if task.state in ACTIVE_TASK_STATES:
            finished = {} if running else {"finished_ms": now_ms()}
            self.store.update_attempt(job_id, task.idx, task.attempt, state=attempt_state, error=reason, **finished)
        if running is not None:
            running.settled = True
            running.process.stop(reason)

    def _lose_task(self, job: JobRow, task: TaskRow, reason: str) -> None:
        """End a task whose worker (this controller) went away: WORKER_FAILED, siblings too."""
        self.store.update_attempt(job.job_id, task.idx, task.attempt, worker_failure=1)
        self._end_task(task, J.TASK_STATE_WORKER_FAILED, reason)
        self.store.update_task(job.job_id, task.idx, preemption_count=task.preemption_count + 1)
        self.store.update_job(job.job_id, preemption_count=job.preemption_count + 1)
        if job.coscheduled:
            for sibling in self.store.tasks(job.job_id):
                if sibling.state not in TERMINAL_TASK_STATES:
                    self._end_task(sibling, J.TASK_STATE_COSCHED_FAILED,
                                   f"Coscheduled sibling {job.job_id}/{task.idx} failed: {reason}")

    # -- queue ----------------------------------------------------------------------------------
    def _enqueue(self, job: JobRow, indices: Iterable[int]) -> None:
        queued = self.queue.get(job.job_id)
        if queued is None:
            queued = scheduler.QueuedJob(job.job_id, job.id, bool(job.coscheduled), hold=self._hold(job))
            out_of_order = bool(self.queue) and next(reversed(self.queue.values())).order > job.id
            self.queue[job.job_id] = queued
            if out_of_order:
                self.queue = dict(sorted(self.queue.items(), key=lambda item: item[1].order))
        queued.pending = sorted(set(queued.pending) | set(indices))
        if job.scheduling_timeout_ms and job.started_ms is None:
            self._deadlines[job.job_id] = job.submitted_ms + job.scheduling_timeout_ms
        self._wake.set()

    def _hold(self, job: JobRow) -> str:
        """Iris's reason when the target cluster can never place the job (see ``scheduler``), else ""."""
        if self.cluster is None:
            return ""
        return self.cluster.hold_reason(controller_pb2.Controller.LaunchJobRequest.FromString(job.request)) or ""

    def _expire_deadlines(self) -> None:
        now = now_ms()
        expired = [job_id for job_id, deadline in self._deadlines.items()
                   if deadline <= now and job_id in self.queue]
        for job_id in expired:
            waiting = len(self.queue[job_id].pending)
            with self.store.transaction():
                for task in self.store.tasks(job_id):
                    if task.state == J.TASK_STATE_PENDING:
                        self._end_task(task, J.TASK_STATE_UNSCHEDULABLE,
                                       f"Scheduling timeout exceeded: {waiting} task(s) found no free slot")
                self._recompute(job_id)

    # -- restart --------------------------------------------------------------------------------
    def recover(self) -> dict[str, int]:
        """After a previous run ended (cleanly or not): kill its leftover task processes, end
        its unfinished attempts as WORKER_FAILED, and queue the pending tasks again."""
        killed = lost = 0
        with self.store.transaction():
            for attempt in self.store.unfinished_attempts():
                if attempt.pid and attempt.pgid:
                    killed += kill_stale_group(attempt.pid, attempt.pgid, attempt.proc_start)
                job = self.store.job(attempt.job_id)
                task = self.store.task(attempt.job_id, attempt.idx)
                if job is None or task is None or task.attempt != attempt.attempt or task.state not in ACTIVE_TASK_STATES:
                    # already settled (stopped, bounced) while its process was still exiting
                    self.store.update_attempt(attempt.job_id, attempt.idx, attempt.attempt, finished_ms=now_ms())
                    continue
                self._lose_task(job, task, RESTART_REASON)
                lost += 1
                self._recompute(job.job_id)
        for job in self.store.jobs_in_states((J.JOB_STATE_PENDING, J.JOB_STATE_RUNNING)):
            pending = [task.idx for task in self.store.tasks(job.job_id) if task.state == J.TASK_STATE_PENDING]
            if pending:
                self._admit(job, pending)
        return {"killed_process_groups": killed, "lost_tasks": lost, "queued_jobs": len(self.queue)}
