"""The kernel's side of a session: ``Session``, one Iris job whose tasks serve the session's hosts.

Rules:

* ``Session.start(name, resources, replicas=…)`` (or ``Session.launch(job)``) sends ONE job, planned as any Fray job is
  (``planning.plan``: the host count is the plan's replicas, coscheduled as Fray coschedules; no
  timeout), whose tasks run ``serve.serve_host`` and ask for the actor port. It returns at once.
  With ``jax=True`` the tasks also ask for Iris's JAX port and join one JAX process group before
  they serve (``serve.join_jax``).
* ``wait_ready()`` waits, with no timeout, until every host's actor ``{job}/session-{i}`` is
  registered; while the job is pending ``on_change`` hears Iris's pending reason each time it
  changes. A job that ends first makes the session lost.
* ``run(source)`` runs the cell on every target host (default: all): one call per host starts it
  and answers its first outputs, or its result when it ends within ``READ_WAIT`` (a warm short
  cell is that one call); long polls read on while it runs, and a repeated ``execute`` of its id
  answers its result; every call is short, so a long cell survives a dropped connection. The
  outputs go to ``on_output`` as they arrive (``merge.LiveOutputs``: text from every host, rich
  outputs from ``rich_from``), and it returns ``merge.merge(..., streamed=True)`` (values from ``values_from``, the failure with each
  host's traceback). With ``stream=False`` nothing is shown live and the merge is grouped
  (``group_outputs``). A ``KeyboardInterrupt`` in the kernel while it waits (Jupyter's interrupt
  button) interrupts every host, waits ``interrupt_bound`` seconds for them, says which did not
  stop (``words.stuck_text``) and returns what the others answered; the session stays.
* **Loss.** A host that cannot be reached, or a job that ended, makes the session lost: its job
  is terminated (Iris and JAX fate-share: the other hosts' state is gone with the gang), the
  running cell fails with that host's ``lost: <reason>``, and every later call raises
  ``SessionLost`` with ``words.loss_text`` (the cells run, the restart offer). Nothing is re-run.
* ``push`` cloudpickles the values once and sends the same bytes to each target host; ``pull``
  brings values back from one host. ``interrupt()`` reaches every host. ``stop()`` terminates the
  job and waits until it has ended; ``restart()`` stops and starts the same request again.
* **Workspace.** ``workspace`` (a ``workspace.WorkspaceSource``) is sent as the job's bundle and
  unpacked into every host's work dir before its first cell; ``sync()`` sends each host what
  changed since (``workspace.WorkspaceSync``) and reloads the changed modules there. A host that
  missed it makes ``sync`` raise a ``SessionError`` naming the host and why; with
  ``sync_each_cell`` every ``run`` syncs first, so a cell never runs on a stale host.
* **Idle.** Each host releases the slice after ``idle_timeout`` seconds idle (``serve``; default
  ``serve.IDLE_TIMEOUT``, None: never); the session is then lost with that reason. ``idle()``
  says how long each host has been idle.
* Every session started in this process is stopped when the process exits normally
  (``client.at_exit.before_closing_at_exit``: before the clients' transports close), so a kernel
  shut down by Jupyter leaves no job holding a slice.
"""

from __future__ import annotations

import queue
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

from fray_jupyter.actors import wire
from fray_jupyter.actors.group import ActorGroup, poll_delay
from fray_jupyter.actors.handle import ActorHandle
from fray_jupyter.actors.host import PORT_NAME
from fray_jupyter.actors.resolver import RegistryResolver
from fray_jupyter.client.at_exit import before_closing_at_exit
from fray_jupyter.client.client import FrayClient
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.states import TERMINAL_TASK_STATES, is_job_finished, job_state_name, task_state_name
from fray_jupyter.planning import plan
from fray_jupyter.resources.config import ResourceConfig
from fray_jupyter.resources.entrypoint import Entrypoint
from fray_jupyter.resources.environment import EnvironmentConfig
from fray_jupyter.resources.job import JobRequest
from fray_jupyter.session import values
from fray_jupyter.session.merge import (
    GroupOutputs,
    HostChoice,
    HostLost,
    HostReply,
    LiveOutputs,
    MergedCell,
    MergeOptions,
    merge,
)
from fray_jupyter.session.outputs import (
    IDLE_TIMEOUT,
    CellResult,
    Chunks,
    InterruptReply,
    Output,
    SessionError,
    Stream,
)
from fray_jupyter.session.packages import PipReply
from fray_jupyter.session.serve import ACTOR_NAME, JAX_PORT, actor_name, serve_host
from fray_jupyter.session.words import CellRun, loss_text, stuck_text
from fray_jupyter.session.workspace import SyncReport, WorkspaceSource, WorkspaceSync

READ_WAIT: Final = 1.0
"""Seconds one ``read`` of a host's outputs waits for new ones (a long poll)."""
INTERRUPT_BOUND: Final = 5.0
"""Seconds the kernel waits for every host to stop after an interrupt before naming the ones that did not."""
SETTLE: Final = 10.0
"""Seconds a lost host's task is given to show as ended, so its reason can be read from Iris."""
POLL_FIRST: Final = 0.05
POLL_MAX: Final = 1.0

Notify = Callable[[str], None]
OnOutput = Callable[[Sequence[Output]], None]
Event = tuple[Output, ...] | HostReply | SessionError


class SessionLost(SessionError):
    """The session's hosts are gone; the message is ``words.loss_text``."""


_LIVE: weakref.WeakSet[Session] = weakref.WeakSet()


def _stop_all() -> None:
    for session in list(_LIVE):
        try:
            session.stop(wait=False)
        except Exception:  # noqa: BLE001, S110 - exiting: the controller may be gone already
            pass


before_closing_at_exit(_stop_all)  # before the clients' transports close at exit


def session_request(job: JobRequest, *, idle_timeout: float | None = IDLE_TIMEOUT, user: str | None = None,
                    bundle: bytes = b"", jax: bool = False) -> Controller.LaunchJobRequest:
    """The ``LaunchJobRequest`` of a session: ``job`` (its name, resources, replicas, environment)
    with ``serve.serve_host(idle_timeout, jax)`` as its entrypoint and no timeout, planned as any
    Fray job, asking for the actor port (and, with ``jax``, Iris's JAX port); ``ValueError`` for a
    plan with errors or a bad idle timeout."""
    if idle_timeout is not None and not idle_timeout > 0:
        raise ValueError(f"idle timeout {idle_timeout!r}: give a number of seconds above 0 (or none: never)")
    held = job.model_copy(update={"entrypoint": Entrypoint.from_callable(serve_host, (idle_timeout, jax)),
                                  "timeout": None})
    planned = plan(held, user=user, existing_job_policy="unspecified", bundle=bundle)
    if planned.errors:
        raise ValueError(f"session {job.name}: {'; '.join(str(error) for error in planned.errors)}")
    request = Controller.LaunchJobRequest()
    request.CopyFrom(planned.request)
    request.ports.append(PORT_NAME)
    if jax:
        request.ports.append(JAX_PORT)
    return request


class Session:
    """A running (or lost, or stopped) session (see the module rules)."""

    def __init__(self, name: str, request: Controller.LaunchJobRequest, client: FrayClient,
                 idle_timeout: float | None = IDLE_TIMEOUT, workspace: WorkspaceSource | None = None,
                 sync_each_cell: bool = False) -> None:
        self.name = name
        self.idle_timeout = idle_timeout
        self.request = request
        self.client = client
        self.hosts = max(1, int(request.replicas))
        self.workspace = WorkspaceSync(workspace, self.hosts) if workspace is not None else None
        self.sync_each_cell = sync_each_cell and self.workspace is not None
        self.job_id = ""
        self.cells: list[CellRun] = []
        self.lost: str | None = None
        self.stopped = False
        self._group: ActorGroup | None = None
        self._handles: list[ActorHandle] = []
        self._lock = threading.Lock()
        self._killed: set[int] = set()
        """Hosts lost because Iris killed them (a sibling's end, a stop), not for a cause of their own."""

    def __repr__(self) -> str:
        state = ("stopped" if self.stopped else f"lost: {self.lost}" if self.lost
                 else f"{len(self._handles)}/{self.hosts} hosts ready")
        return f"Session({self.name!r}, job {self.job_id or '-'}, {state})"

    @property
    def ready(self) -> bool:
        """Every host has been found serving (``wait_ready`` returned)."""
        return len(self._handles) >= self.hosts

    @property
    def handles(self) -> list[ActorHandle]:
        """Each host's actor handle, host ``i`` at index ``i`` (empty until ``wait_ready`` returned):
        where each host is reached (``handle.connection().where``), or its own methods."""
        return list(self._handles)

    # -- lifetime --------------------------------------------------------------------------------
    @classmethod
    def start(cls, name: str, resources: ResourceConfig | None = None, *, client: FrayClient,
              replicas: int | None = None, environment: EnvironmentConfig | None = None,
              idle_timeout: float | None = IDLE_TIMEOUT, user: str | None = None, jax: bool = False,
              workspace: WorkspaceSource | None = None, sync_each_cell: bool = False) -> Session:
        """Send the session's job (the module rules) and return at once; ``wait_ready`` waits."""
        job = JobRequest(name=name, entrypoint=Entrypoint.from_callable(serve_host, ()),
                         resources=resources or ResourceConfig(), environment=environment, replicas=replicas)
        return cls.launch(job, client=client, idle_timeout=idle_timeout, user=user, jax=jax, workspace=workspace,
                          sync_each_cell=sync_each_cell)

    @classmethod
    def launch(cls, job: JobRequest, *, client: FrayClient, idle_timeout: float | None = IDLE_TIMEOUT,
               user: str | None = None, bundle: bytes = b"", jax: bool = False,
               workspace: WorkspaceSource | None = None, sync_each_cell: bool = False) -> Session:
        """``start`` for a ``JobRequest`` made elsewhere (the magics' flags): its entrypoint is replaced;
        ``workspace`` (when given) is the bundle sent."""
        blob = workspace.bundle.blob if workspace is not None else bundle
        request = session_request(job, idle_timeout=idle_timeout, user=user, bundle=blob, jax=jax)
        session = cls(job.name, request, client, idle_timeout, workspace, sync_each_cell)
        session._launch()
        return session

    def _launch(self) -> None:
        self.job_id = self.client.submit(self.request)
        self._group = ActorGroup(ACTOR_NAME, self.hosts, self.job_id,  # a named cluster: through its actor proxy
                                 RegistryResolver(self.client, proxy=self.client.cluster is not None))
        self._handles, self.cells, self.lost, self.stopped, self._killed = [], [], None, False, set()
        if self.workspace is not None:
            self.workspace.reset()
        _LIVE.add(self)

    def wait_ready(self, on_change: Notify | None = None) -> Session:
        """Wait, with no timeout, until every host serves (the module rules); the session."""
        group = self._require_group()
        said, delay, started = "", POLL_FIRST, time.monotonic()
        while True:
            self._check_usable()
            group.discover_new()
            if group.ready_count >= self.hosts:
                # host N is task N: by name, as the group gives them in the order they registered
                found = {handle.endpoint_name: handle for handle in group.wait_ready(timeout=0.0)}
                self._handles = [found[actor_name(self.job_id, host)] for host in range(self.hosts)]
                if on_change is not None:
                    on_change(f"session {self.name}: {self.hosts}/{self.hosts} hosts ready (job {self.job_id})")
                return self
            status = self.client.status(self.job_id)
            if status.state == job_pb2.JOB_STATE_SUCCEEDED:
                self._lose(self._released("its hosts"))
            elif is_job_finished(status.state):
                self._lose(f"its job ended {job_state_name(status.state)} before every host was ready: "
                           f"{status.error or 'no error recorded'}")
                self._check_usable()
            text = (f"session {self.name}: pending: {status.pending_reason}" if status.pending_reason
                    else f"session {self.name}: {group.ready_count}/{self.hosts} hosts ready")
            if text != said and on_change is not None:
                on_change(text)
            said = text
            time.sleep(delay)
            delay = poll_delay(delay, time.monotonic() - started, POLL_MAX)

    def stop(self, *, wait: bool = True) -> None:
        """Terminate the session's job (idempotent) and, with ``wait``, wait until it has ended."""
        _LIVE.discard(self)
        if not self.job_id or self.stopped:
            return
        self.stopped = True
        self.client.terminate(self.job_id)
        delay, started = POLL_FIRST, time.monotonic()
        while wait and not is_job_finished(self.client.state([self.job_id])[self.job_id]):
            time.sleep(delay)
            delay = poll_delay(delay, time.monotonic() - started, POLL_MAX)

    def restart(self) -> Session:
        """Stop the job and start the same request again (new processes, state lost); not ready yet."""
        self.stop()
        self._launch()
        return self

    # -- cells -----------------------------------------------------------------------------------
    def sync(self) -> SyncReport:
        """Send every host what changed in the workspace and reload it there (the module rules)."""
        if self.workspace is None:
            raise SessionError(f"session {self.name} was started without a workspace: nothing to sync")
        handles = self._ready_handles()
        report = self.workspace.sync(lambda host, files, deleted: handles[host].sync_workspace(files, deleted))
        if report.failed:
            raise SessionError(f"session {self.name}: the workspace sync failed on "
                               + "; ".join(f"host {host}: {why}" for host, why in sorted(report.failed.items()))
                               + "\n" + report.text())
        return report

    def run(self, source: str, *, targets: Sequence[int] | None = None, group_outputs: GroupOutputs = "type",
            rich_from: HostChoice = 0, values_from: HostChoice = 0, on_output: OnOutput | None = None,
            stream: bool = True, interrupt_bound: float = INTERRUPT_BOUND) -> MergedCell:
        """Run a cell on the target hosts (the module rules) and return the merged cell."""
        options = MergeOptions(group_outputs, rich_from, values_from)
        chosen = self._targets(targets)
        handles = self._ready_handles()
        if self.sync_each_cell and (synced := self.sync()).changed and on_output is not None:
            on_output([Stream("stdout", f"[sync] {synced.text()}\n")])
        cell_id = f"{len(self.cells) + 1}-{uuid.uuid4().hex[:8]}"
        self.cells.append(CellRun(cell_id, source))
        events: queue.Queue[tuple[int, Event]] = queue.Queue()
        for host in chosen:
            threading.Thread(target=self._drive, args=(handles[host], host, cell_id, source, events),
                             name=f"session-{self.name}-host-{host}", daemon=True).start()
        live = LiveOutputs(chosen, options)
        show = on_output if stream else None
        replies: dict[int, HostReply] = {}
        refused: list[SessionError] = []
        deadline: float | None = None
        while len(replies) < len(chosen):
            try:
                timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
                host, item = events.get(timeout=timeout)
            except KeyboardInterrupt:
                self.interrupt(cell_id)
                deadline = time.monotonic() + interrupt_bound
                continue
            except queue.Empty:
                stuck = [h for h in chosen if h not in replies]
                if on_output is not None:
                    on_output([Stream("stderr", stuck_text(self.name, stuck, interrupt_bound) + "\n")])
                break
            if isinstance(item, tuple):
                if show is not None and (shown := live.feed(host, item)):
                    show(shown)
            elif isinstance(item, SessionError):
                refused.append(item)
                chosen = [h for h in chosen if h != host]
            else:
                replies[host] = item
        if refused:
            raise refused[0]
        lost = [reply for reply in replies.values() if isinstance(reply, HostLost)]
        if lost:  # the session's reason is the root cause, not a sibling the gang's end killed
            self._lose(min(lost, key=lambda reply: (reply.host in self._killed, reply.host)).reason)
        return merge(replies, options, streamed=stream)

    def _drive(self, handle: ActorHandle, host: int, cell_id: str, source: str,
               events: queue.Queue[tuple[int, Event]]) -> None:
        """One host's cell: start it, stream its outputs, then its result (or how it was lost)."""
        try:
            chunks: Chunks
            result: CellResult | None
            chunks, result = handle.run(cell_id, source, READ_WAIT)
            while True:
                if chunks.outputs:
                    events.put((host, chunks.outputs))
                if result is not None or chunks.done:
                    break
                chunks = handle.read(cell_id, chunks.cursor, READ_WAIT)
            if result is None:  # it has ended: a repeated execute of its id answers its result at once
                result = handle.execute(cell_id, source)
            events.put((host, result))
        except SessionError as error:
            events.put((host, error))
        except Exception as error:  # noqa: BLE001 - any failure to reach the host is its loss
            events.put((host, HostLost(host, self._loss_reason(host, error))))

    def _loss_reason(self, host: int, error: Exception) -> str:
        """Why ``host`` is gone, from Iris: its task's end once it shows (within ``SETTLE``), else ``error``."""
        deadline = time.monotonic() + SETTLE
        while True:
            try:
                tasks = self.client.tasks(self.job_id)
            except Exception:  # noqa: BLE001 - the controller's view is a bonus; the error is the fact
                return str(error)
            task = tasks[host] if host < len(tasks) else None
            if task is not None and task.state in TERMINAL_TASK_STATES:
                if task.state == job_pb2.TASK_STATE_KILLED:
                    self._killed.add(host)
                if task.state == job_pb2.TASK_STATE_SUCCEEDED:
                    return self._released(f"host {host}")
                detail = task.error or (f"exit code {task.exit_code}" if task.exit_code else "no error recorded")
                return f"host {host} (task {task.task_id}) ended {task_state_name(task.state)}: {detail}"
            if time.monotonic() > deadline:
                return str(error)
            time.sleep(0.1)

    def _released(self, who: str) -> str:
        return f"{who} released the slice after {self.idle_timeout or 0:g} s idle (the session's idle timeout)"

    # -- any time --------------------------------------------------------------------------------
    def interrupt(self, cell_id: str | None = None) -> list[InterruptReply]:
        """``KeyboardInterrupt`` in the running cell on every host at once; each host's reply."""
        return self._on_every(lambda handle: handle.interrupt(cell_id))

    def push(self, named: Mapping[str, Any], *, targets: Sequence[int] | None = None) -> list[str]:
        """Bind each name to its value on the target hosts (default: all), pickled once; the names."""
        arguments = wire.pickle_arguments((values.dumps(named, "the kernel"),), {})
        bound = self._on_every(lambda handle: handle.call_pickled("push", arguments), targets)
        return list(bound[0]) if bound else []

    def pull(self, names: Sequence[str], *, host: int = 0) -> dict[str, Any]:
        """The named values from one host."""
        [chosen] = self._targets([host])
        return values.loads(self._ready_handles()[chosen].pull(list(names)), f"host {chosen}")

    def pip(self, argv: Sequence[str]) -> list[PipReply]:
        """pip with ``argv`` on every host at once (``packages``' rules); each host's reply."""
        return self._on_every(lambda handle: handle.pip(list(argv)))

    def status(self) -> list[Any]:
        """Every host's ``HostStatus``."""
        return self._on_every(lambda handle: handle.status())

    def idle(self) -> list[float | None]:
        """Seconds each host has been idle (None: running a cell); each releases the slice at ``idle_timeout``."""
        return self._on_every(lambda handle: handle.idle_for())

    def task_ids(self) -> list[str]:
        """Each host's task id, host ``i`` at index ``i`` (task ``i`` of the job); ``SessionError`` unless ready."""
        self._ready_handles()
        return [f"{self.job_id}/{host}" for host in range(self.hosts)]

    def _on_every(self, call: Callable[[ActorHandle], Any], targets: Sequence[int] | None = None) -> list[Any]:
        chosen = self._targets(targets)
        handles = self._ready_handles()
        with ThreadPoolExecutor(max_workers=len(chosen)) as pool:
            futures = [pool.submit(call, handles[host]) for host in chosen]
            return [future.result() for future in futures]

    # -- state -----------------------------------------------------------------------------------
    def _require_group(self) -> ActorGroup:
        if self._group is None:
            raise SessionError(f"session {self.name} was never started")
        return self._group

    def _check_usable(self) -> None:
        if self.lost is not None:
            raise SessionLost(loss_text(self.name, self.lost, self.cells))
        if self.stopped:
            raise SessionError(f"session {self.name} is stopped; start it again with %fray session start {self.name}")

    def _ready_handles(self) -> list[ActorHandle]:
        self._check_usable()
        if len(self._handles) < self.hosts:
            raise SessionError(f"session {self.name} is not ready ({len(self._handles)}/{self.hosts} hosts): "
                               "wait_ready() first")
        return self._handles

    def _targets(self, targets: Sequence[int] | None) -> list[int]:
        if targets is None:
            return list(range(self.hosts))
        bad = [t for t in targets if not isinstance(t, int) or not 0 <= t < self.hosts]
        if bad or not targets:
            raise SessionError(f"targets {list(targets)!r}: session {self.name} has hosts 0..{self.hosts - 1}")
        return sorted(set(targets))

    def _lose(self, reason: str) -> None:
        """The session is lost: say so from now on, and end what is left of the gang."""
        with self._lock:
            if self.lost is not None:
                return
            self.lost = reason
        _LIVE.discard(self)
        try:
            self.client.terminate(self.job_id)
        except Exception:  # noqa: BLE001, S110 - the job may have ended already
            pass
