"""The endpoint registry: Iris's ``iris.cluster.EndpointService`` (RegisterEndpoint,
UnregisterEndpoint, ListEndpoints) over the controller's store, where tasks publish the services
they serve (Fray's actors: ``<job id>/<name>-<index>`` at ``http://127.0.0.1:<port>``).

Rules (Iris's, restated; ``iris.cluster.controller.endpoints`` of marin-iris 0.2.227):

* RegisterEndpoint registers or renews: the same ``endpoint_id`` sent again (what a task's lease
  renewer does every third of its lease) replaces the row, so it is idempotent; an empty id gets a
  fresh one. A task holds one registration per name: registering a name again under another id
  replaces the old one. The lease granted is the one asked for, clamped to
  [``MIN_LEASE_MS``, ``MAX_LEASE_MS``] (3 and 10 minutes; unset: 10), and is returned so the
  renewer paces itself by it.
* Refusals, in Iris's order and words: a task id that names no task of a stored job is NOT_FOUND
  ("Task … not found"); a finished task is FAILED_PRECONDITION ("… is already terminal"); an
  ``attempt_id`` that is not the task's current attempt is FAILED_PRECONDITION ("… is no longer
  current"), so a stale attempt cannot register. Before those, what Iris takes unchecked is
  refused here as INVALID_ARGUMENT naming the value (nothing is stored): an empty or over-long
  name, or one with control characters; an address that is not ``http(s)://host:port`` or
  ``host:port`` (the form ``iris.jax`` registers its coordinator in); a task id that is no task
  id; more than ``MAX_METADATA_ENTRIES`` metadata entries or ``MAX_METADATA_CHARS`` characters.
* UnregisterEndpoint forgets the id; an unknown id is no error (idempotent).
* ListEndpoints: a prefix starting ``/system/`` asks for system endpoints (``taskstatus``: the log
  server); otherwise task endpoints whose name is the prefix (``exact``) or starts with it, ANDed
  with ``task_ids`` when given, by name.
* An endpoint is listed while its lease is unexpired **and** the attempt that registered it is its
  task's current, live one (ASSIGNED, BUILDING or RUNNING): it disappears the moment its task
  ends, is retried or its job is removed, and when its lease lapses. (Iris 0.2.227 drops a job's
  endpoints at once only on TerminateJob / CompleteJob and deletion; a task that fails or exits on
  its own stays listed there until its lease lapses, up to 10 minutes. Here it goes with its task.)
  Expired rows are deleted by ``expire``, which the engine runs whenever it wakes; it wakes at
  the earliest lease deadline (``deadlines``), so nothing polls. The registry lives in the store,
  so it survives a restart; the endpoints of tasks the restart ended are gone after it.
* A task whose registered port listens on every interface (``0.0.0.0`` / ``::``, as Marin's
  ``_host_actor`` binds its actor server, whatever ``IRIS_BIND_HOST`` says) gets one warning
  per job: a line in the controller's log and a ``stderr`` row in the task's own log. An actor
  server runs whatever it is sent (cloudpickle), with no authentication.

``MIN_LEASE_ENV`` (tests only) lowers the 3-minute floor, so a lapse can be watched in seconds; the
twin (``iris_local``) honours the same variable.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Final
from urllib.parse import urlsplit

from fray_jupyter.controller.kernel.state_rules import ACTIVE_TASK_STATES
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.runtime import peer
from fray_jupyter.controller.store.endpointstore import EndpointRow
from fray_jupyter.controller.store.logbuffer import LogBuffer
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.proto import controller_pb2, job_pb2, time_pb2
from fray_jupyter.iris.states import TERMINAL_TASK_STATES, task_index, task_job

C = controller_pb2.Controller
MAX_LEASE_MS: Final[int] = 10 * 60_000
"""Iris's ``ENDPOINT_LEASE``: the longest lease granted, and the one given when none is asked for."""
MIN_LEASE_MS: Final[int] = 3 * 60_000
"""Iris's ``MIN_ENDPOINT_LEASE``: the shortest lease granted."""
MIN_LEASE_ENV: Final[str] = "FRAY_MIN_ENDPOINT_LEASE_S"
"""Tests only: seconds to use as the lease floor instead of ``MIN_LEASE_MS``."""
MAX_NAME_CHARS: Final[int] = 1024
MAX_ADDRESS_CHARS: Final[int] = 2048
MAX_METADATA_ENTRIES: Final[int] = 64
MAX_METADATA_CHARS: Final[int] = 16 * 1024
"""Keys and values together."""
WIDE_BIND_WARNING: Final[str] = (
    "[fray controller] warning: {address} (endpoint {name}) listens on every network interface, not only "
    "loopback (IRIS_BIND_HOST is 127.0.0.1 on this controller; Marin's _host_actor binds 0.0.0.0 itself): "
    "other machines that can reach this one can call it, and an actor server runs whatever it is sent")
_LOG = logging.getLogger(__name__)


def now_ms() -> int:
    """Wall-clock epoch milliseconds (the unit of every lease deadline)."""
    return int(time.time() * 1000)


def lease_floor_ms(environ: Mapping[str, str]) -> int:
    """The lease floor: ``MIN_LEASE_MS``, or ``$FRAY_MIN_ENDPOINT_LEASE_S`` seconds when set (tests) to a
    number above 0 and at most ``MAX_LEASE_MS``; any other value is ignored with a warning naming it."""
    text = environ.get(MIN_LEASE_ENV, "").strip()
    if not text:
        return MIN_LEASE_MS
    try:
        floor = int(float(text) * 1000)
    except (ValueError, OverflowError):
        floor = 0
    if not 0 < floor <= MAX_LEASE_MS:
        _LOG.warning("ignoring $%s=%r: give seconds above 0 and at most %d", MIN_LEASE_ENV, text, MAX_LEASE_MS // 1000)
        return MIN_LEASE_MS
    return floor


def granted_lease_ms(request: C.RegisterEndpointRequest, floor_ms: int = MIN_LEASE_MS) -> int:
    """The lease a registration gets: the one asked for within [``floor_ms``, ``MAX_LEASE_MS``];
    ``MAX_LEASE_MS`` when none is asked for."""
    if not request.HasField("lease_duration"):
        return MAX_LEASE_MS
    return min(max(request.lease_duration.milliseconds, floor_ms), MAX_LEASE_MS)


def _refuse(message: str) -> RpcError:
    return RpcError(Code.INVALID_ARGUMENT, f"RegisterEndpoint: {message}")


def check_name(name: str) -> None:
    """An endpoint name is 1 to ``MAX_NAME_CHARS`` characters, none of them control characters."""
    if not name:
        raise _refuse("name is empty; give the endpoint's full name, e.g. '/alice/job/ctr-0'")
    if len(name) > MAX_NAME_CHARS:
        raise _refuse(f"name {name[:60]!r}… is {len(name)} characters, over the limit of {MAX_NAME_CHARS}")
    if any(not char.isprintable() for char in name):
        raise _refuse(f"name {name!r} has control characters")


def address_port(address: str) -> int:
    """The port of an endpoint address, ``http(s)://host:port`` (a trailing ``/`` allowed) or
    ``host:port``; INVALID_ARGUMENT naming it otherwise."""
    what = f"address {address[:200]!r} is not http(s)://host:port or host:port"
    if not address or len(address) > MAX_ADDRESS_CHARS or any(not char.isprintable() or char.isspace()
                                                              for char in address):
        raise _refuse(what)
    try:
        parts = urlsplit(address if "://" in address else f"http://{address}")
        port = parts.port
    except ValueError:
        raise _refuse(what) from None
    if (parts.scheme not in ("http", "https") or not parts.hostname or port is None or not 0 < port < 65536
            or parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc):
        raise _refuse(what)
    return port


def check_metadata(metadata: Mapping[str, str]) -> None:
    """At most ``MAX_METADATA_ENTRIES`` entries of ``MAX_METADATA_CHARS`` characters in all."""
    size = sum(len(key) + len(value) for key, value in metadata.items())
    if len(metadata) > MAX_METADATA_ENTRIES or size > MAX_METADATA_CHARS:
        raise _refuse(f"metadata ({len(metadata)} entries, {size} characters of keys and values) is over the "
                      f"limit of {MAX_METADATA_ENTRIES} entries and {MAX_METADATA_CHARS} characters")


def task_key(task_id: str) -> tuple[str, int]:
    """``/<user>/<job>/<index>`` → (job id, index); INVALID_ARGUMENT for anything else."""
    job_id, index = task_job(task_id), task_index(task_id)
    if index is None or job_id.count("/") < 2 or not job_id.startswith("/"):
        raise _refuse(f"task_id {task_id[:200]!r} is not a task id (/<user>/<job>/<index>)")
    return job_id, index


def endpoint_message(row: EndpointRow) -> C.Endpoint:
    """The wire form of a stored endpoint."""
    return C.Endpoint(endpoint_id=row.endpoint_id, name=row.name, address=row.address,
                      task_id=f"{row.job_id}/{row.idx}", metadata=json.loads(row.metadata),
                      access=row.access)  # type: ignore[arg-type]


class Endpoints:
    """The registry's RPCs and its expiry, over ``store`` (see the module rules). ``logs`` takes
    the wide-bind warning row; ``wake`` is called after each registration, so whoever sleeps until
    ``deadlines()`` (the engine) looks again."""

    def __init__(self, store: Store, logs: LogBuffer, wake: Callable[[], None], *,
                 environ: Mapping[str, str] = os.environ,
                 listens_wide: Callable[[int], bool] = peer.listens_on_every_interface) -> None:
        self.store = store
        self.logs = logs
        self.wake = wake
        self.floor_ms = lease_floor_ms(environ)
        self._listens_wide = listens_wide
        self._warned: set[str] = set()

    def register_endpoint(self, request: C.RegisterEndpointRequest) -> C.RegisterEndpointResponse:
        """Register or renew one endpoint (module rules); returns its id and the lease granted."""
        check_name(request.name)
        port = address_port(request.address)
        job_id, index = task_key(request.task_id)
        check_metadata(request.metadata)
        lease = granted_lease_ms(request, self.floor_ms)
        endpoint_id = request.endpoint_id or str(uuid.uuid4())
        with self.store.transaction():
            task = self.store.task(job_id, index)
            if task is None:
                raise RpcError(Code.NOT_FOUND, f"Task {request.task_id} not found")
            if task.state in TERMINAL_TASK_STATES:
                raise RpcError(Code.FAILED_PRECONDITION,
                               f"Task {request.task_id} is already terminal; endpoint not registered")
            if task.attempt != request.attempt_id:
                raise RpcError(Code.FAILED_PRECONDITION,
                               f"Task {request.task_id} attempt {request.attempt_id} is no longer current")
            now = now_ms()
            self.store.put_endpoint(EndpointRow(
                endpoint_id, request.name, request.address, job_id, index, task.attempt,
                json.dumps(dict(sorted(request.metadata.items()))), int(request.access), now, now + lease))
        self.wake()
        if job_id not in self._warned and self._listens_wide(port):
            self._warned.add(job_id)
            line = WIDE_BIND_WARNING.format(address=request.address, name=request.name)
            _LOG.warning("%s/%d: %s", job_id, index, line)
            self.logs.add(job_id, index, task.attempt, "stderr", line)
        return C.RegisterEndpointResponse(endpoint_id=endpoint_id,
                                          lease_duration=time_pb2.Duration(milliseconds=lease))

    def unregister_endpoint(self, request: C.UnregisterEndpointRequest) -> job_pb2.Empty:
        """Forget the endpoint; an unknown id is no error."""
        with self.store.transaction():
            self.store.delete_endpoint(request.endpoint_id)
        return job_pb2.Empty()

    def list_endpoints(self, request: C.ListEndpointsRequest) -> C.ListEndpointsResponse:
        """The live task endpoints the request names (module rules; not the ``/system/`` ones)."""
        rows = self.store.live_endpoints(now_ms(), ACTIVE_TASK_STATES, name=request.prefix if request.exact else None,
                                         prefix=request.prefix, task_ids=list(request.task_ids))
        return C.ListEndpointsResponse(endpoints=[endpoint_message(row) for row in rows])

    def deadlines(self) -> list[int]:
        """The earliest lease deadline (epoch ms) as a one-item list, or none without endpoints."""
        deadline = self.store.next_endpoint_deadline()
        return [] if deadline is None else [deadline]

    def expire(self) -> None:
        """Delete the endpoints no longer listed (lease lapsed, or their attempt ended)."""
        with self.store.transaction():
            self.store.expire_endpoints(now_ms(), ACTIVE_TASK_STATES)
