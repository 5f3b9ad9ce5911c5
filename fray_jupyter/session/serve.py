"""What each task of a session runs: its host's engine, served as the actor ``{job}/session-{i}``,
with the process's main thread running the cells.

Rules:

* ``serve_host()`` is the task's entrypoint. It makes a
  :class:`~fray_jupyter.session.host.HostEngine` for this task's index, serves a
  :class:`SessionActor` on it from an actor server's threads (``CONCURRENCY`` of them: a cell,
  its reads, an interrupt, a status at once), registers the endpoint ``{job}/session-{i}`` with a
  lease for this task's attempt, and then gives the main thread to ``HostEngine.serve`` until the
  actor's ``stop()``; the task then succeeds.
* The host runs in its task's work dir (``$IRIS_WORKDIR``, where the workspace was unpacked): it
  changes into it before anything else, as a task in an Iris container starts in ``/app`` (Iris's
  local process runtime leaves tasks in the worker's own directory). Cells' relative paths and
  workspace syncs resolve there.
* Where the server listens is the actor layer's rule (``actors.host.bind_address``): loopback
  only when the controller is on this machine (the embedded controller, a local Iris); the
  server unpickles what it receives, so it is never given another address here.
* **Idle timeout.** A host with no cell running and no call but ``status`` for ``idle_timeout``
  seconds (None: never) stops serving, so its task succeeds and the slice is released even when
  the kernel that held the session is gone; it says so in its log. Idle is counted per host.
* **What the job says.** The endpoint carries the host's session facts as metadata
  (``facts.host_metadata``: that it is a session host, its idle timeout, since when it is idle);
  while the host serves, a change of those facts is registered again (same endpoint id) within
  ``PUBLISH_EVERY`` seconds, so ``%fray jobs`` and the sidebar read them from the controller.
* A registration the controller refuses as ``failed_precondition`` (this attempt is already over)
  ends the task quietly, as an actor group member's does.
* **JAX** (``jax=True``): before it serves, every host joins one JAX process group by Iris's own
  initialisation (``iris.jax.init.initialize_jax``: task 0 registers the coordinator at its
  ``IRIS_PORT_JAX`` and the others resolve it), in the process that runs the cells, so every cell
  sees ``jax.process_count()`` hosts. JAX and Marin's Iris must be installed where the hosts run;
  a host that cannot join fails its task with one line saying what is missing, and the session is
  lost with it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Final

from fray_jupyter.actors.host import actor_port, bind_address, start_server
from fray_jupyter.actors.lease import EndpointLease
from fray_jupyter.actors.server import ActorServer
from fray_jupyter.client.errors import FrayError
from fray_jupyter.session.facts import host_metadata
from fray_jupyter.session.host import HostEngine
from fray_jupyter.session.outputs import IDLE_TIMEOUT, CellResult, Chunks, HostStatus, InterruptReply
from fray_jupyter.session.packages import PipReply
from fray_jupyter.session.workspace_host import SyncReply
from fray_jupyter.task import task_info

ACTOR_NAME: Final = "session"
"""A session host's actor is ``{job}/session-{task index}``."""
IDLE_CHECK_MAX: Final = 30.0
"""The longest pause between two looks at whether a host is idle past its timeout."""
CONCURRENCY: Final = 8
"""Actor server threads per host: a cell, its reads, an interrupt and status calls run at once."""
PUBLISH_EVERY: Final = 0.5
"""Seconds between two looks at whether the host's endpoint metadata (running or idle since) changed."""
JAX_PORT: Final = "jax"
"""The port a ``jax=True`` session asks for: Iris's JAX coordinator port (``IRIS_PORT_JAX``)."""


def actor_name(job_id: str, index: int) -> str:
    """The endpoint name of host ``index`` of the session job ``job_id``."""
    return f"{job_id}/{ACTOR_NAME}-{index}"


class SessionActor:
    """The methods a session host serves: the engine's, and ``stop``."""

    def __init__(self, engine: HostEngine) -> None:
        self._engine = engine
        self._last_call = time.time()

    def idle_since(self) -> float | None:
        """``time.time()`` when this host last did anything for a caller (None while a cell runs)."""
        status = self._engine.status()
        return None if status.idle_since is None else max(status.idle_since, self._last_call)

    def idle_for(self) -> float | None:
        """Seconds since this host last did anything for a caller (None while a cell runs)."""
        since = self.idle_since()
        return None if since is None else time.time() - since

    def execute(self, cell_id: str, source: str) -> CellResult:
        """``HostEngine.execute``."""
        self._last_call = time.time()
        return self._engine.execute(cell_id, source)

    def run(self, cell_id: str, source: str, wait: float = 0.0) -> tuple[Chunks, CellResult | None]:
        """``HostEngine.run``."""
        self._last_call = time.time()
        return self._engine.run(cell_id, source, wait)

    def read(self, cell_id: str, cursor: int = 0, wait: float = 0.0) -> Chunks:
        """``HostEngine.read``."""
        return self._engine.read(cell_id, cursor, wait)

    def interrupt(self, cell_id: str | None = None) -> InterruptReply:
        """``HostEngine.interrupt``."""
        return self._engine.interrupt(cell_id)

    def push(self, payload: Mapping[str, bytes]) -> list[str]:
        """``HostEngine.push``."""
        self._last_call = time.time()
        return self._engine.push(payload)

    def pull(self, names: Sequence[str]) -> dict[str, bytes]:
        """``HostEngine.pull``."""
        self._last_call = time.time()
        return self._engine.pull(names)

    def sync_workspace(self, files: Mapping[str, bytes], deleted: Sequence[str]) -> SyncReply:
        """``HostEngine.sync_workspace``."""
        self._last_call = time.time()
        return self._engine.sync_workspace(files, deleted)

    def pip(self, argv: Sequence[str]) -> PipReply:
        """``HostEngine.pip``."""
        self._last_call = time.time()
        return self._engine.pip(argv)

    def status(self) -> HostStatus:
        """``HostEngine.status``."""
        return self._engine.status()

    def stop(self) -> None:
        """End serving once the running cell ends: the task then succeeds."""
        self._engine.shutdown()


def _release_when_idle(actor: SessionActor, engine: HostEngine, idle_timeout: float) -> None:
    """Stop serving once ``actor`` has been idle ``idle_timeout`` seconds."""
    while True:
        idle = actor.idle_for()
        if idle is not None and idle >= idle_timeout:
            print(f"session host {engine.host}: idle for {idle:.0f} s (the idle timeout is {idle_timeout:g} s): "
                  "releasing the slice", flush=True)
            engine.shutdown()
            return
        time.sleep(min(IDLE_CHECK_MAX, max(0.05, idle_timeout - (idle or 0.0))))


def _idle_since_ms(actor: SessionActor) -> int | None:
    since = actor.idle_since()
    return None if since is None else int(since * 1000)


def _publish(lease: EndpointLease, actor: SessionActor, idle_timeout: float | None, serving: threading.Event) -> None:
    """Register the endpoint again whenever the host's facts change, while it serves."""
    said = lease.metadata
    while serving.is_set():
        metadata = host_metadata(idle_timeout, _idle_since_ms(actor))
        if metadata != said:
            try:
                lease.update(metadata)
                said = metadata
            except FrayError:  # the controller is away or the task is over: tried again next time
                pass
        time.sleep(PUBLISH_EVERY)


def join_jax(host: int) -> None:
    """Join this session's JAX process group by ``iris.jax.init.initialize_jax`` (the module's
    rules); ``RuntimeError`` naming what this host lacks."""
    try:
        import jax  # type: ignore[import-not-found, unused-ignore]  # noqa: F401
        from iris.jax.init import initialize_jax  # type: ignore[import-not-found, unused-ignore]
    except ImportError as error:
        raise RuntimeError(f"session host {host} cannot join a JAX process group (--jax): {error.name or error} "
                           "is not installed where the host runs (pip install jax marin-iris)") from None
    initialize_jax()


def serve_host(idle_timeout: float | None = IDLE_TIMEOUT, jax: bool = False) -> None:
    """The entrypoint of a session task (the module's rules)."""
    from fray_jupyter.client.discovery import connect

    info = task_info()
    if info is None:
        raise RuntimeError("serve_host runs only inside an Iris task (IRIS_TASK_ID is unset or not a task id)")
    workdir = os.environ.get("IRIS_WORKDIR", "")
    if workdir and os.path.isdir(workdir):
        os.chdir(workdir)  # as in an Iris container (its /app); Iris's local process runtime leaves its own cwd
    if jax:
        join_jax(info.task_index)
    engine = HostEngine(info.task_index)
    name = actor_name(info.job_id, info.task_index)
    bind, advertise = bind_address()
    server = ActorServer(bind, actor_port(), max_concurrency=CONCURRENCY)
    actor = SessionActor(engine)
    server.register(name, actor)
    port = start_server(server, bind)
    lease = EndpointLease(connect(), name, f"http://{advertise}:{port}", info.task_id, info.attempt,
                          host_metadata(idle_timeout, _idle_since_ms(actor)))
    refused: list[FrayError] = []
    serving = threading.Event()

    def register() -> None:  # once the main thread serves, so a caller that finds the host can run a cell
        engine.wait_serving()
        try:
            lease.open()
        except FrayError as error:
            refused.append(error)
            engine.shutdown()
            return
        print(f"session host {info.task_index} serving as {name} at http://{advertise}:{port} "
              f"(pid {os.getpid()})", flush=True)
        serving.set()
        _publish(lease, actor, idle_timeout, serving)

    threading.Thread(target=register, name="session-register", daemon=True).start()
    if idle_timeout is not None:
        threading.Thread(target=_release_when_idle, args=(actor, engine, idle_timeout), name="session-idle",
                         daemon=True).start()
    try:
        engine.serve()
    finally:
        serving.clear()
        lease.close()
        server.stop()
    if refused and refused[0].code != "failed_precondition":
        raise refused[0]
