"""The controller's moving part: queue, slots, task attempts, state transitions, recovery.

Everything runs on one asyncio event loop (the one serving both transports), so no locks are
needed: RPC handlers call ``submit`` / ``terminate`` / ``forget``; ``run`` schedules queued
tasks whenever something changes (a submit, an attempt's end) or a scheduling timeout falls
due, and otherwise sleeps: an idle controller does no periodic work; each attempt is
a coroutine (``runner.Attempt``) whose end feeds back into ``_attempt_ended``. State rules
live in ``states``, placement in ``scheduler``, persistence in ``store``, what a job's end does to
the jobs below it in ``trees`` (child jobs: ``/<user>/<parent>/<child>…``).

What happens to tasks when the controller stops: a graceful stop (SIGTERM/SIGINT) and a crash
(``kill -9``, found by ``recover`` at the next start) both end every running attempt as
WORKER_FAILED with a reason saying so (never left RUNNING); leftover processes of a crashed
run are killed. Pending work is kept and scheduled again after a restart.

Identity: a job's row id (``JobRow.id``) is never reused (the store's AUTOINCREMENT), and the
engine keys every running attempt by its random attempt uid, so the processes of a replaced job
that are still stopping can never be mistaken for its replacement's: their end, their exit code
and their output are theirs alone (the output of a replaced job is dropped). Each attempt gets a
fresh work dir, ``<work root>/job-<row id>/<task>.<attempt>-<uid prefix>``.

Failures of the controller itself: an exception while recording an attempt's end is logged and
ends the job FAILED with a reason naming it (retried on the next scheduling pass if even that
cannot be written); ``close`` waits at most ``CLOSE_TIMEOUT_S`` for attempts to end, then kills
what is left.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from fray_jupyter.controller import scheduler, setup, trees
from fray_jupyter.controller.budget import Budgets
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
from fray_jupyter.iris.attempts import charges_preemption
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.iris.states import TERMINAL_JOB_STATES, TERMINAL_TASK_STATES

J = job_pb2
RESTART_REASON: Final[str] = "controller restarted while the task was running"
SHUTDOWN_REASON: Final[str] = "controller stopped while the task was running"
REPLACED_REASON: Final[str] = "job replaced by a new submission"
CLOSE_TIMEOUT_S: Final[float] = 10.0
_LOG = logging.getLogger(__name__)


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds (the unit of every stored timestamp)."""
    return int(time.time() * 1000)


@dataclass
class Running:
    """A task holding a slot: from the moment it is placed until its last process exits.
    ``settled`` means its state was already decided elsewhere (stopped, bounced); ``forgotten``
    that its job was replaced (its rows are gone: nothing more is recorded for it)."""

    job: JobRow
    idx: int
    attempt: int
    uid: str
    process: Attempt
    settled: bool = False
    forgotten: bool = False
    output_archive: job_pb2.TaskOutputArchive | None = None


class Engine:
    """Owns the queue and the running tasks; see the module docstring."""

    def __init__(self, store: Store, work_root: Path, slots: int, cluster: Cluster | None = None,
                 passed_env: Mapping[str, str] | None = None, log_lines: int = 100_000,
                 budgets: Budgets | None = None) -> None:
        self.store = store
        self.budgets = budgets or Budgets(store)
        self.passed_env = dict(passed_env or {})
        self.cluster = cluster
        self.work_root = work_root
        self.slots = slots
        self.controller_url = ""
        self.queue: dict[str, scheduler.QueuedJob] = {}
        self.running: dict[str, Running] = {}  # by attempt uid
        self._deadlines: dict[str, int] = {}
        self.logs = LogBuffer(store, log_lines)
        self._attempt_tasks: set[asyncio.Task[None]] = set()
        self._unrecorded: list[tuple[Running, str]] = []
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
        """Kill every unfinished task of the job (state KILLED), stop its processes, and end every
        unfinished job below it (``trees``)."""
        with self.store.transaction():
            self._stop_tasks(job_id, J.TASK_STATE_KILLED, reason)
            self._recompute(job_id)
            self._end_descendants(job_id, trees.PARENT_JOB_TERMINATED)

    def complete(self, job_id: str, reason: str) -> None:
        """Mark every unfinished task of the job SUCCEEDED (stopping its processes), then the
        job itself, which ends the jobs below it: Iris's CompleteJob."""
        with self.store.transaction():
            self._stop_tasks(job_id, J.TASK_STATE_SUCCEEDED, reason)
            job = self.store.job(job_id)
            if job is None or job.state in TERMINAL_JOB_STATES:
                return
            self._deadlines.pop(job_id, None)
            ts = now_ms()
            started = {} if job.started_ms is not None else {"started_ms": ts}
            self.store.update_job(job_id, state=J.JOB_STATE_SUCCEEDED, finished_ms=ts, error="", exit_code=0,
                                  **started)
            self._end_descendants(job_id, trees.PARENT_JOB_TERMINATED)

    def forget(self, job_id: str) -> None:
        """Drop a job whose rows the caller has just deleted (``Store.delete_tree``, same event
        loop turn): unqueue it, drop its buffered output, stop its processes."""
        self.queue.pop(job_id, None)
        self._deadlines.pop(job_id, None)
        self.logs.discard(job_id)
        for running in self.running.values():
            if running.job.job_id == job_id and not running.forgotten:
                running.forgotten = running.settled = True
                running.process.stop(REPLACED_REASON)

    def _live(self, job_id: str, idx: int | None = None) -> list[Running]:
        """Running attempts of the current job named ``job_id`` (not of a replaced one)."""
        return [running for running in self.running.values() if running.job.job_id == job_id
                and not running.forgotten and (idx is None or running.idx == idx)]

    def pending_reason(self, job_id: str, ledger: scheduler.SlotLedger | None = None) -> str:
        """Why a PENDING job has not started: Iris's reason when the cluster can never place it,
        else ``slot_reason`` (empty when it is not waiting; ``ledger`` as there)."""
        queued = self.queue.get(job_id)
        return queued.hold if queued is not None and queued.hold else self.slot_reason(job_id, ledger)

    def slot_reason(self, job_id: str, ledger: scheduler.SlotLedger | None = None) -> str:
        """Why the job's queued tasks wait for this controller's task slots ("" when none wait for
        them: not queued, or held for ever by the cluster's rules). ``ledger`` is ``slot_ledger()``
        read once by a caller asking about many jobs in one event loop turn (a ListJobs page);
        None reads it now."""
        queued = self.queue.get(job_id)
        if queued is None or queued.hold:
            return ""
        holding = len(self._live(job_id))
        free = (ledger if ledger is not None else self.slot_ledger()).available(job_id)
        return scheduler.pending_reason(queued, free, self.slots, len(self.queue), holding)

    def slot_ledger(self) -> scheduler.SlotLedger:
        """The slots as the lending rule shares them now (``scheduler.SlotLedger.of``)."""
        running = [(running.job.job_id, not running.forgotten) for running in self.running.values()]
        return scheduler.SlotLedger.of(self.slots, running, self.queue)

    async def run(self) -> None:
        """Schedule whenever woken or when the next scheduling deadline falls due (never on a
        timer otherwise), and flush captured logs, until closed."""
        flusher = asyncio.ensure_future(self.logs.flush_periodically())
        try:
            while not self._closing:
                try:
                    await asyncio.wait_for(self._wake.wait(), self._until_next_deadline())
                except TimeoutError:
                    pass
                self._wake.clear()
                if not self._closing:
                    try:
                        self._retry_unrecorded()
                        self.schedule()
                    except Exception:  # noqa: BLE001 - keep scheduling whatever one pass hit
                        _LOG.exception("scheduling pass failed")
        finally:
            flusher.cancel()

    def _until_next_deadline(self) -> float | None:
        """Seconds until the earliest scheduling deadline of a queued job (None: none to wait
        for), plus a millisecond so the deadline has passed when the pass runs; one second while
        an attempt's end waits to be recorded again. Deadlines are only added by ``_enqueue``,
        which sets ``_wake``, so a new one is always seen."""
        due = [deadline for job_id, deadline in self._deadlines.items() if job_id in self.queue]
        if not due or self._unrecorded:
            return 1.0 if self._unrecorded else None
        return max(0.0, (min(due) - now_ms() + 1) / 1000)

    @property
    def busy(self) -> bool:
        """Whether any task is running or waiting to start (a job the cluster can never place,
        held PENDING forever, does not count: it must not keep the controller alive for good)."""
        return bool(self.running) or any(not queued.hold for queued in self.queue.values())

    async def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Stop scheduling, end running tasks as WORKER_FAILED, wait (at most ``timeout`` s)
        for their processes, then kill what is left."""
        self._closing = True
        self._wake.set()
        try:
            with self.store.transaction():
                for running in list(self.running.values()):
                    task = self.store.task(running.job.job_id, running.idx)
                    if task is not None and not running.settled:
                        self._lose_task(running.job, task, SHUTDOWN_REASON)
                        self._recompute(running.job.job_id)
        except Exception:  # noqa: BLE001 - still stop the processes
            _LOG.exception("could not record the running tasks as stopped")
            for running in list(self.running.values()):
                running.settled = True
                running.process.stop(SHUTDOWN_REASON)
        pending = set(self._attempt_tasks)
        if pending:
            _, pending = await asyncio.wait(pending, timeout=timeout)
        for unfinished in pending:
            unfinished.cancel()
        for running in list(self.running.values()):
            _LOG.warning("attempt %s of %s/%d did not end within %g s of shutdown; killing its processes",
                         running.attempt, running.job.job_id, running.idx, timeout)
            running.process.kill()
        self.running.clear()
        try:
            self.logs.flush()
        except Exception:  # noqa: BLE001 - shutting down: say so and go on
            _LOG.exception("could not store the last captured output")

    # -- scheduling ---------------------------------------------------------------------------
    def schedule(self) -> None:
        """Expire scheduling deadlines, then start what fits (``scheduler.place``), taking jobs in Iris's
        order: effective priority band highest first, users in turns inside a band (``budget``)."""
        self._expire_deadlines()
        slots = self.slot_ledger() if self.queue else None
        if slots is None or slots.exhausted:
            return
        holding = Counter(running.job.job_id for running in self.running.values() if not running.forgotten)
        waiting = list(self.queue.values())
        order, bands = self.budgets.scheduling_order([(job.job_id, job.order) for job in waiting])
        starts = scheduler.place([waiting[index] for index in order], slots, holding)
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
                    self._start(job, request, index, bands[queued.job_id])

    def _start(self, job: JobRow, request: controller_pb2.Controller.LaunchJobRequest, idx: int, band: int) -> None:
        task = self.store.task(job.job_id, idx)
        assert task is not None
        attempt = task.attempt + 1
        uid = secrets.token_hex(8)
        identity = TaskIdentity(job.job_id, idx, attempt, uid, job.replicas)
        workdir = self.work_root / f"job-{job.id}" / f"{idx}.{attempt}-{uid[:8]}"  # names stay out of paths
        entrypoint = request.entrypoint
        steps = setup.task_steps(entrypoint.setup_commands, entrypoint.run_command.argv)
        env = task_environment(
            identity, request.environment.env_vars, request.environment.setup_scripts,
            request.resources, workdir, self.controller_url, request.bundle_id, self.passed_env,
            constraints=request.constraints,
            worker_region=self.cluster.placed_region(request) if self.cluster is not None else "",
        )
        env.update(setup.worker_environment(workdir, self.work_root.parent, env.get("PATH", ""),
                                            setup=bool(entrypoint.setup_commands)))
        process = Attempt(
            steps=steps, workdir=workdir, env=env,
            timeout_s=job.timeout_ms / 1000 if job.timeout_ms else None,
            sink=lambda source, line: self._capture(running, source, line),
            on_spawn=lambda pid, token: self._spawned(running, pid, token),
        )
        self.store.insert_attempt(AttemptRow(
            job.job_id, idx, attempt, uid, J.TASK_STATE_ASSIGNED, None, "", None, None,
            None, None, "", str(workdir), 0,
        ))
        self.store.update_task(job.job_id, idx, state=J.TASK_STATE_ASSIGNED, attempt=attempt, priority_band=band)
        running = Running(job, idx, attempt, uid, process)
        self.running[uid] = running
        bundle = Path(job.bundle_path) if job.bundle_path else None
        files = dict(entrypoint.workdir_files)
        attempt_task = asyncio.ensure_future(self._execute(running, bundle, files))
        self._attempt_tasks.add(attempt_task)
        attempt_task.add_done_callback(self._attempt_tasks.discard)

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
        if not running.forgotten:
            try:
                running.output_archive = await self._capture_outputs(running)
            except Exception:  # noqa: BLE001 - the attempt's end is still recorded
                _LOG.exception("could not archive the outputs of %s/%d", running.job.job_id, running.idx)
        self.running.pop(running.uid, None)  # the slot is free whatever happens next
        self._wake.set()
        try:
            self._attempt_ended(running, outcome)
        except Exception as error:  # noqa: BLE001 - never lose an attempt's end: record a failure
            _LOG.exception("could not record the end of attempt %d of %s/%d", running.attempt,
                           running.job.job_id, running.idx)
            self._unrecorded.append((running, (f"controller error while recording the end of the task: "
                                               f"{type(error).__name__}: {error}")))
            self._retry_unrecorded()

    def _capture(self, running: Running, source: str, line: str) -> None:
        if running.forgotten:
            return
        try:
            self.logs.add(running.job.job_id, running.idx, running.attempt, source, line)
        except Exception:  # noqa: BLE001 - a failed flush must not kill the output pump
            _LOG.exception("could not store output of %s/%d", running.job.job_id, running.idx)

    async def _capture_outputs(self, running: Running) -> job_pb2.TaskOutputArchive:
        """Archive what the attempt wrote under ``$IRIS_OUTPUT_DIR`` before its end is recorded,
        as an Iris worker does; a stopped attempt's outputs are UNAVAILABLE (``cancelled``)."""
        if running.process.stop_reason is not None:
            return J.TaskOutputArchive(state=J.TaskOutputArchive.TASK_OUTPUT_ARCHIVE_STATE_UNAVAILABLE,
                                       error="cancelled")
        destination = (self.work_root.parent / "outputs" / f"job-{running.job.id}" / str(running.idx)
                       / running.uid / outputs.ARCHIVE_NAME)
        return await asyncio.to_thread(outputs.capture, running.process.workdir / OUTPUT_DIRNAME, destination)

    def _spawned(self, running: Running, pid: int, token: str) -> None:
        job, idx, attempt = running.job, running.idx, running.attempt
        if running.forgotten:
            self.store.add_stray(running.uid, pid, pid, token)
            return
        with self.store.transaction():
            self.store.update_attempt(job.job_id, idx, attempt, pid=pid, pgid=pid, proc_start=token)
            if running.settled:
                return
            task = self.store.task(job.job_id, idx)
            if task is not None and task.state == J.TASK_STATE_ASSIGNED:
                ts = now_ms()
                self.store.update_attempt(job.job_id, idx, attempt, state=J.TASK_STATE_RUNNING, started_ms=ts)
                self.store.update_task(job.job_id, idx, state=J.TASK_STATE_RUNNING, started_ms=ts)
                self._recompute(job.job_id)

    # -- attempt outcomes ---------------------------------------------------------------------
    def _attempt_ended(self, running: Running, outcome: Outcome) -> None:
        if running.forgotten:
            self.store.remove_stray(running.uid)
            return
        self.logs.finish(running.job.job_id, running.idx, running.attempt)
        self.logs.flush()
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

    def _retry_unrecorded(self) -> None:
        """End the jobs whose attempt end could not be recorded: FAILED with the reason."""
        while self._unrecorded:
            running, reason = self._unrecorded[0]
            try:
                self._record_failure(running, reason)
            except Exception:  # noqa: BLE001 - try again on the next scheduling pass
                _LOG.exception("could not record the failure of %s/%d; will retry", running.job.job_id, running.idx)
                return
            self._unrecorded.pop(0)

    def _record_failure(self, running: Running, reason: str) -> None:
        job_id, idx = running.job.job_id, running.idx
        with self.store.transaction():
            ts = now_ms()
            self.store.update_attempt(job_id, idx, running.attempt, state=J.TASK_STATE_FAILED, error=reason,
                                      finished_ms=ts)
            task, job = self.store.task(job_id, idx), self.store.job(job_id)
            if task is None or job is None or job.id != running.job.id or task.attempt != running.attempt:
                return
            if task.state not in TERMINAL_TASK_STATES:
                self.store.update_task(job_id, idx, state=J.TASK_STATE_FAILED, error=reason, finished_ms=ts)
            if job.state not in TERMINAL_JOB_STATES:
                self.queue.pop(job_id, None)
                self._deadlines.pop(job_id, None)
                self.store.update_job(job_id, state=J.JOB_STATE_FAILED, error=reason, finished_ms=ts, exit_code=1)
                self._stop_tasks(job_id, J.TASK_STATE_KILLED, f"job ended (JOB_STATE_FAILED): {reason}")

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
        if retry and trees.terminates_children(self._preemption_policy(job), job.replicas):
            self._end_descendants(job.job_id, trees.PARENT_TASK_RETRIED)
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
            if trees.ends_descendants(state, self._preemption_policy(job), job.replicas):
                self._end_descendants(job_id, trees.PARENT_JOB_TERMINATED)
            return
        self.store.update_job(job_id, **changes)

    @staticmethod
    def _preemption_policy(job: JobRow) -> int:
        """The ``preemption_policy`` the job was launched with (``trees`` reads it)."""
        return controller_pb2.Controller.LaunchJobRequest.FromString(job.request).preemption_policy

    def _end_descendants(self, job_id: str, reason: str) -> None:
        """End every unfinished job below ``job_id``: its unfinished tasks KILLED with ``reason``,
        then the job (KILLED, with that reason as its error)."""
        for below in self.store.descendants(job_id):
            current = self.store.job(below.job_id)
            if current is not None and current.state not in TERMINAL_JOB_STATES:
                self._stop_tasks(below.job_id, J.TASK_STATE_KILLED, reason)
                self._recompute(below.job_id)

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
        running = next(iter(self._live(job_id, task.idx)), None)
        if task.state in ACTIVE_TASK_STATES:
            finished = {} if running else {"finished_ms": now_ms()}
            self.store.update_attempt(job_id, task.idx, task.attempt, state=attempt_state, error=reason, **finished)
            if charges_preemption(attempt_state, started=task.state == J.TASK_STATE_RUNNING):
                self._count_preemption(job_id, task)
        if running is not None:
            running.settled = True
            running.process.stop(reason)

    def _count_preemption(self, job_id: str, task: TaskRow) -> None:
        """Charge the task's and its job's preemption budget for a live attempt stopped out of band
        (``iris.attempts``: a started attempt ended KILLED, WORKER_FAILED or PREEMPTED)."""
        self.store.update_task(job_id, task.idx, preemption_count=task.preemption_count + 1)
        job = self.store.job(job_id)
        if job is not None:
            self.store.update_job(job_id, preemption_count=job.preemption_count + 1)

    def _lose_task(self, job: JobRow, task: TaskRow, reason: str) -> None:
        """End a task whose worker (this controller) went away: WORKER_FAILED, siblings too."""
        self.store.update_attempt(job.job_id, task.idx, task.attempt, worker_failure=1)
        self._end_task(task, J.TASK_STATE_WORKER_FAILED, reason)
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
            for uid, pid, pgid, token in self.store.strays():
                killed += kill_stale_group(pid, pgid, token)
                self.store.remove_stray(uid)
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
