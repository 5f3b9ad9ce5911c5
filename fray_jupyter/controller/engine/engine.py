"""The controller's scheduling loop: the queue, the scheduling deadlines, and the one place
transitions are carried out.

Everything runs on one asyncio event loop (the one serving both transports), so no locks are
needed: RPC handlers call ``submit`` / ``terminate`` / ``complete`` / ``forget``; ``run`` schedules
queued tasks whenever something changes (a submit, an attempt's end) or a scheduling timeout
falls due, and otherwise sleeps: an idle controller does no periodic work. Who does what:

* ``transitions``: what an event does to a job's rows (a pure kernel returning ``Effects``);
  ``_transition`` loads the job's ``Snapshot``, runs one event and ``apply`` carries the effects
  out: rows written, attempts stopped, the queue changed, the jobs below ended (``trees``).
* ``attempt_lifecycle``: each attempt's work dir, environment and processes; its first process starting
  and its end come back here (``_attempt_running``, ``_attempt_ended``).
* ``scheduler``: which queued tasks start (slots, gangs, lending); ``budgets``: in which order.
* ``recovery``: what a previous run left (``recover``, at start); ``launched``: the decoded requests.

What happens to tasks when the controller stops: a graceful stop (SIGTERM/SIGINT) ends every
running attempt as WORKER_FAILED with a reason saying so (``close``), as a crash does at the next
start (``recovery``); never left RUNNING. Pending work is kept and scheduled again after a restart.

Failures of the controller itself: an exception while recording an attempt's end is logged and
ends the job FAILED with a reason naming it (retried on the next scheduling pass if even that
cannot be written); ``close`` waits at most ``CLOSE_TIMEOUT_S`` for attempts to end, then kills
what is left.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from functools import partial
from pathlib import Path
from typing import Final

from fray_jupyter.controller.engine import recovery
from fray_jupyter.controller.engine.attempt_lifecycle import Attempts, Running, now_ms
from fray_jupyter.controller.engine.budgets import Budgets
from fray_jupyter.controller.engine.cluster import Cluster
from fray_jupyter.controller.engine.endpoint_registry import Endpoints
from fray_jupyter.controller.engine.launched import LaunchedRequests
from fray_jupyter.controller.kernel import scheduler, transitions
from fray_jupyter.controller.kernel.exits import Outcome
from fray_jupyter.controller.kernel.rows import JobRow
from fray_jupyter.controller.kernel.transitions import Effects, Event, Snapshot
from fray_jupyter.controller.stats.sampler import Sampler, Target
from fray_jupyter.controller.stats.stats import Stats
from fray_jupyter.controller.store.logbuffer import LogBuffer
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import TERMINAL_JOB_STATES

J = job_pb2
SHUTDOWN_REASON: Final[str] = "controller stopped while the task was running"
REPLACED_REASON: Final[str] = "job replaced by a new submission"
CLOSE_TIMEOUT_S: Final[float] = 10.0
_LOG = logging.getLogger(__name__)

class Engine:
    """Owns the queue and the running tasks; see the module docstring."""

    def __init__(self, store: Store, work_root: Path, slots: int, cluster: Cluster | None = None,
                 passed_env: Mapping[str, str] | None = None, log_lines: int = 100_000,
                 budgets: Budgets | None = None, max_tasks: int | None = None) -> None:
        self.store = store
        self.budgets = budgets or Budgets(store)
        self.cluster = cluster
        self.slots = slots
        self.max_tasks = max_tasks if max_tasks is not None else scheduler.default_max_tasks(slots)
        """At most this many task processes run at once, slots or not (``scheduler``)."""
        self.queue: dict[str, scheduler.QueuedJob] = {}
        self.logs = LogBuffer(store, log_lines)
        self.requests = LaunchedRequests(store)
        self.attempts = Attempts(store, self.logs, work_root, passed_env or {}, cluster, self._attempt_running,
                                 self._attempt_ended, self._unrecordable)
        self._deadlines: dict[str, int] = {}
        self._unrecorded: list[tuple[Running, str]] = []
        self._wake = asyncio.Event()
        self._closing = False
        self.endpoints = Endpoints(store, self.logs, self._wake.set)
        self.stats = Stats(store)
        """The stats namespaces (``stats``): the sampler's rows, the task events, profiles."""
        self.sampler = Sampler(self._sample_targets, self.stats)

    @property
    def running(self) -> dict[str, Running]:
        """The attempts holding a slot, by attempt uid (``attempt_lifecycle.Attempts.running``)."""
        return self.attempts.running

    @property
    def controller_url(self) -> str:
        """The Connect URL tasks are given (``IRIS_CONTROLLER_URL``); set once the server listens."""
        return self.attempts.controller_url

    @controller_url.setter
    def controller_url(self, url: str) -> None:
        self.attempts.controller_url = url

    # -- entry points -------------------------------------------------------------------------
    def submit(self, job: JobRow) -> None:
        """Queue a freshly stored job (or mark it UNSCHEDULABLE if it can never fit)."""
        self.requests.of(job)
        self._admit(job, list(range(job.replicas)))

    def terminate(self, job_id: str, reason: str) -> None:
        """Kill every unfinished task of the job (state KILLED), stop its processes, and end every
        unfinished job below it (``transitions.terminate``)."""
        with self.store.transaction():
            self._transition(job_id, partial(transitions.terminate, reason=reason))

    def complete(self, job_id: str, reason: str) -> None:
        """Mark every unfinished task of the job SUCCEEDED (stopping its processes), then the
        job itself, which ends the jobs below it: Iris's CompleteJob."""
        with self.store.transaction():
            self._transition(job_id, partial(transitions.complete, reason=reason))

    def forget(self, job_id: str) -> None:
        """Drop a job whose rows the caller has just deleted (``Store.delete_tree``, same event
        loop turn): unqueue it, drop its buffered output, stop its processes."""
        self.queue.pop(job_id, None)
        self._deadlines.pop(job_id, None)
        self.requests.drop(job_id)
        self.logs.discard(job_id)
        self.attempts.forget(job_id, REPLACED_REASON)

    def recover(self) -> dict[str, int]:
        """After a previous run ended (cleanly or not): ``recovery.recover``, then the figures."""
        recovered = recovery.recover(self.store, self._lose, self._admit)
        self.endpoints.expire()  # an endpoint whose attempt did not survive the restart goes
        return {"killed_process_groups": recovered.killed, "lost_tasks": recovered.lost,
                "queued_jobs": len(self.queue)}

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
        holding = len(self.attempts.live(job_id))
        free = (ledger if ledger is not None else self.slot_ledger()).available(job_id)
        reason = "" if queued.slotless else scheduler.pending_reason(queued, free, self.slots, len(self.queue), holding)
        return reason or scheduler.room_reason(queued, len(self.running), self.max_tasks)

    def slot_ledger(self) -> scheduler.SlotLedger:
        """The slots as the lending rule shares them now (``scheduler.SlotLedger.of``): tasks asking
        for no CPU neither hold nor wait for one."""
        running = [(running.job.job_id, not running.forgotten) for running in self.running.values()
                   if running.holds_slot]
        return scheduler.SlotLedger.of(self.slots, running,
                                       [job_id for job_id, queued in self.queue.items() if not queued.slotless])

    @property
    def busy(self) -> bool:
        """Whether any task is running or waiting to start (a job the cluster can never place,
        held PENDING forever, does not count: it must not keep the controller alive for good)."""
        return bool(self.running) or any(not queued.hold for queued in self.queue.values())

    # -- the loop -------------------------------------------------------------------------------
    async def run(self) -> None:
        """Schedule whenever woken or when the next scheduling deadline falls due (never on a
        timer otherwise), and flush captured logs, until closed."""
        flusher = asyncio.ensure_future(self.logs.flush_periodically())
        sampler = asyncio.ensure_future(self.sampler.run())
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
                        self.endpoints.expire()
                        self.schedule()
                    except Exception:  # noqa: BLE001 - keep scheduling whatever one pass hit
                        _LOG.exception("scheduling pass failed")
        finally:
            flusher.cancel()
            sampler.cancel()

    def _until_next_deadline(self) -> float | None:
        """Seconds until the earliest scheduling deadline of a queued job or endpoint lease (None:
        none to wait for), plus a millisecond so the deadline has passed when the pass runs; one
        second while an attempt's end waits to be recorded again. Deadlines are only added by
        ``_enqueue`` and endpoint registrations, which set ``_wake``, so a new one is always seen."""
        due = [deadline for job_id, deadline in self._deadlines.items() if job_id in self.queue]
        due += self.endpoints.deadlines()
        if not due or self._unrecorded:
            return 1.0 if self._unrecorded else None
        return max(0.0, (min(due) - now_ms() + 1) / 1000)

    def schedule(self) -> None:
        """Expire scheduling deadlines, then start what fits (``scheduler.place``), taking jobs in Iris's
        order: effective priority band highest first, users in turns inside a band (``budgets``)."""
        self._expire_deadlines()
        room = self.max_tasks - len(self.running)
        if not self.queue or room <= 0:
            return
        slots = self.slot_ledger()
        holding = Counter(running.job.job_id for running in self.running.values() if not running.forgotten)
        waiting = list(self.queue.values())
        order, bands = self.budgets.scheduling_order([(job.job_id, job.order) for job in waiting])
        starts = scheduler.place([waiting[index] for index in order], slots, holding, room)
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
                request = self.requests.of(job)
                for index in indices:
                    task = self.store.task(job.job_id, index)
                    assert task is not None
                    self.attempts.start(job, request, index, task.attempt + 1, bands[queued.job_id])

    async def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Stop scheduling, end running tasks as WORKER_FAILED, wait (at most ``timeout`` s)
        for their processes, then kill what is left."""
        self._closing = True
        self._wake.set()
        try:
            with self.store.transaction():
                for running in list(self.running.values()):
                    if not running.settled and self.store.task(running.job.job_id, running.idx) is not None:
                        self._lose(running.job.job_id, running.idx, SHUTDOWN_REASON)
        except Exception:  # noqa: BLE001 - still stop the processes
            _LOG.exception("could not record the running tasks as stopped")
            for running in list(self.running.values()):
                running.settled = True
                running.process.stop(SHUTDOWN_REASON)
        await self.attempts.close(timeout)
        try:
            self.logs.flush()
        except Exception:  # noqa: BLE001 - shutting down: say so and go on
            _LOG.exception("could not store the last captured output")

    # -- transitions ----------------------------------------------------------------------------
    def _transition(self, job_id: str, event: Event) -> None:
        """Run ``event`` on the job's snapshot and carry out its effects (call inside a
        transaction); nothing happens to a job that is gone."""
        job = self.store.job(job_id)
        if job is None:
            return
        policy = (self.requests.of(job).preemption_policy if job.state not in TERMINAL_JOB_STATES
                  else J.JOB_PREEMPTION_POLICY_UNSPECIFIED)  # a finished job's state never changes again
        tasks = {task.idx: task for task in self.store.tasks(job_id)}
        live = frozenset(running.idx for running in self.attempts.live(job_id))
        snap = Snapshot(job, tasks, live, policy, now_ms())
        self.apply(snap, transitions.decide(snap, event))

    def apply(self, snap: Snapshot, effects: Effects) -> None:
        """Carry out what an event on ``snap``'s job decided: its rows first (so a failing write
        changes nothing in memory), then the stops, the queue, and the jobs below it."""
        for (job_id, idx, attempt), values in effects.attempts.items():
            self.store.update_attempt(job_id, idx, attempt, **values)
        for (job_id, idx), values in effects.tasks.items():
            self.store.update_task(job_id, idx, **values)
        for job_id, values in effects.jobs.items():
            self.store.update_job(job_id, **values)
        self.stats.record_task_events(effects.events)
        for stop in effects.stops:
            self.attempts.stop(stop.job_id, stop.idx, stop.reason)
        for job_id, indices in effects.queue.items():
            if indices is None:
                self.queue.pop(job_id, None)
                self._deadlines.pop(job_id, None)
            else:
                self._enqueue(snap.job, indices)
        for job_id in effects.started:
            self._deadlines.pop(job_id, None)
        if snap.job.state in TERMINAL_JOB_STATES:
            self.requests.drop(snap.job.job_id)
        for job_id, reason in effects.end_below:
            for below in self.store.descendants(job_id):
                self._transition(below.job_id, partial(transitions.end_by_parent, reason=reason))

    def _lose(self, job_id: str, idx: int, reason: str) -> None:
        self._transition(job_id, partial(transitions.worker_lost, idx=idx, reason=reason))

    def _sample_targets(self) -> list[Target]:
        """The running attempts as the sampler sees them (``sampler.Target``)."""
        return [Target(running.uid, running.job.job_id, running.idx, running.attempt, running.process.pgid,
                       running.process.workdir) for running in self.running.values() if not running.forgotten]

    def _attempt_running(self, running: Running) -> None:
        self.sampler.wake()
        self._transition(running.job.job_id, partial(transitions.attempt_running, idx=running.idx,
                                                     attempt=running.attempt))

    def _attempt_ended(self, running: Running, outcome: Outcome) -> None:
        """An attempt's processes exited: store what it leaves and, unless its state was decided
        elsewhere, the transition its ``outcome`` makes."""
        self._wake.set()
        if running.forgotten:
            self.store.remove_stray(running.uid)
            return
        self.logs.finish(running.job.job_id, running.idx, running.attempt)
        self.logs.flush()
        with self.store.transaction():
            self.attempts.record_end(running, outcome)
            if not running.settled:
                self._transition(running.job.job_id, partial(
                    transitions.attempt_ended, idx=running.idx, attempt=running.attempt, outcome=outcome))

    def _unrecordable(self, running: Running, reason: str) -> None:
        self._unrecorded.append((running, reason))
        self._retry_unrecorded()

    def _retry_unrecorded(self) -> None:
        """End the jobs whose attempt end could not be recorded: FAILED with the reason."""
        while self._unrecorded:
            running, reason = self._unrecorded[0]
            try:
                with self.store.transaction():
                    self._transition(running.job.job_id, partial(
                        transitions.attempt_unrecorded, idx=running.idx, attempt=running.attempt,
                        row_id=running.job.id, reason=reason))
            except Exception:  # noqa: BLE001 - try again on the next scheduling pass
                _LOG.exception("could not record the failure of %s/%d; will retry", running.job.job_id, running.idx)
                return
            self._unrecorded.pop(0)

    # -- queue ----------------------------------------------------------------------------------
    def _admit(self, job: JobRow, indices: list[int]) -> None:
        """Queue ``indices`` of the job, unless they form a gang larger than this controller."""
        slotless = scheduler.asks_no_cpu(self.requests.of(job).resources)
        reason = scheduler.unschedulable_reason(len(indices), bool(job.coscheduled),
                                                self.max_tasks if slotless else self.slots, slotless=slotless)
        if reason is None:
            self._enqueue(job, indices)
            return
        with self.store.transaction():
            self._transition(job.job_id, partial(transitions.unschedulable, reason=reason))

    def _enqueue(self, job: JobRow, indices: Iterable[int]) -> None:
        queued = self.queue.get(job.job_id)
        if queued is None:
            queued = scheduler.QueuedJob(job.job_id, job.id, bool(job.coscheduled), hold=self._hold(job),
                                         slotless=scheduler.asks_no_cpu(self.requests.of(job).resources))
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
        return self.cluster.hold_reason(self.requests.of(job)) or ""

    def _expire_deadlines(self) -> None:
        now = now_ms()
        expired = [job_id for job_id, deadline in self._deadlines.items()
                   if deadline <= now and job_id in self.queue]
        for job_id in expired:
            reason = f"Scheduling timeout exceeded: {len(self.queue[job_id].pending)} task(s) found no free slot"
            with self.store.transaction():
                self._transition(job_id, partial(transitions.unschedulable, reason=reason))
