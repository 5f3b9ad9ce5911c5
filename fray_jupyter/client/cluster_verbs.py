"""``FrayClient``'s verbs beside a job's own life — workers and scale groups, Iris's endpoint
registry, users' budgets and the scheduler's queues, looking inside a running task, and the embedded
controller's change feed and cluster profile — which it has from ``ClusterVerbs``.

Rule: each is one RPC sent through the client's ``_call`` (its transport and its retry policy), or
a Connect JSON call where the transport has ``json_calls``; where it has not, the verb says so
as its docstring states (None, or an ``unimplemented`` ``FrayError``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar, cast

from google.protobuf.message import Message

from fray_jupyter.client import inspection
from fray_jupyter.client.errors import FrayError
from fray_jupyter.client.transport import SERVICE, Transport
from fray_jupyter.cluster.profile import ClusterProfile, ProfileError, profile_from_json
from fray_jupyter.iris.budget import band_value
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.states import task_job
from fray_jupyter.iris.wire import CHANGE_FEED_PATH, CLUSTER_PROFILE_PATH, ENDPOINT_SERVICE

M = TypeVar("M", bound=Message)


class Changes(NamedTuple):
    """One answer of the embedded controller's change feed (``controller.transport.changes``)."""

    epoch: str
    revision: int
    job_ids: tuple[str, ...]
    reset: bool


class Caller(Protocol):
    """What the verbs need of the client: its transport, its timeout, one retried RPC."""

    _transport: Transport
    timeout: float

    @property
    def url(self) -> str: ...

    def _call(self, method: str, request: Message, response_type: type[M], *, idempotent: bool = True,
              job_id: str | None = None, service: str = SERVICE, timeout: float | None = None) -> M: ...


class ClusterVerbs:
    """``FrayClient``'s verbs about the cluster rather than one job (see the module docstring)."""

    def autoscaler_status(self: Caller) -> Controller.GetAutoscalerStatusResponse:
        """The controller's scale groups and their slices (``GetAutoscalerStatus``)."""
        return self._call("GetAutoscalerStatus", Controller.GetAutoscalerStatusRequest(),
                          Controller.GetAutoscalerStatusResponse)

    def workers(self: Caller) -> Controller.ListWorkersResponse:
        """Every worker the controller knows, with its metadata and attributes (``ListWorkers``)."""
        return self._call("ListWorkers", Controller.ListWorkersRequest(), Controller.ListWorkersResponse)

    # -- the endpoint registry (Iris's EndpointService) ---------------------------------------------
    def endpoints(self: Caller, prefix: str = "", *, exact: bool = False,
                  task_ids: Iterable[str] = ()) -> tuple[Controller.Endpoint, ...]:
        """Registered endpoints whose name starts with ``prefix`` (is ``prefix`` with ``exact``),
        of the given tasks only when ``task_ids`` is not empty (``ListEndpoints``)."""
        request = Controller.ListEndpointsRequest(prefix=prefix, exact=exact, task_ids=list(task_ids))
        return tuple(self._call("ListEndpoints", request, Controller.ListEndpointsResponse,
                                service=ENDPOINT_SERVICE).endpoints)

    def register_endpoint(self: Caller, request: Controller.RegisterEndpointRequest) -> Controller.RegisterEndpointResponse:
        """Register (or, with the same ``endpoint_id``, renew) a task's endpoint
        (``RegisterEndpoint``; idempotent on the endpoint id, so it is retried)."""
        return self._call("RegisterEndpoint", request, Controller.RegisterEndpointResponse,
                          service=ENDPOINT_SERVICE, job_id=task_job(request.task_id) if request.task_id else None)

    def unregister_endpoint(self: Caller, endpoint_id: str) -> None:
        """Remove an endpoint (``UnregisterEndpoint``; an unknown id is no error)."""
        self._call("UnregisterEndpoint", Controller.UnregisterEndpointRequest(endpoint_id=endpoint_id),
                   job_pb2.Empty, service=ENDPOINT_SERVICE)

    # -- users, budgets, the scheduler's queues -----------------------------------------------------
    def users(self: Caller) -> tuple[Controller.UserSummary, ...]:
        """Every user with work (or a budget) on the controller, the busiest first (``ListUsers``)."""
        return tuple(self._call("ListUsers", Controller.ListUsersRequest(), Controller.ListUsersResponse).users)

    def user_budget(self: Caller, user: str) -> Controller.GetUserBudgetResponse:
        """One user's budget limit (0: unlimited), spend and max band (``GetUserBudget``)."""
        request = Controller.GetUserBudgetRequest(user_id=user)
        return self._call("GetUserBudget", request, Controller.GetUserBudgetResponse)

    def user_budgets(self: Caller) -> tuple[Controller.GetUserBudgetResponse, ...]:
        """Every user with their own budget row, with their spend (``ListUserBudgets``)."""
        return tuple(self._call("ListUserBudgets", Controller.ListUserBudgetsRequest(),
                                Controller.ListUserBudgetsResponse).users)

    def set_user_budget(self: Caller, user: str, limit: int, max_band: int | str = "interactive") -> None:
        """Set a user's budget limit (0: unlimited) and the highest band they may submit at (a band
        name such as ``"production"`` or its number) (``SetUserBudget``; an admin's call on a real Iris)."""
        request = Controller.SetUserBudgetRequest(user_id=user, budget_limit=limit, max_band=cast(job_pb2.PriorityBand, band_value(max_band)))
        self._call("SetUserBudget", request, Controller.SetUserBudgetResponse)

    def scheduler_state(self: Caller) -> Controller.GetSchedulerStateResponse:
        """Pending and running tasks per band, user and job, and users' budget standing
        (``GetSchedulerState``)."""
        return self._call("GetSchedulerState", Controller.GetSchedulerStateRequest(),
                          Controller.GetSchedulerStateResponse)

    def changes(self: Caller, after: int, epoch: str, *, wait: float) -> Changes:
        """Block until a job changed after revision ``after`` of ``epoch`` (or ``wait`` seconds
        passed) on the embedded controller's change feed. ``FrayError`` with code
        ``unimplemented`` where there is none: a real Iris controller, or a gRPC URL."""
        if not self._transport.json_calls:
            raise FrayError("the change feed is served over Connect only", url=self.url,
                            method="WaitForChanges", code="unimplemented")
        body = {"after": after, "epoch": epoch, "timeoutMs": int(wait * 1000)}
        answer = self._transport.call_json(CHANGE_FEED_PATH, body, wait + self.timeout)
        return Changes(str(answer.get("epoch", "")), int(answer.get("revision", 0)),
                       tuple(answer.get("jobIds", ())), bool(answer.get("reset", False)))

    def cluster_profile(self: Caller) -> ClusterProfile | None:
        """The cluster profile the controller reports (the embedded controller's own
        ``GetClusterProfile``), or None where there is none: a real Iris, an older embedded
        controller, a gRPC URL, or an answer that is not a profile."""
        if not self._transport.json_calls:
            return None
        try:
            answer = self._transport.call_json(CLUSTER_PROFILE_PATH, {}, self.timeout)
            return profile_from_json(answer)
        except (FrayError, ProfileError, ValueError, AttributeError):
            return None

    # -- looking inside a running task (``inspection``) ------------------------------------------------
    def profile(self: Caller, target: str, kind: str = "cpu", seconds: int = 10, fmt: str | None = None,
                **options: Any) -> inspection.Profile:
        """A ``kind`` profile (cpu, memory, threads) of a task, attempt or ``/system/process``
        (``ProfileTask``; ``inspection.profile``)."""
        return inspection.profile(self._call, target, kind, seconds, fmt, **options)

    def exec(self: Caller, task_id: str, argv: Sequence[str], *, timeout: int = 60) -> inspection.ExecResult:
        """Run ``argv`` in a running task (``ExecInContainer``; ``inspection.exec_command``)."""
        return inspection.exec_command(self._call, task_id, argv, timeout=timeout)
