"""The RPCs the embedded controller serves, and those of Iris it cannot.

``METHODS`` lists every RPC it serves, with its request and response types, the service-core
method serving it and the paths it answers at, so neither transport repeats the list: the job-facing
RPCs of ``iris.cluster.ControllerService``, and finelog's ``LogService.FetchLogs``, which a real Iris
controller proxies at ``/proxy/system.log-server/finelog.logging.LogService/FetchLogs`` (the path
Marin's client reads logs from) and which is served here from the controller's own log store; the
task status text path (``EndpointService.ListEndpoints`` for ``/system/log-server``, and finelog's
``StatsService`` RegisterTable / WriteRows / Query under the same proxy prefix, see ``taskstatus``);
the endpoint registry tasks publish their actors in (``EndpointService``'s RegisterEndpoint /
UnregisterEndpoint / ListEndpoints, see ``engine.endpoint_registry``). Users, budgets and the scheduler's queues
(``ListUsers``, ``Set/Get/ListUserBudget(s)``, ``GetSchedulerState``) are served from the
controller's own records (``engine.budgets``, ``users``); ``BeginCheckpoint`` writes a snapshot of the store
(``checkpoint``). Iris RPCs the embedded controller cannot serve (workers, raw SQL, ...) are listed
in ``UNSUPPORTED`` and answered UNIMPLEMENTED with one line saying why (``unimplemented``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from google.protobuf.message import Message

from fray_jupyter.controller.rpc_error import Code, RpcError
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

_C = controller_pb2.Controller


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
