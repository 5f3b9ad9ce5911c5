"""Looking inside a running task on the embedded controller: ``ProfileTask``, ``ExecInContainer`` and
``GetProcessStatus``, with Iris's targets, checks and error texts (``iris/cluster/controller/
attempts.py`` and the worker's ``capture_and_log_profile`` / ``exec_in_container``).

Rules, in the order they are checked:

* ``ProfileTask`` needs ``profile_type`` (INVALID_ARGUMENT ``profile_type is required``), a format
  the profiler has (unset is the flamegraph; an unknown number is INVALID_ARGUMENT naming the
  formats, where Iris falls back to the flamegraph) and a ``duration_seconds`` from 0
  (``profiling.DEFAULT_DURATION_S``) to ``MAX_DURATION_S`` (INVALID_ARGUMENT otherwise: Iris passes
  any value to the profiler).
* Target ``/system/process`` (or Iris's ``/system/controller``) is the controller itself; only the
  controller's own user (``caller.Caller.admin``) may profile it.
* Any other target is a task ``/<user>/<job>/<index>`` (its current attempt) or an attempt
  ``…/<index>:<attempt>``: malformed is INVALID_ARGUMENT, unknown NOT_FOUND ``Task <id> not found``.
* Only the job's owner (the first component of its id) or the admin may profile or exec into it:
  anyone else is PERMISSION_DENIED with Iris's text, and the refusal is logged (user, verb, target).
  Iris checks the owner for exec only; here profiles too (a thread dump with ``locals`` shows data).
* A task with no attempt yet (still pending): FAILED_PRECONDITION ``Task <id> not yet assigned to a
  worker``, as Iris says before it places one.
* An attempt that is not running: ProfileTask answers ``error="attempt no longer running"``;
  ExecInContainer ``error="Task <id> is not running (state=TASK_STATE_…)"``; an empty command is
  INVALID_ARGUMENT ``command is required``.
* Each capture that returned bytes is recorded in ``iris.profile`` (``record``: the stats'
  ``record_profile``), one row in Iris's schema (``profile_row``); a capture failure is answered in
  ``error``, never raised.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from fray_jupyter.controller.api.caller import CALLER
from fray_jupyter.controller.engine.attempt_lifecycle import Running
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.runtime import profiling, taskexec
from fray_jupyter.controller.runtime.procstatus import ProcessStatus
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.proto import controller_pb2, job_pb2

_LOG = logging.getLogger(__name__)

C = controller_pb2.Controller
J = job_pb2
SYSTEM_TARGETS: Final[tuple[str, ...]] = ("/system/process", "/system/controller")
SELF_SOURCE: Final[str] = "/system/controller"
SELF_VM_ID: Final[str] = "controller-self"
MAX_DURATION_S: Final[int] = 3600
NOT_RUNNING: Final[str] = "attempt no longer running"
ProfileRow = dict[str, Any]
"""One ``iris.profile`` row as ``Stats.record_profile``'s keywords (Iris's ``IrisProfile`` fields)."""


@dataclass(frozen=True)
class Target:
    """A resolved task target: its job, index, the attempt asked for (None: current) and wire name."""

    job_id: str
    idx: int
    attempt: int | None
    wire: str


class Inspector:
    """The three verbs over the controller's store and its running attempts."""

    def __init__(self, store: Store, running: Callable[[], dict[str, Running]],
                 record: Callable[..., None] | None = None) -> None:
        self.store = store
        self._running = running
        self._record = record or _not_recorded
        self._process = ProcessStatus()

    # -- ProfileTask ---------------------------------------------------------------------------
    async def profile_task(self, request: J.ProfileTaskRequest) -> J.ProfileTaskResponse:
        """Capture the requested profile of a task attempt or of the controller (module docstring)."""
        if not request.HasField("profile_type"):
            raise RpcError(Code.INVALID_ARGUMENT, "profile_type is required")
        _check_format(request.profile_type)
        duration = _duration(request.duration_seconds)
        if request.target in SYSTEM_TARGETS:
            _require_admin("profile", request.target)
            return await self._capture(lambda: profiling.capture_self(request.profile_type, duration),
                                       request, duration, SELF_SOURCE, "", None)
        target = self._task(request.target, allow_attempt=True)
        _authorize("profile", target)
        running = self._attempt(target)
        if running is None or running.process.pgid is None:
            return J.ProfileTaskResponse(error=NOT_RUNNING)
        pid = running.process.pgid
        return await self._capture(lambda: profiling.capture(pid, request.profile_type, duration), request,
                                   duration, f"{target.job_id}/{target.idx}", target.job_id, running.attempt)

    async def _capture(self, run: Callable[[], Any], request: J.ProfileTaskRequest, duration: int, source: str,
                       job_id: str, attempt: int | None) -> J.ProfileTaskResponse:
        try:
            data: bytes = await run()
        except profiling.ProfileError as error:
            return J.ProfileTaskResponse(error=str(error))
        if data:
            try:
                self._record(**profile_row(source, job_id, attempt, duration, request.profile_type, data))
            except Exception:  # noqa: BLE001 - the capture is still answered
                _LOG.exception("could not record the profile of %s in iris.profile", source)
        return J.ProfileTaskResponse(profile_data=data)

    # -- ExecInContainer -----------------------------------------------------------------------
    async def exec_in_container(self, request: C.ExecInContainerRequest) -> C.ExecInContainerResponse:
        """Run the request's argv in the task's current attempt (``taskexec``'s rules)."""
        target = self._task(request.task_id, allow_attempt=False)
        _authorize("exec", target)
        if not request.command:
            raise RpcError(Code.INVALID_ARGUMENT, "command is required")
        running = self._attempt(target)
        if running is None or running.process.pgid is None:
            task = self.store.task(target.job_id, target.idx)
            state = J.TaskState.Name(task.state) if task is not None else "TASK_STATE_UNSPECIFIED"
            return C.ExecInContainerResponse(error=f"Task {request.task_id} is not running (state={state})")
        _LOG.info("exec in %s: %s", target.wire, list(request.command))
        def alive() -> bool:
            return running.process.stop_reason is None and any(
                live is running and not live.settled for live in self._running().values())
        return await taskexec.run_in_task(list(request.command), running.process.workdir, running.process.env,
                                          request.timeout_seconds, alive)

    # -- GetProcessStatus ----------------------------------------------------------------------
    def get_process_status(self, request: J.GetProcessStatusRequest) -> J.GetProcessStatusResponse:
        """The controller's own process status (``/system/process`` or no target). Another target is
        checked as a task (INVALID_ARGUMENT, NOT_FOUND, as Iris); a task's own status is UNIMPLEMENTED
        here (its process is profiled or exec'd into instead)."""
        if request.target and request.target not in SYSTEM_TARGETS:
            target = self._task(request.target, allow_attempt=False)
            raise RpcError(Code.UNIMPLEMENTED, f"GetProcessStatus of task {target.wire} is not served by the "
                                               "embedded controller: only /system/process (the controller itself)")
        return self._process.status()

    # -- lookups -------------------------------------------------------------------------------
    def _task(self, wire: str, *, allow_attempt: bool) -> Target:
        head, _, tail = wire.rpartition("/")
        index_text, colon, attempt_text = tail.partition(":")
        if (not head.startswith("/") or head.count("/") < 2 or not index_text.isdigit()
                or (colon and not (allow_attempt and attempt_text.isdigit()))):
            what = "/<user>/<job>/<index>" + ("[:<attempt>]" if allow_attempt else "")
            raise RpcError(Code.INVALID_ARGUMENT, f"{wire!r} is not a task id: expected {what}")
        job = self.store.job(head)
        if job is None or int(index_text) >= job.replicas:
            raise RpcError(Code.NOT_FOUND, f"Task {wire} not found")
        return Target(head, int(index_text), int(attempt_text) if colon else None, wire)

    def _attempt(self, target: Target) -> Running | None:
        """The target's attempt while it runs (the current one unless the target names one);
        FAILED_PRECONDITION while the task has no attempt yet."""
        task = self.store.task(target.job_id, target.idx)
        if task is not None and task.attempt < 0 and task.state == J.TASK_STATE_PENDING:
            raise RpcError(Code.FAILED_PRECONDITION, f"Task {target.wire} not yet assigned to a worker")
        wanted = target.attempt if target.attempt is not None else (task.attempt if task is not None else -1)
        return next((running for running in self._running().values()
                     if running.job.job_id == target.job_id and running.idx == target.idx
                     and running.attempt == wanted and not running.settled), None)


def owner_of(job_id: str) -> str:
    """A job's owner: the first component of its id (``/alice/train`` → ``alice``)."""
    return job_id.lstrip("/").split("/", 1)[0]


def _authorize(verb: str, target: Target) -> None:
    caller = CALLER.get()
    owner = owner_of(target.job_id)
    if caller is not None and (caller.admin or caller.user == owner):
        return
    who = caller.user if caller is not None else ""
    _LOG.warning("refused %s of %s: caller %r is not its owner %r", verb, target.wire, who, owner)
    raise RpcError(Code.PERMISSION_DENIED, f"User '{who}' cannot access resources owned by '{owner}'")


def _require_admin(verb: str, target: str) -> None:
    caller = CALLER.get()
    if caller is not None and caller.admin:
        return
    who = caller.user if caller is not None else ""
    _LOG.warning("refused %s of %s: caller %r is not the controller's user", verb, target, who)
    raise RpcError(Code.PERMISSION_DENIED, f"User '{who}' cannot profile the controller: only its own user may")


def _check_format(profile_type: J.ProfileType) -> None:
    which = profile_type.WhichOneof("profiler")
    if which == "cpu":
        value, known = int(profile_type.cpu.format), profiling.CPU_FORMATS
    elif which == "memory":
        value, known = int(profile_type.memory.format), profiling.MEMORY_FORMATS
    else:
        return
    if value != 0 and value not in known:
        names = ", ".join(f"{number} ({name})" for number, (name, _) in known.items())
        raise RpcError(Code.INVALID_ARGUMENT, f"{which} format {value} is not one of: {names}")


def _duration(requested: int) -> int:
    if requested < 0 or requested > MAX_DURATION_S:
        raise RpcError(Code.INVALID_ARGUMENT, f"duration_seconds={requested} is out of range: "
                                              f"0 (the default, {profiling.DEFAULT_DURATION_S} s) to {MAX_DURATION_S}")
    return requested or profiling.DEFAULT_DURATION_S


def profile_row(source: str, job_id: str, attempt: int | None, duration: int, profile_type: J.ProfileType,
                data: bytes) -> ProfileRow:
    """The ``iris.profile`` row of one on-demand capture, in Iris's schema (``IrisProfile``; what
    ``iris.cluster.runtime.profile.build_profile_row`` writes), as ``record_profile``'s keywords."""
    row: ProfileRow = {"source": source, "job_id": job_id, "attempt_id": attempt,
                       "captured_at_ms": int(time.time() * 1000), "duration_seconds": duration,
                       "trigger": "on_demand", "profile_data": data}
    if not job_id:
        row["vm_id"] = SELF_VM_ID
    which = profile_type.WhichOneof("profiler")
    if which == "cpu":
        cpu = profile_type.cpu
        row.update(profile_type="cpu", profile_format=profiling.cpu_format(cpu)[0],
                   rate_hz=cpu.rate_hz if cpu.rate_hz > 0 else profiling.DEFAULT_RATE_HZ,
                   native=cpu.native if cpu.HasField("native") else True)
    elif which == "memory":
        reporter = profiling.memory_format(profile_type.memory)[0]
        row.update(profile_type="memory", profile_format="html" if reporter == "flamegraph" else reporter,
                   leaks=profile_type.memory.leaks)
    else:
        row.update(profile_type="thread", profile_format="raw", locals_dump=profile_type.threads.locals,
                   native=profile_type.threads.native)
    return row


def _not_recorded(**row: Any) -> None:
    """Where captures go when no ``iris.profile`` recorder is given (tests of the verbs alone)."""
    _LOG.debug("profile of %s not recorded (no iris.profile store)", row.get("source"))
