"""The attempt lifecycle: start a task's attempt (its work dir, its environment, its processes:
``runner``, ``task_setup``), capture its output, archive its outputs, and carry out the stops the
transitions decide; its first process starting and its end are handed to the engine
(``on_running``, ``on_ended``), which records them.

Rules:

* Identity: every attempt gets a random uid and is kept by it in ``running`` from the moment it is
  placed until its last process exits (it holds a slot that long), so the processes of a replaced
  job that are still stopping can never be mistaken for its replacement's: their end, exit code
  and output are theirs alone (a replaced job's output is dropped, ``forgotten``).
* Work dir: ``<work root>/job-<row id>/<task>.<attempt>-<uid prefix>``, fresh for each attempt
  (names stay out of paths); the bundle and ``workdir_files`` are unpacked into it off the event loop.
* Environment: ``attempt_environment`` (``runner.task_environment``, then ``task_setup.worker_environment``).
* Ports: an attempt asking for named ports holds one per name (``ports``) from the moment it is placed
  until its last process exits; none free fails the attempt with the allocator's one line.
* Outputs: what the attempt wrote under ``$IRIS_OUTPUT_DIR`` is archived before its end is recorded,
  as an Iris worker does; a stopped attempt's outputs are UNAVAILABLE (``cancelled``).
* A failure while running or recording an attempt never loses its end: running, it ends FAILED
  with the error; recording, ``on_unrecorded`` gets the reason.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from fray_jupyter.controller.engine.cluster import Cluster
from fray_jupyter.controller.kernel.exits import Outcome
from fray_jupyter.controller.kernel.rows import AttemptRow, JobRow
from fray_jupyter.controller.kernel.scheduler import asks_no_cpu
from fray_jupyter.controller.runtime import task_setup
from fray_jupyter.controller.runtime.ports import PortAllocator, PortsExhausted
from fray_jupyter.controller.runtime.runner import (
    OUTPUT_DIRNAME,
    Attempt,
    TaskIdentity,
    prepare_workdir,
    task_environment,
)
from fray_jupyter.controller.store.logbuffer import LogBuffer
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris import outputs
from fray_jupyter.iris.proto import controller_pb2, job_pb2

J = job_pb2
_LOG = logging.getLogger(__name__)


def now_ms() -> int:
    """Wall-clock time in epoch milliseconds (the unit of every stored timestamp)."""
    return int(time.time() * 1000)


class _Unstartable(Exception):
    """The attempt cannot start (its one-line reason, e.g. no free port): it fails without running."""


@dataclass
class Running:
    """A task holding a slot: from the moment it is placed until its last process exits.
    ``settled`` means its state was already decided elsewhere (stopped, bounced); ``forgotten``
    that its job was replaced (its rows are gone: nothing more is recorded for it). ``ports`` are the
    named ports it holds; ``holds_slot`` is False for a task asking for no CPU (``scheduler``)."""

    job: JobRow
    idx: int
    attempt: int
    uid: str
    process: Attempt
    settled: bool = False
    forgotten: bool = False
    output_archive: job_pb2.TaskOutputArchive | None = None
    ports: dict[str, int] = field(default_factory=dict)
    holds_slot: bool = True


def attempt_environment(identity: TaskIdentity, request: controller_pb2.Controller.LaunchJobRequest,
                        workdir: Path, work_root: Path, controller_url: str, passed_env: Mapping[str, str],
                        worker_region: str, ports: Mapping[str, int] | None = None) -> dict[str, str]:
    """The environment of an attempt's processes: ``runner.task_environment`` (the base, the
    pass-through variables, the job's, Iris's) and the worker variables setup needs on top
    (``task_setup.worker_environment``); ``ports`` the attempt's reserved ports; the one place it is built."""
    env = task_environment(
        identity, request.environment.env_vars, request.environment.setup_scripts, request.resources, workdir,
        controller_url, request.bundle_id, passed_env, constraints=request.constraints, worker_region=worker_region,
        ports=ports,
    )
    env.update(task_setup.worker_environment(workdir, work_root.parent, env.get("PATH", ""),
                                        setup=bool(request.entrypoint.setup_commands)))
    return env


class Attempts:
    """The running attempts (by uid) and what starts, stops and ends them (see the module rules)."""

    def __init__(self, store: Store, logs: LogBuffer, work_root: Path, passed_env: Mapping[str, str],
                 cluster: Cluster | None, on_running: Callable[[Running], None],
                 on_ended: Callable[[Running, Outcome], None], on_unrecorded: Callable[[Running, str], None]) -> None:
        self.store = store
        self.logs = logs
        self.work_root = work_root
        self.passed_env = dict(passed_env)
        self.cluster = cluster
        self.controller_url = ""
        self.running: dict[str, Running] = {}
        self.ports = PortAllocator()
        self._on_running = on_running
        self._on_ended = on_ended
        self._on_unrecorded = on_unrecorded
        self._tasks: set[asyncio.Task[None]] = set()

    def live(self, job_id: str, idx: int | None = None) -> list[Running]:
        """Running attempts of the current job named ``job_id`` (not of a replaced one)."""
        return [running for running in self.running.values() if running.job.job_id == job_id
                and not running.forgotten and (idx is None or running.idx == idx)]

    def start(self, job: JobRow, request: controller_pb2.Controller.LaunchJobRequest, idx: int, attempt: int,
              band: int) -> None:
        """Start attempt ``attempt`` of task ``idx`` (recorded ASSIGNED at ``band``; call inside a
        transaction): its work dir is prepared and its steps run in a coroutine of their own."""
        uid = secrets.token_hex(8)
        workdir = self.work_root / f"job-{job.id}" / f"{idx}.{attempt}-{uid[:8]}"
        region = self.cluster.placed_region(request) if self.cluster is not None else ""
        try:
            ports, problem = self.ports.reserve(list(request.ports)), ""
        except PortsExhausted as error:
            ports, problem = {}, str(error)
        env = attempt_environment(TaskIdentity(job.job_id, idx, attempt, uid, job.replicas), request, workdir,
                                  self.work_root, self.controller_url, self.passed_env, region, ports)
        entrypoint = request.entrypoint
        process = Attempt(
            steps=task_setup.task_steps(entrypoint.setup_commands, entrypoint.run_command.argv), workdir=workdir,
            env=env, timeout_s=job.timeout_ms / 1000 if job.timeout_ms else None,
            sink=lambda source, line: self._capture(running, source, line),
            on_spawn=lambda pid, token: self._spawned(running, pid, token),
        )
        self.store.insert_attempt(AttemptRow(
            job.job_id, idx, attempt, uid, J.TASK_STATE_ASSIGNED, None, "", None, None,
            None, None, "", str(workdir), 0,
        ))
        self.store.update_task(job.job_id, idx, state=J.TASK_STATE_ASSIGNED, attempt=attempt, priority_band=band)
        running = Running(job, idx, attempt, uid, process, ports=ports,
                          holds_slot=not asks_no_cpu(request.resources))
        self.running[uid] = running
        bundle = Path(job.bundle_path) if job.bundle_path else None
        task = asyncio.ensure_future(self._execute(running, bundle, dict(entrypoint.workdir_files), problem))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def stop(self, job_id: str, idx: int, reason: str) -> None:
        """Carry out a transition's stop: the task's live attempt is settled and its processes stopped."""
        for running in self.live(job_id, idx):
            running.settled = True
            running.process.stop(reason)

    def forget(self, job_id: str, reason: str) -> None:
        """The job's rows are gone (replaced): stop its attempts, recording nothing more of them."""
        for running in self.live(job_id):
            running.forgotten = running.settled = True
            running.process.stop(reason)

    def record_end(self, running: Running, outcome: Outcome) -> None:
        """Store what the attempt itself leaves (call inside a transaction): its output archive, and,
        for an attempt whose state was decided elsewhere (``settled``), its exit code and finish time."""
        job_id, idx = running.job.job_id, running.idx
        if running.output_archive is not None:
            self.store.set_output_archive(job_id, idx, running.attempt, running.output_archive.SerializeToString())
        if running.settled:
            self.store.update_attempt(job_id, idx, running.attempt, exit_code=outcome.exit_code, finished_ms=now_ms())

    async def close(self, timeout: float) -> None:
        """Wait at most ``timeout`` s for every attempt to end, then kill what is left."""
        pending = set(self._tasks)
        if pending:
            _, pending = await asyncio.wait(pending, timeout=timeout)
        for unfinished in pending:
            unfinished.cancel()
        for running in list(self.running.values()):
            _LOG.warning("attempt %s of %s/%d did not end within %g s of shutdown; killing its processes",
                         running.attempt, running.job.job_id, running.idx, timeout)
            running.process.kill()
        self.running.clear()

    async def _execute(self, running: Running, bundle: Path | None, files: dict[str, bytes], problem: str) -> None:
        try:
            if problem:
                raise _Unstartable(problem)
            await asyncio.to_thread(prepare_workdir, running.process.workdir, bundle, files)
        except _Unstartable as error:
            outcome = Outcome(J.TASK_STATE_FAILED, None, str(error))
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
        self.running.pop(running.uid, None)  # the slot and the ports are free whatever happens next
        self.ports.release(running.ports.values())
        try:
            self._on_ended(running, outcome)
        except Exception as error:  # noqa: BLE001 - never lose an attempt's end: record a failure
            _LOG.exception("could not record the end of attempt %d of %s/%d", running.attempt,
                           running.job.job_id, running.idx)
            self._on_unrecorded(running, (f"controller error while recording the end of the task: "
                                          f"{type(error).__name__}: {error}"))

    def _capture(self, running: Running, source: str, line: str) -> None:
        if running.forgotten:
            return
        try:
            self.logs.add(running.job.job_id, running.idx, running.attempt, source, line)
        except Exception:  # noqa: BLE001 - a failed flush must not kill the output pump
            _LOG.exception("could not store output of %s/%d", running.job.job_id, running.idx)

    async def _capture_outputs(self, running: Running) -> job_pb2.TaskOutputArchive:
        """The attempt's output archive (see the module rules)."""
        if running.process.stop_reason is not None:
            return J.TaskOutputArchive(state=J.TaskOutputArchive.TASK_OUTPUT_ARCHIVE_STATE_UNAVAILABLE,
                                       error="cancelled")
        destination = (self.work_root.parent / "outputs" / f"job-{running.job.id}" / str(running.idx)
                       / running.uid / outputs.ARCHIVE_NAME)
        return await asyncio.to_thread(outputs.capture, running.process.workdir / OUTPUT_DIRNAME, destination)

    def _spawned(self, running: Running, pid: int, token: str) -> None:
        """A process of the attempt started: remember its group (a forgotten attempt's as a stray,
        for recovery to kill after a crash); the attempt's first one is handed to ``on_running``."""
        job, idx, attempt = running.job, running.idx, running.attempt
        if running.forgotten:
            self.store.add_stray(running.uid, pid, pid, token)
            return
        with self.store.transaction():
            self.store.update_attempt(job.job_id, idx, attempt, pid=pid, pgid=pid, proc_start=token)
            if not running.settled:
                self._on_running(running)
