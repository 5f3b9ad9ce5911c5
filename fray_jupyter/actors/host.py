"""Serving an actor: ``serve_replica`` is what each task of an actor group runs (Fray's
``_host_actor``), ``host_here`` serves one in the calling process (Fray's ``host_actor``).

Rules:

* While it serves, Fray's ``current_client()`` is the client ``current()`` makes (fray-jupyter's
  own, on the task's controller), in the actor's methods too: an actor that starts actors or jobs
  of its own (Zephyr's coordinator starts its workers) does it through the same client.
* A group member is named ``{job_id}/{name}-{task index}`` and registered in the task's
  controller's registry with a lease (``lease``), then serves until the actor asks to stop: Fray's
  ``ActorContext.shutdown_event`` set (the task succeeds) or ``ctx.fail(exc)`` (the task fails with
  ``exc``, and the job's retry policy applies). The actor's ``__init__`` runs with Fray's
  ``current_actor()`` context set (when marin-fray is installed), as on Iris. A registration the
  controller refuses as ``failed_precondition`` (the task is already over) ends it quietly, as Fray's.
* Where it listens (``bind_address``): a cluster whose controller is on loopback runs on this
  machine (the embedded controller, an Iris local cluster), so the server binds and advertises
  127.0.0.1 and nothing outside the machine can reach it; elsewhere it binds ``IRIS_BIND_HOST`` and
  advertises ``IRIS_ADVERTISE_HOST``, as Iris's workers tell it, inside the cluster's network.
  The port is ``IRIS_PORT_ACTOR`` when the controller gave one ("0" or unset: a free one); one
  that is taken on the bind address (a worker allocates ports on another) gives way to a free one,
  since the address registered is the one bound.
* ``host_here`` inside an Iris task registers ``{job_id}/{name}-0`` for the task; outside one (the
  kernel) it serves on loopback only and the handle carries its address, so it is reachable from
  this machine only (a child job on the embedded controller, not a remote cluster's tasks).
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

from fray_jupyter.actors.handle import ActorHandle
from fray_jupyter.actors.lease import EndpointLease
from fray_jupyter.actors.resolver import FixedResolver
from fray_jupyter.client.errors import FrayError
from fray_jupyter.iris.states import parse_task_attempt

if TYPE_CHECKING:
    from fray_jupyter.actors.server import ActorServer

PORT_NAME: Final[str] = "actor"
"""The port an actor group asks for (``LaunchJobRequest.ports``), delivered as ``IRIS_PORT_ACTOR``."""
LOOPBACK: Final[str] = "127.0.0.1"


def _is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def bind_address(env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """``(bind host, advertised host)`` by the module's rule."""
    env = os.environ if env is None else env
    controller = urlsplit(env.get("IRIS_CONTROLLER_URL") or env.get("IRIS_CONTROLLER_ADDRESS") or "").hostname or ""
    if not controller or _is_loopback(controller):
        return LOOPBACK, LOOPBACK
    bind = env.get("IRIS_BIND_HOST") or LOOPBACK
    return bind, env.get("IRIS_ADVERTISE_HOST") or bind


def actor_port(env: Mapping[str, str] | None = None) -> int:
    """The port the controller allocated for the actor (0: any free one)."""
    value = (os.environ if env is None else env).get(f"IRIS_PORT_{PORT_NAME.upper()}", "0") or "0"
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"IRIS_PORT_{PORT_NAME.upper()} must be a port number, got {value!r}") from None


def _task() -> tuple[str, str, int, int]:
    """``(task id, job id, index, attempt)`` of this Iris task; ``RuntimeError`` outside one."""
    parsed = parse_task_attempt(os.environ.get("IRIS_TASK_ID", ""))
    if parsed is None:
        raise RuntimeError("this runs only inside an Iris task (IRIS_TASK_ID is unset or not a task id)")
    parts, attempt = parsed
    return "/" + "/".join(parts), "/" + "/".join(parts[:-1]), int(parts[-1]), attempt


@contextlib.contextmanager
def _fray_context(handle: ActorHandle, index: int, group: str, stop: threading.Event | None) -> Iterator[Any]:
    """Fray's ``current_actor()`` context around an actor's construction (None without marin-fray)."""
    try:
        from fray.actor import ActorContext, _reset_current_actor, _set_current_actor
    except ImportError:
        yield None
        return
    context = ActorContext(handle=handle, index=index, group_name=group, shutdown_event=stop)
    token = _set_current_actor(context)
    try:
        yield context
    finally:
        _reset_current_actor(token)


def _controller() -> Any:
    from fray_jupyter.client.discovery import connect

    return connect()


@contextlib.contextmanager
def _current_client(current: Callable[[], Any] | None) -> Iterator[None]:
    """Fray's ``current_client()`` is ``current()`` inside (as it was without marin-fray or ``current``)."""
    try:
        from fray.current_client import set_current_client
    except ImportError:
        current = None
    if current is None:
        yield
        return
    with set_current_client(current()):
        yield


def start_server(server: ActorServer, bind: str) -> int:
    """Start ``server`` and return the port it listens on: the one it was given, or a free one when
    that is taken (an Iris worker's allocated port can be bound by another process first; the
    address registered is always the one bound), said in the task's log."""
    try:
        return server.start()
    except OSError as error:
        if error.errno != errno.EADDRINUSE or not server.port:
            raise
        print(f"actor port {server.port} is taken on {bind}; serving on a free one", flush=True)
        server.port = 0
        return server.start()


def serve_replica(actor_class: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], name: str,
                  max_concurrency: int, current: Callable[[], Any] | None = None) -> None:
    """Construct and serve one member of an actor group in this task (the module's rules), with
    ``current()`` as Fray's current client."""
    with _current_client(current):
        _serve_replica(actor_class, args, kwargs, name, max_concurrency)


def _serve_replica(actor_class: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], name: str,
                   max_concurrency: int) -> None:
    from fray_jupyter.actors.server import ActorServer  # here: a caller of actors needs no server

    task_id, job_id, index, attempt = _task()
    actor_name = f"{job_id}/{name}-{index}"
    stop = threading.Event()
    handle = ActorHandle(actor_name)
    with _fray_context(handle, index, name, stop) as context:
        instance = actor_class(*args, **kwargs)
    bind, advertise = bind_address()
    server = ActorServer(bind, actor_port(), max_concurrency=max_concurrency)
    server.register(actor_name, instance)
    port = start_server(server, bind)
    lease = EndpointLease(_controller(), actor_name, f"http://{advertise}:{port}", task_id, attempt)
    try:
        lease.open()
    except FrayError as error:
        server.stop()
        if error.code == "failed_precondition":
            return
        raise
    print(f"actor {actor_name} serving at http://{advertise}:{port}", flush=True)
    try:
        stop.wait()
    finally:
        lease.close()
        server.stop()
    errors = getattr(context, "_errors", None)
    if errors:
        raise errors[0]


class Hosted:
    """An actor served in this process: ``handle``, and ``shutdown()`` to stop serving it."""

    def __init__(self, handle: ActorHandle, stop: Callable[[], None]) -> None:
        self.handle = handle
        self._stop: Callable[[], None] | None = stop

    def shutdown(self) -> None:
        """Stop serving (idempotent)."""
        if self._stop is not None:
            self._stop()
            self._stop = None


def host_here(actor_class: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], name: str,
              max_concurrency: int, *, user: str) -> Hosted:
    """Serve ``actor_class(*args, **kwargs)`` in this process (the module's rules)."""
    from fray_jupyter.actors.server import ActorServer

    in_task = parse_task_attempt(os.environ.get("IRIS_TASK_ID", "")) is not None
    if in_task:
        task_id, job_id, _, attempt = _task()
        actor_name = f"{job_id}/{name}-0"
        bind, advertise = bind_address()
    else:
        actor_name, bind, advertise = f"/{user}/kernel-{os.getpid()}/{name}-0", LOOPBACK, LOOPBACK
    handle = ActorHandle(actor_name)
    with _fray_context(handle, 0, name, None):
        instance = actor_class(*args, **kwargs)
    server = ActorServer(bind, 0, max_concurrency=max_concurrency)
    server.register(actor_name, instance)
    address = f"http://{advertise}:{server.start()}"
    if not in_task:
        handle = ActorHandle(actor_name, FixedResolver(address))
        return Hosted(handle, server.stop)
    lease = EndpointLease(_controller(), actor_name, address, task_id, attempt)
    try:
        lease.open()
    except FrayError:
        server.stop()
        raise

    def stop() -> None:
        lease.close()
        server.stop()

    return Hosted(handle, stop)
