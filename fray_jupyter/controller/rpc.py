"""What both transports share: status codes, the typed ``RpcError``, the method table, the
caller check (``Authenticator``) and request decoding.

The service core raises ``RpcError(Code.X, message)``; the Connect transport turns it into an
HTTP status plus ``{"code": "<connect name>", "message": ...}``, the gRPC transport into the
matching ``grpc.StatusCode``. ``METHODS`` lists every RPC the embedded controller serves, with
its request and response types and the paths it answers at, so neither transport repeats the
list: the job-facing RPCs of ``iris.cluster.ControllerService``, and finelog's
``LogService.FetchLogs``, which a real Iris controller proxies at
``/proxy/system.log-server/finelog.logging.LogService/FetchLogs`` (the path Marin's client
reads logs from) and which is served here from the controller's own log store; the task status
text path (``EndpointService.ListEndpoints`` for ``/system/log-server``, and finelog's
``StatsService`` RegisterTable / WriteRows / Query under the same proxy prefix, see
``taskstatus``); the endpoint registry tasks publish their actors in (``EndpointService``'s
RegisterEndpoint / UnregisterEndpoint / ListEndpoints, see ``endpoints``). Users, budgets and the scheduler's queues (``ListUsers``,
``Set/Get/ListUserBudget(s)``, ``GetSchedulerState``) are served from the controller's own records
(``budget``, ``users``); ``BeginCheckpoint`` writes a snapshot of the store (``checkpoint``). Iris RPCs the embedded controller cannot serve (workers, raw SQL, ...) are
listed in ``UNSUPPORTED`` and answered UNIMPLEMENTED with one line saying why.

Who may call (``Authenticator``): a caller with ``authorization: Bearer <token>`` holding the
controller's token; or a caller with no ``authorization`` header at all whose TCP connection
comes over loopback from a socket owned by the controller's own OS user (``peer``: a real Iris
trusts loopback; here other local users share 127.0.0.1, so only the user who could read the
token from the runtime file anyway is trusted). A wrong token is always refused. Both act as the
controller's own user (``owner``, its admin, as Iris lets an admin act on every job); a token from
``user_tokens`` is let in as that user only. Who an admitted call comes from is ``CALLER`` while it
is served (``inspection`` lets only a job's owner, or the admin, look inside its tasks).

A handler may return an awaitable (a verb that waits on a subprocess, such as ``ProfileTask``): the
transports await it on the controller's loop, so a 10-second profile never blocks other calls.
"""

from __future__ import annotations

import enum
import hmac
import inspect
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from fray_jupyter.controller import peer as peer_module
from fray_jupyter.iris.proto import controller_pb2, finelog_logging_pb2, finelog_stats_pb2, job_pb2
from fray_jupyter.iris.wire import (
    CONTROLLER_SERVICE,
    ENDPOINT_SERVICE,
    LOG_SERVER_PROXY,
    LOG_SERVICE,
    STATS_SERVICE,
    method_path,
    proxied,
)

if TYPE_CHECKING:
    import grpc

_LOG = logging.getLogger(__name__)

_C = controller_pb2.Controller


class Code(enum.Enum):
    """Connect / gRPC status codes: value = (Connect name, HTTP status); the gRPC code has the
    member's name (``grpc`` is imported by the gRPC transport only, not by the service core)."""

    INVALID_ARGUMENT = ("invalid_argument", 400)
    NOT_FOUND = ("not_found", 404)
    ALREADY_EXISTS = ("already_exists", 409)
    PERMISSION_DENIED = ("permission_denied", 403)
    FAILED_PRECONDITION = ("failed_precondition", 400)
    RESOURCE_EXHAUSTED = ("resource_exhausted", 429)
    UNAUTHENTICATED = ("unauthenticated", 401)
    UNIMPLEMENTED = ("unimplemented", 501)
    UNAVAILABLE = ("unavailable", 503)
    INTERNAL = ("internal", 500)

    @property
    def connect_name(self) -> str:
        """The lower-case name the Connect protocol puts in an error's ``code``."""
        return self.value[0]

    @property
    def http_status(self) -> int:
        """The HTTP status the Connect protocol pairs with this code."""
        return self.value[1]

    @property
    def grpc_code(self) -> grpc.StatusCode:
        """The native gRPC status code."""
        import grpc

        return grpc.StatusCode[self.name]


MAX_MESSAGE_LENGTH: Final[int] = 1000
"""Error messages echo the caller's values; past this many characters they are cut, so a 10 KB
job id cannot push a gRPC status past the peer's metadata limit (it would arrive as
RESOURCE_EXHAUSTED instead of the real code)."""


class RpcError(Exception):
    """A refused RPC: a status code and a message meant for the person who sent it (at most
    ``MAX_MESSAGE_LENGTH`` characters; a longer one is cut and says how much was left out)."""

    def __init__(self, code: Code, message: str) -> None:
        if len(message) > MAX_MESSAGE_LENGTH:
            cut = len(message) - MAX_MESSAGE_LENGTH
            message = f"{message[:MAX_MESSAGE_LENGTH]}… ({cut} more characters)"
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Method:
    """One unary RPC: its name, message types, the service-core attribute serving it, its
    service, and the ``/proxy/<name>`` prefix a real Iris controller serves it under (if any)."""

    name: str
    request: type[Message]
    response: type[Message]
    handler: str
    service: str = CONTROLLER_SERVICE
    proxy: str = ""

    @property
    def path(self) -> str:
        """``/<service>/<name>``, the URL path and gRPC method path."""
        return method_path(self.service, self.name)

    @property
    def paths(self) -> tuple[str, ...]:
        """Every path the method answers at: ``path``, and ``/proxy/<proxy><path>`` if proxied."""
        return (self.path, proxied(self.path, self.proxy)) if self.proxy else (self.path,)


_F = finelog_logging_pb2
_S = finelog_stats_pb2
METHODS: Final[tuple[Method, ...]] = (
    Method("LaunchJob", _C.LaunchJobRequest, _C.LaunchJobResponse, "launch_job"),
    Method("GetJobStatus", _C.GetJobStatusRequest, _C.GetJobStatusResponse, "get_job_status"),
    Method("GetJobState", _C.GetJobStateRequest, _C.GetJobStateResponse, "get_job_state"),
    Method("TerminateJob", _C.TerminateJobRequest, job_pb2.Empty, "terminate_job"),
    Method("CompleteJob", _C.CompleteJobRequest, job_pb2.Empty, "complete_job"),
    Method("ListJobs", _C.ListJobsRequest, _C.ListJobsResponse, "list_jobs"),
    Method("GetTaskStatus", _C.GetTaskStatusRequest, _C.GetTaskStatusResponse, "get_task_status"),
    Method("ListTasks", _C.ListTasksRequest, _C.ListTasksResponse, "list_tasks"),
    Method("GetTaskLogs", _C.GetTaskLogsRequest, _C.GetTaskLogsResponse, "get_task_logs"),
    Method("ListWorkers", _C.ListWorkersRequest, _C.ListWorkersResponse, "list_workers"),
    Method("GetAutoscalerStatus", _C.GetAutoscalerStatusRequest, _C.GetAutoscalerStatusResponse,
           "get_autoscaler_status"),
    Method("ListUsers", _C.ListUsersRequest, _C.ListUsersResponse, "list_users"),
    Method("SetUserBudget", _C.SetUserBudgetRequest, _C.SetUserBudgetResponse, "set_user_budget"),
    Method("GetUserBudget", _C.GetUserBudgetRequest, _C.GetUserBudgetResponse, "get_user_budget"),
    Method("ListUserBudgets", _C.ListUserBudgetsRequest, _C.ListUserBudgetsResponse, "list_user_budgets"),
    Method("GetSchedulerState", _C.GetSchedulerStateRequest, _C.GetSchedulerStateResponse, "get_scheduler_state"),
    Method("FetchLogs", _F.FetchLogsRequest, _F.FetchLogsResponse, "fetch_logs", LOG_SERVICE, LOG_SERVER_PROXY),
    Method("RegisterEndpoint", _C.RegisterEndpointRequest, _C.RegisterEndpointResponse, "register_endpoint",
           ENDPOINT_SERVICE),
    Method("UnregisterEndpoint", _C.UnregisterEndpointRequest, job_pb2.Empty, "unregister_endpoint",
           ENDPOINT_SERVICE),
    Method("ListEndpoints", _C.ListEndpointsRequest, _C.ListEndpointsResponse, "list_endpoints", ENDPOINT_SERVICE),
    Method("RegisterTable", _S.RegisterTableRequest, _S.RegisterTableResponse, "register_table", STATS_SERVICE,
           LOG_SERVER_PROXY),
    Method("WriteRows", _S.WriteRowsRequest, _S.WriteRowsResponse, "write_rows", STATS_SERVICE, LOG_SERVER_PROXY),
    Method("Query", _S.QueryRequest, _S.QueryResponse, "query", STATS_SERVICE, LOG_SERVER_PROXY),
    Method("BeginCheckpoint", _C.BeginCheckpointRequest, _C.BeginCheckpointResponse, "begin_checkpoint"),
    Method("ProfileTask", job_pb2.ProfileTaskRequest, job_pb2.ProfileTaskResponse, "profile_task"),
    Method("ExecInContainer", _C.ExecInContainerRequest, _C.ExecInContainerResponse, "exec_in_container"),
    Method("GetProcessStatus", job_pb2.GetProcessStatusRequest, job_pb2.GetProcessStatusResponse,
           "get_process_status"),
)
METHODS_BY_PATH: Final[dict[str, Method]] = {path: method for method in METHODS for path in method.paths}

# Why the embedded controller cannot serve an Iris RPC: one line per kind of missing machinery.
_NO_WORKERS = "it has no workers (tasks run as processes on this machine, not on registered workers)"
_NO_PROXY = "it has no actor proxy (tasks and this machine's user call endpoints at their own addresses)"
_NO_IDENTITY = "it has no caller identities (every caller it lets in is this machine's user)"
_NO_SQL = "it has no SQL query surface (use job/task listings and logs instead)"
_NO_CLUSTER = "it has no autoscaler, backends or peers (it is one machine)"
_NO_KICK = "it does not force task attempts out of band (use `iris job cancel` to stop a job)"
_NO_LOG_WRITES = "task output is captured by the controller itself; nothing is pushed to it"
_STATUS_TEXT_ONLY = ("of finelog's stats it keeps the namespaces iris.task, iris.task_event, iris.profile and "
                     "iris.task_status only, "
                     "through RegisterTable, WriteRows and Query")
_UNSUPPORTED_BY_SERVICE: Final[dict[str, dict[str, str]]] = {
    CONTROLLER_SERVICE: {
        "KickTasks": _NO_KICK, "Register": _NO_WORKERS, "RenewWorkerToken": _NO_WORKERS,
        "GetWorkerStatus": _NO_WORKERS, "MintEndpointToken": _NO_PROXY,
        "GetCurrentUser": _NO_IDENTITY, "GetKubernetesClusterStatus": _NO_CLUSTER, "ExecuteRawQuery": _NO_SQL,
        "ListBackends": _NO_CLUSTER, "ListPeers": _NO_CLUSTER,
        "FederationSync": _NO_CLUSTER,
    },
    LOG_SERVICE: {"PushLogs": _NO_LOG_WRITES},
    STATS_SERVICE: {name: _STATUS_TEXT_ONLY for name in (
        "DropTable", "ListNamespaces", "GetTableSchema", "GetTableStatus", "AbortTableMigration", "ReportRelayStatus",
        "ListRelayStatus")},
}
UNSUPPORTED: Final[dict[str, str]] = {
    path: f"{name} is not served by the embedded fray-jupyter controller: {reason}"
    for service, methods in _UNSUPPORTED_BY_SERVICE.items() for name, reason in methods.items()
    for path in (method_path(service, name), proxied(method_path(service, name)))
}
"""Path → the one-line UNIMPLEMENTED message for Iris RPCs the embedded controller cannot serve
(at their own path and, like the log service, under the log server's proxy prefix)."""


def unimplemented(path: str) -> RpcError:
    """The UNIMPLEMENTED error for a path no method answers at; a ``/proxy/<name>/...`` path (Iris's
    actor proxy) says there is none, so nothing is relayed to an actor."""
    if path not in UNSUPPORTED and path.startswith("/proxy/"):
        name = path.removeprefix("/proxy/").split("/", 1)[0]
        return RpcError(Code.UNIMPLEMENTED, f"/proxy/{name} is not served by the embedded fray-jupyter controller: "
                                            f"{_NO_PROXY}; ListEndpoints gives the address")
    return RpcError(Code.UNIMPLEMENTED, UNSUPPORTED.get(path, f"no such method: {path}"))


BEARER_PREFIX: Final[str] = "Bearer "
Peer = tuple[str, int]
"""A connection's remote end: (host, port)."""


@dataclass(frozen=True)
class Caller:
    """Who an admitted call comes from: ``user``; ``admin`` when it is the controller's own user
    (its token, or its OS user over loopback), who may act on every job."""

    user: str
    admin: bool


CALLER: ContextVar[Caller | None] = ContextVar("fray_controller_caller", default=None)
"""The caller of the call being served (set by ``Authenticator.check``; None outside a call)."""


class Authenticator:
    """Decides who may call (see the module docstring): the ``token`` holder, and — unless
    ``same_user`` is False — tokenless loopback callers whose socket belongs to this process's
    effective uid. ``owner_of(peer, local_port)`` finds a socket's owner (``peer.socket_owner``)."""

    def __init__(self, token: str, *, same_user: bool = True,
                 owner_of: Callable[[Peer, int], int | None] = peer_module.socket_owner,
                 owner: str = "", user_tokens: Mapping[str, str] | None = None) -> None:
        self.token = token
        self.same_user = same_user
        self._owner_of = owner_of
        self._uid = os.geteuid() if hasattr(os, "geteuid") else -1
        self.owner = owner or _own_user()
        self.user_tokens = dict(user_tokens or {})

    def check(self, header: str | None, peer: Peer | None = None, local_port: int | None = None) -> None:
        """Accept or raise UNAUTHENTICATED. ``header`` is the ``authorization`` value (None when
        absent or empty), ``peer`` the caller's (host, port) and ``local_port`` the port it called.
        The token is compared in constant time. The accepted caller is set in ``CALLER``; a refusal
        is logged (the caller's address, never what it sent)."""
        if not header:
            if self.same_user and peer is not None and local_port is not None and self._is_own(peer, local_port):
                CALLER.set(Caller(self.owner, admin=True))
                return
            _LOG.info("refused a caller at %s: no token", _address(peer))
            raise RpcError(Code.UNAUTHENTICATED, "missing 'authorization: Bearer <token>' header"
                           + (" (without one, only this controller's own OS user is let in, over loopback)"
                              if self.same_user else ""))
        presented = header[len(BEARER_PREFIX):].strip().encode() if header.startswith(BEARER_PREFIX) else None
        if presented is not None and hmac.compare_digest(presented, self.token.encode()):
            CALLER.set(Caller(self.owner, admin=True))
            return
        for user, token in self.user_tokens.items():
            if presented is not None and hmac.compare_digest(presented, token.encode()):
                CALLER.set(Caller(user, admin=False))
                return
        _LOG.info("refused a caller at %s: invalid bearer token", _address(peer))
        raise RpcError(Code.UNAUTHENTICATED, "invalid bearer token")

    def _is_own(self, peer: Peer, local_port: int) -> bool:
        return self._uid >= 0 and peer_module.is_loopback(peer[0]) and self._owner_of(peer, local_port) == self._uid


def _address(peer: Peer | None) -> str:
    return f"{peer[0]}:{peer[1]}" if peer is not None else "an unknown address"


def parse_user_token(value: str) -> tuple[str, str]:
    """One ``--user-token USER=TOKEN`` value → (user, token); a ``ValueError`` (naming the user part,
    never the token) when the user is empty or has '/' or spaces, or the token is empty."""
    user, _, token = value.partition("=")
    if not user.strip() or "/" in user or " " in user.strip() or not token.strip():
        raise ValueError(f"{user!r}=...: expected USER=TOKEN (a user name without '/' or spaces, a non-empty token)")
    return user.strip(), token.strip()


def _own_user() -> str:
    """This process's user as Iris names it (``$IRIS_USER``, else the login); "root" if neither works."""
    from fray_jupyter.iris.user import resolve_user

    try:
        return resolve_user()
    except ValueError:
        return "root"


Answer = Message | Awaitable[Message]
Invoke = Callable[[Method, Message], Answer]
"""Serve one decoded request: what a transport calls (a transport awaits an awaitable answer)."""


def decode(method: Method, codec: str, body: bytes) -> Message:
    """Parse a request body; anything unparseable (JSON that is not an object included) is
    INVALID_ARGUMENT (unknown JSON fields are ignored, so newer clients with extra fields still work)."""
    message = method.request()
    name = method.request.DESCRIPTOR.full_name
    try:
        if codec == "proto":
            message.ParseFromString(body)
        else:
            payload = json.loads(body or b"{}")
            if not isinstance(payload, dict):
                raise RpcError(Code.INVALID_ARGUMENT,
                               f"cannot parse {name}: expected a JSON object, got {type(payload).__name__}")
            json_format.ParseDict(payload, message, ignore_unknown_fields=True)
    except (DecodeError, json_format.ParseError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise RpcError(Code.INVALID_ARGUMENT, f"cannot parse {name}: {error}") from None
    return message


def invoke_logged(service: object) -> Invoke:
    """``invoke`` for a service object: call ``service.<handler>(request)``; an unexpected
    exception is logged and answered as INTERNAL, never propagated to the server."""

    def invoke(method: Method, request: Message) -> Answer:
        try:
            response: Answer = getattr(service, method.handler)(request)
        except RpcError:
            raise
        except Exception as error:  # noqa: BLE001 - a bug in one RPC must not take the server down
            raise _internal(method, error) from None
        if inspect.isawaitable(response):
            return _logged(method, response)
        return response

    return invoke


async def _logged(method: Method, answer: Awaitable[Message]) -> Message:
    try:
        return await answer
    except RpcError:
        raise
    except Exception as error:  # noqa: BLE001 - as in ``invoke_logged``
        raise _internal(method, error) from None


def _internal(method: Method, error: Exception) -> RpcError:
    _LOG.exception("%s failed", method.name, exc_info=error)
    return RpcError(Code.INTERNAL, f"{method.name} failed: {type(error).__name__}: {error}")
