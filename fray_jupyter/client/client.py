"""``FrayClient``: the Iris ``ControllerService`` verbs, against the embedded controller or a real
Iris controller alike.

Rules:

* Every verb is one RPC (``follow`` and ``wait`` poll), sent through the ``Transport`` picked by
  the URL scheme, and fails with a one-line ``FrayError`` naming the URL and the job.
* Retries: a call the server answered ``unavailable`` (or whose kept-alive connection dropped) is
  sent again with exponential backoff until ``retry_for`` seconds have passed, but only when
  sending it twice cannot do harm. Reads and ``TerminateJob`` are idempotent. ``LaunchJob`` is
  idempotent only under ``existing_job_policy`` KEEP (what Fray and ``plan()`` send): a second
  send then returns the job the first one created, where ERROR would fail with ALREADY_EXISTS
  and RECREATE would kill the job just started.
* Polling (``wait``, ``follow``) backs off from 50 ms to 2 s, so a quick job is seen finishing
  quickly and a long one costs about one call per 2 s.
* A client of a named Marin cluster (``cluster=``, see ``client.clusters``) sends each call with the
  cluster's current credential headers and owns the resolution: a call refused for authentication
  re-resolves the cluster once and is sent again; ``close()`` closes the resolution too.
* The class is named for what it serves (Fray jobs); it is not Iris's own ``IrisClient``, which
  a Marin user may have imported in the same notebook.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Final, NamedTuple, Protocol, Self, TypeVar, cast

from google.protobuf import json_format
from google.protobuf.message import Message

from fray_jupyter.client.errors import (
    AuthenticationFailed,
    ControllerUnreachable,
    FrayError,
    InvalidRequest,
    JobNotFound,
)
from fray_jupyter.client.logs import (
    LogPage,
    LogQuery,
    fetch_logs_body,
    from_fetch_logs,
    from_task_logs,
    task_logs_request,
)
from fray_jupyter.client.status_text import StatusText, status_text_sql, status_texts
from fray_jupyter.client.transport import SERVICE, ConnectTransport, Transport, open_transport
from fray_jupyter.cluster.profile import ClusterProfile, ProfileError, profile_from_json
from fray_jupyter.iris.budget import band_value
from fray_jupyter.iris.loglines import LEVELS, min_level_value
from fray_jupyter.iris.marin_versions import SECRETS_SINCE
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.proto.job_pb2 import JobStatus, TaskStatus
from fray_jupyter.iris.proto.logging_pb2 import LogEntry
from fray_jupyter.iris.states import (
    MAX_LIST_JOBS_LIMIT,
    MAX_LIST_JOBS_OFFSET,
    is_job_finished,
    parent_job_id,
    task_job,
)
from fray_jupyter.iris.user import resolve_user
from fray_jupyter.iris.wire import (
    CHANGE_FEED_PATH,
    CLUSTER_PROFILE_PATH,
    ENDPOINT_SERVICE,
    FETCH_LOGS_PATH,
    STATS_QUERY_PATH,
)

M = TypeVar("M", bound=Message)
R = TypeVar("R")

SCOPES: Final[dict[str, Controller.JobQueryScope]] = {
    "all": Controller.JOB_QUERY_SCOPE_ALL,
    "roots": Controller.JOB_QUERY_SCOPE_ROOTS,
    "children": Controller.JOB_QUERY_SCOPE_CHILDREN,
}
"""``list``'s scopes, Iris's ``JobQueryScope``: every job, jobs without a parent, one job's children."""
SORT_FIELDS: Final[dict[str, Controller.JobSortField]] = {
    "date": Controller.JOB_SORT_FIELD_DATE,
    "name": Controller.JOB_SORT_FIELD_NAME,
    "state": Controller.JOB_SORT_FIELD_STATE,
    "failures": Controller.JOB_SORT_FIELD_FAILURES,
    "preemptions": Controller.JOB_SORT_FIELD_PREEMPTIONS,
}

POLL_FIRST: Final[float] = 0.05
POLL_MAX: Final[float] = 2.0
LOG_PAGE_LINES: Final[int] = 5000
"""Rows per page of ``log_pages``."""
_NO_SECRETS_FIELD: Final[str] = 'has no field named "secrets"'
"""How protobuf's JSON parser refuses ``secrets`` in an Iris that lacks the field."""
LOG_DRAIN_GRACE: Final[float] = 0.2
"""Seconds ``follow`` waits after seeing the job finish before its last fetch, where the controller
serves ``GetTaskLogs`` (the embedded one stores a task's rows before the task ends)."""
LOG_SERVICE_DRAIN_GRACE: Final[float] = 1.5
"""The same, where logs come from Iris's log service: a worker sends its rows in batches once a
second (finelog's flush interval), so a task's last batch can arrive a second after Iris reports it
finished. Iris's own ``job logs --follow`` waits one second too."""


def backoff(first: float = POLL_FIRST, most: float = POLL_MAX) -> Iterator[float]:
    """Delays ``first, 2*first, 4*first, ...`` capped at ``most``."""
    delay = first
    while True:
        yield delay
        delay = min(delay * 2, most)


class HasLaunchRequest(Protocol):
    """What ``submit`` also takes: an object holding the ``LaunchJobRequest`` to send (a ``Plan``),
    so the client needs nothing of the planning layer."""

    @property
    def request(self) -> Controller.LaunchJobRequest: ...


class ClusterLink(Protocol):
    """A named cluster's resolution as the client uses it (``client.clusters.NamedCluster``)."""

    @property
    def name(self) -> str: ...

    @property
    def url(self) -> str: ...

    @property
    def dashboard_url(self) -> str: ...

    def headers(self) -> Mapping[str, str]: ...

    def reopen(self) -> None: ...

    def close(self) -> None: ...


class JobPage(NamedTuple):
    """One page of ``ListJobs``: the jobs, how many matched before paging, whether more follow."""

    jobs: tuple[JobStatus, ...]
    total: int
    has_more: bool


class Changes(NamedTuple):
    """One answer of the embedded controller's change feed (``controller.changes``)."""

    epoch: str
    revision: int
    job_ids: tuple[str, ...]
    reset: bool


class FrayClient:
    """Client of one controller at ``url`` (``http(s)://`` Connect or ``grpc://``) with an optional
    bearer ``token``, or of a named Marin ``cluster`` (its resolved URL as ``url``; see
    ``client.clusters.connect_cluster``). ``user`` is whose jobs ``list`` shows by default (None:
    Iris's own choice, see ``user``). ``timeout`` bounds each RPC; ``retry_for`` bounds the retries
    of one verb. Thread-safe; use as a context manager or call ``close()``."""

    def __init__(self, url: str, token: str | None = None, *, cluster: ClusterLink | None = None,
                 user: str | None = None, timeout: float = 30.0, retry_for: float = 10.0) -> None:
        self.timeout = timeout
        self.retry_for = retry_for
        self.cluster = cluster
        self._user = user
        self._token = token
        self._reconnecting = threading.Lock()
        self._transport: Transport = open_transport(url, token, headers=cluster.headers if cluster else None)
        self._log_service = False  # True once GetTaskLogs was unimplemented: ask the log service

    @property
    def url(self) -> str:
        """The controller's URL."""
        return self._transport.url

    def auth_headers(self) -> dict[str, str]:
        """The credentials this client sends (the bearer token, a named cluster's current headers),
        for a request to another path of the same controller (its actor proxy)."""
        headers = {"authorization": f"Bearer {self._token}"} if self._token else {}
        if self.cluster is not None:
            headers.update(self.cluster.headers())
        return headers

    def reauthenticate(self) -> None:
        """Resolve the named cluster again and reconnect, as a call it refuses as unauthenticated
        makes this client do (after ``iris login``, or for a token the edge calls stale); nothing
        for a client of a URL."""
        if self.cluster is not None:
            self._reopen(self._transport)

    @property
    def user(self) -> str:
        """The user whose jobs ``list`` shows by default: the one given, else as Iris names a
        submission's user (``$IRIS_USER``, else the login); ``ValueError`` for a name that cannot
        be one component of a job id."""
        return resolve_user(self._user)

    @property
    def cluster_name(self) -> str | None:
        """The named cluster this client is on, or None (the embedded controller or a URL)."""
        return self.cluster.name if self.cluster is not None else None

    def __repr__(self) -> str:
        where = f"cluster={self.cluster.name!r}, " if self.cluster is not None else ""
        return f"FrayClient({where}{self.url!r})"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection(s), and the named cluster's resolution (its tunnel, its local cluster)."""
        self._transport.close()
        if self.cluster is not None:
            self.cluster.close()

    # -- verbs ---------------------------------------------------------------------------------
    def submit(self, launch: Controller.LaunchJobRequest | HasLaunchRequest) -> str:
        """Send a ``LaunchJobRequest`` (or the ``.request`` of a ``Plan``) and return the job id the
        controller assigned."""
        request = launch if isinstance(launch, Controller.LaunchJobRequest) else launch.request
        keep = request.existing_job_policy == job_pb2.EXISTING_JOB_POLICY_KEEP
        if request.environment.secrets and isinstance(self._transport, ConnectTransport):
            return self._submit_with_secrets(request, idempotent=keep)
        response = self._call("LaunchJob", request, Controller.LaunchJobResponse,
                              idempotent=keep, job_id=request.name)
        return response.job_id

    def _submit_with_secrets(self, request: Controller.LaunchJobRequest, *, idempotent: bool) -> str:
        """LaunchJob for a job with secrets, in Connect's JSON codec. Iris says no version of its own,
        and one older than Marin ``SECRETS_SINCE`` has no ``EnvironmentConfig.secrets``: it would keep
        the field as unknown bytes of the binary form and run the job without them, but it refuses an
        unknown JSON field (protobuf's own words, ``_NO_SECRETS_FIELD``); that refusal becomes one
        ``InvalidRequest`` naming ``SECRETS_SINCE`` (the job was not launched)."""
        path = f"/{SERVICE}/LaunchJob"
        body = json_format.MessageToDict(request)
        try:
            answer = self._retrying(lambda: self._log_transport().call_json(path, body, self.timeout),
                                    idempotent=idempotent, job_id=request.name)
        except FrayError as error:
            if _NO_SECRETS_FIELD not in error.detail:
                raise
            raise InvalidRequest(f"this Iris cannot carry the job's secrets: EnvironmentConfig.secrets exists "
                                 f"from Marin {SECRETS_SINCE} on, so the job was not launched; upgrade the "
                                 f"cluster's Iris or pass the values another way ({error.detail})",
                                 url=error.url, method="LaunchJob", code="failed_precondition",
                                 job_id=request.name) from None
        return json_format.ParseDict(answer, Controller.LaunchJobResponse(), ignore_unknown_fields=True).job_id

    def status(self, job_id: str) -> JobStatus:
        """The job's full status (state, error, task counts, pending reason...)."""
        return self.job(job_id).job

    def job(self, job_id: str) -> Controller.GetJobStatusResponse:
        """The job's status and the request it was launched with (its retry limits among it)."""
        request = Controller.GetJobStatusRequest(job_id=job_id)
        return self._call("GetJobStatus", request, Controller.GetJobStatusResponse, job_id=job_id)

    def task(self, task_id: str) -> Controller.GetTaskStatusResponse:
        """One task with every attempt, and for a failed task the controller's likely root-cause
        lines of its log (``root_cause_highlights``)."""
        request = Controller.GetTaskStatusRequest(task_id=task_id)
        return self._call("GetTaskStatus", request, Controller.GetTaskStatusResponse, job_id=task_job(task_id))

    def status_texts(self, task_ids: Iterable[str], *, since_ms: int = 0) -> dict[str, StatusText]:
        """Task id → the newest status text each task reported since ``since_ms`` (the job's
        submission time) — ``client.status_text``; tasks that reported none are left out, and so is
        everything where the controller keeps none (a gRPC URL, a finelog that has no such table yet).
        A controller that cannot be reached, or refuses the caller, is still an error."""
        wanted = list(task_ids)
        if not wanted or not isinstance(self._transport, ConnectTransport):
            return {}
        body = {"sql": status_text_sql(wanted, since_ms)}
        try:
            answer = self._retrying(lambda: self._log_transport().call_json(STATS_QUERY_PATH, body, self.timeout),
                                    idempotent=True, job_id=task_job(wanted[0]))
            return status_texts(answer)
        except (ControllerUnreachable, AuthenticationFailed):
            raise
        except (FrayError, ValueError):  # no such table yet, no stats service, not a table
            return {}

    def state(self, job_ids: Iterable[str]) -> dict[str, job_pb2.JobState]:
        """``{job id: JobState}`` for each id, in one light call; an unknown id is ``JobNotFound``."""
        wanted = tuple(job_ids)
        request = Controller.GetJobStateRequest(job_ids=wanted)
        states = dict(self._call("GetJobState", request, Controller.GetJobStateResponse).states)
        missing = [job_id for job_id in wanted if job_id not in states]
        if missing:
            raise JobNotFound("no state for this job", url=self.url, method="GetJobState",
                              code="not_found", job_id=", ".join(missing))
        return states

    def tasks(self, job_id: str) -> tuple[TaskStatus, ...]:
        """The job's tasks, by index."""
        request = Controller.ListTasksRequest(job_id=job_id)
        return tuple(self._call("ListTasks", request, Controller.ListTasksResponse, job_id=job_id).tasks)

    def logs(self, job_id: str, *, cursor: int = 0, tail: bool = False, max_lines: int = 0,
             substring: str = "", min_level: str = "", before: int = 0,
             include_children: bool = False) -> LogPage:
        """Log rows of every task of the job (with ``include_children``, of every job below it too)
        after ``cursor`` (0: from the start; ``tail``: the newest ``max_lines`` instead of the
        oldest; 0 lets the server cap), optionally only those containing ``substring`` and of level
        ``min_level`` or above (Iris's names: DEBUG, INFO, WARNING, ERROR, CRITICAL, any case;
        UNKNOWN rows always pass; another name is a ``ValueError``), and with ``before`` only rows
        whose cursor is below it (with ``tail``: the page just before; asked of the log service, so
        a Connect URL). Pass the returned cursor back to get only newer rows."""
        if min_level and min_level_value(min_level) is None:
            raise ValueError(f"min_level {min_level!r} is not a log level; use one of {', '.join(LEVELS)}")
        query = LogQuery(cursor, tail, max_lines, substring, min_level, before, include_children)
        if not self._log_service and not before:
            request = task_logs_request(job_id, query)
            try:
                response = self._call("GetTaskLogs", request, Controller.GetTaskLogsResponse, job_id=job_id)
                return from_task_logs(response, query)
            except FrayError as error:
                if error.code != "unimplemented" or not isinstance(self._transport, ConnectTransport):
                    raise
                self._log_service = True
        if not isinstance(self._transport, ConnectTransport):
            raise FrayError(f"logs(before={before}) reads the rows below a cursor, which needs the log service, "
                            "served over Connect only (an http:// or https:// controller URL)",
                            url=self.url, method="FetchLogs", code="unimplemented", job_id=job_id)
        body = fetch_logs_body(job_id, query)
        payload = self._retrying(lambda: self._log_transport().call_json(FETCH_LOGS_PATH, body, self.timeout),
                                 idempotent=True, job_id=job_id)
        return from_fetch_logs(job_id, payload, query)

    def log_pages(self, job_id: str, *, page_lines: int = LOG_PAGE_LINES) -> Iterator[LogPage]:
        """Every log row of the job, oldest first, in pages of at most ``page_lines`` (empty pages
        skipped), until the cursor stops moving: a running job's rows are read up to the last one
        there is then, not waited for. What the full-log download streams, one page in memory at a
        time."""
        cursor = 0
        while True:
            page = self.logs(job_id, cursor=cursor, max_lines=page_lines)
            if page.entries:
                yield page
            if page.cursor <= cursor:
                return
            cursor = page.cursor

    def follow(self, job_id: str, *, cursor: int = 0, timeout: float | None = None,
               include_children: bool = False) -> Iterator[LogEntry]:
        """Yield the job's log rows (with ``include_children``, its whole tree's) as they appear,
        from ``cursor`` on, until the job has finished and its last rows are out. Raises
        ``TimeoutError`` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delays = backoff()
        finished = False
        while True:
            page = self.logs(job_id, cursor=cursor, include_children=include_children)
            yield from page.entries
            cursor = page.cursor
            if finished and not page.entries:
                return
            if page.entries:
                delays = backoff()
            delay = next(delays)
            if not finished and self._finished(job_id):
                grace = LOG_SERVICE_DRAIN_GRACE if self._log_service else LOG_DRAIN_GRACE
                finished, delay = True, max(delay, grace)
            _sleep_until(delay, deadline, f"job {job_id} still running after {timeout} s of logs")

    def changes(self, after: int, epoch: str, *, wait: float) -> Changes:
        """Block until a job changed after revision ``after`` of ``epoch`` (or ``wait`` seconds
        passed) on the embedded controller's change feed. ``FrayError`` with code
        ``unimplemented`` where there is none: a real Iris controller, or a gRPC URL."""
        if not isinstance(self._transport, ConnectTransport):
            raise FrayError("the change feed is served over Connect only", url=self.url,
                            method="WaitForChanges", code="unimplemented")
        body = {"after": after, "epoch": epoch, "timeoutMs": int(wait * 1000)}
        answer = self._transport.call_json(CHANGE_FEED_PATH, body, wait + self.timeout)
        return Changes(str(answer.get("epoch", "")), int(answer.get("revision", 0)),
                       tuple(answer.get("jobIds", ())), bool(answer.get("reset", False)))

    def terminate(self, job_id: str) -> None:
        """Stop the job and every task of it (the job ends KILLED); a finished job is left as is."""
        request = Controller.TerminateJobRequest(job_id=job_id)
        self._call("TerminateJob", request, job_pb2.Empty, job_id=job_id)

    def wait(self, job_id: str, timeout: float | None = None) -> JobStatus:
        """Poll until the job is in a terminal state and return its final status. Raises
        ``TimeoutError`` after ``timeout`` seconds (None: wait as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        delays = backoff()
        while not self._finished(job_id):
            _sleep_until(next(delays), deadline, f"job {job_id} not finished after {timeout} s")
        return self.status(job_id)

    def list(self, *, user: str | None = "", scope: str = "roots", parent: str = "", prefix: str = "",
             name_filter: str = "", state: str = "", sort: str = "date", descending: bool = True,
             offset: int = 0, limit: int = 50) -> JobPage:
        """One page of jobs, as Iris's dashboard opens: by default the client's ``user``'s top-level
        jobs, newest first (Iris's ``job_id_prefix="/<user>/"`` and scope ROOTS).

        ``user``: ``""`` the client's own, a name for that user's, None for every user's (scopes
        "roots" and "all"; a parent's children are listed whoever's they are). ``scope`` is one of
        ``SCOPES``: ``"children"`` needs ``parent``, the job whose direct children to list.
        ``prefix`` (Iris's ``job_id_prefix``, e.g. ``"/alice/exp-"``) replaces the user's prefix, so it
        cannot be given with a user's name. The name contains ``name_filter`` (case-insensitive), the
        state is ``state`` (e.g. ``"running"``); sorted by ``sort`` (one of ``SORT_FIELDS``), ``limit``
        from ``offset``. Every filter runs on the controller, which answers ``has_children``,
        ``total`` (matches before paging) and ``has_more``. A row's ``parent_job_id`` is the
        controller's, and where it leaves it empty (an Iris listing does) the ``parent`` asked for,
        or in scope "all" the id's own parent (``iris.states.parent_job_id``; a root's is empty)."""
        if sort not in SORT_FIELDS:
            raise ValueError(f"sort {sort!r} must be one of {', '.join(SORT_FIELDS)}")
        if scope not in SCOPES:
            raise ValueError(f"scope {scope!r} must be one of {', '.join(SCOPES)}")
        if (scope == "children") != bool(parent):
            raise ValueError("scope 'children' needs parent=<job id>" if parent == "" else
                             f"parent={parent!r} is only for scope 'children' (got scope {scope!r})")
        if prefix and user:
            raise ValueError(f"prefix={prefix!r} names its own jobs; give it without user={user!r}")
        if scope == "children" and user:
            raise ValueError(f"user={user!r} is for scopes 'roots' and 'all'; a parent's children are its own")
        mine = user is not None and scope != "children"
        direction = Controller.SORT_DIRECTION_DESC if descending else Controller.SORT_DIRECTION_ASC
        query = Controller.JobQuery(
            name_filter=name_filter, state_filter=state.lower().removeprefix("job_state_"),
            sort_field=SORT_FIELDS[sort], sort_direction=direction, offset=offset, limit=limit,
            scope=SCOPES[scope], parent_job_id=parent,
            job_id_prefix=prefix or (f"/{resolve_user(user) if user else self.user}/" if mine else ""))
        response = self._call("ListJobs", Controller.ListJobsRequest(query=query), Controller.ListJobsResponse,
                              job_id=parent or None)
        for job in response.jobs:
            if not job.parent_job_id and scope != "roots":
                job.parent_job_id = parent or parent_job_id(job.job_id)
        return JobPage(tuple(response.jobs), response.total_count, response.has_more)

    def children(self, job_id: str) -> tuple[JobStatus, ...]:
        """The job's direct children, oldest first: pages of 500 until the controller says there are
        no more, or up to the deepest offset a controller answers (at most 5,500 children)."""
        found: list[JobStatus] = []
        while True:
            page = self.list(scope="children", parent=job_id, sort="date", descending=False,
                             offset=len(found), limit=MAX_LIST_JOBS_LIMIT)
            found += page.jobs
            if not page.has_more or not page.jobs or len(found) > MAX_LIST_JOBS_OFFSET:
                return tuple(found)

    def autoscaler_status(self) -> Controller.GetAutoscalerStatusResponse:
        """The controller's scale groups and their slices (``GetAutoscalerStatus``)."""
        return self._call("GetAutoscalerStatus", Controller.GetAutoscalerStatusRequest(),
                          Controller.GetAutoscalerStatusResponse)

    def cluster_profile(self) -> ClusterProfile | None:
        """The cluster profile the controller reports (the embedded controller's own
        ``GetClusterProfile``), or None where there is none: a real Iris, an older embedded
        controller, a gRPC URL, or an answer that is not a profile."""
        if not isinstance(self._transport, ConnectTransport):
            return None
        try:
            answer = self._transport.call_json(CLUSTER_PROFILE_PATH, {}, self.timeout)
            return profile_from_json(answer)
        except (FrayError, ProfileError, ValueError, AttributeError):
            return None

    def workers(self) -> Controller.ListWorkersResponse:
        """Every worker the controller knows, with its metadata and attributes (``ListWorkers``)."""
        return self._call("ListWorkers", Controller.ListWorkersRequest(), Controller.ListWorkersResponse)

    # -- the endpoint registry (Iris's EndpointService) ---------------------------------------------
    def endpoints(self, prefix: str = "", *, exact: bool = False,
                  task_ids: Iterable[str] = ()) -> tuple[Controller.Endpoint, ...]:
        """Registered endpoints whose name starts with ``prefix`` (is ``prefix`` with ``exact``),
        of the given tasks only when ``task_ids`` is not empty (``ListEndpoints``)."""
        request = Controller.ListEndpointsRequest(prefix=prefix, exact=exact, task_ids=list(task_ids))
        return tuple(self._call("ListEndpoints", request, Controller.ListEndpointsResponse,
                                service=ENDPOINT_SERVICE).endpoints)

    def register_endpoint(self, request: Controller.RegisterEndpointRequest) -> Controller.RegisterEndpointResponse:
        """Register (or, with the same ``endpoint_id``, renew) a task's endpoint
        (``RegisterEndpoint``; idempotent on the endpoint id, so it is retried)."""
        return self._call("RegisterEndpoint", request, Controller.RegisterEndpointResponse,
                          service=ENDPOINT_SERVICE, job_id=task_job(request.task_id) if request.task_id else None)

    def unregister_endpoint(self, endpoint_id: str) -> None:
        """Remove an endpoint (``UnregisterEndpoint``; an unknown id is no error)."""
        self._call("UnregisterEndpoint", Controller.UnregisterEndpointRequest(endpoint_id=endpoint_id),
                   job_pb2.Empty, service=ENDPOINT_SERVICE)

    # -- users, budgets, the scheduler's queues -----------------------------------------------------
    def users(self) -> tuple[Controller.UserSummary, ...]:
        """Every user with work (or a budget) on the controller, the busiest first (``ListUsers``)."""
        return tuple(self._call("ListUsers", Controller.ListUsersRequest(), Controller.ListUsersResponse).users)

    def user_budget(self, user: str) -> Controller.GetUserBudgetResponse:
        """One user's budget limit (0: unlimited), spend and max band (``GetUserBudget``)."""
        request = Controller.GetUserBudgetRequest(user_id=user)
        return self._call("GetUserBudget", request, Controller.GetUserBudgetResponse)

    def user_budgets(self) -> tuple[Controller.GetUserBudgetResponse, ...]:
        """Every user with their own budget row, with their spend (``ListUserBudgets``)."""
        return tuple(self._call("ListUserBudgets", Controller.ListUserBudgetsRequest(),
                                Controller.ListUserBudgetsResponse).users)

    def set_user_budget(self, user: str, limit: int, max_band: int | str = "interactive") -> None:
        """Set a user's budget limit (0: unlimited) and the highest band they may submit at (a band
        name such as ``"production"`` or its number) (``SetUserBudget``; an admin's call on a real Iris)."""
        request = Controller.SetUserBudgetRequest(user_id=user, budget_limit=limit, max_band=cast(job_pb2.PriorityBand, band_value(max_band)))
        self._call("SetUserBudget", request, Controller.SetUserBudgetResponse)

    def scheduler_state(self) -> Controller.GetSchedulerStateResponse:
        """Pending and running tasks per band, user and job, and users' budget standing
        (``GetSchedulerState``)."""
        return self._call("GetSchedulerState", Controller.GetSchedulerStateRequest(),
                          Controller.GetSchedulerStateResponse)

    # -- plumbing ------------------------------------------------------------------------------
    def _finished(self, job_id: str) -> bool:
        return is_job_finished(self.state([job_id])[job_id])

    def _call(self, method: str, request: Message, response_type: type[M], *, idempotent: bool = True,
              job_id: str | None = None, service: str = SERVICE) -> M:
        return self._retrying(lambda: self._transport.call(method, request, response_type, self.timeout, service),
                              idempotent=idempotent, job_id=job_id)

    def _log_transport(self) -> ConnectTransport:
        """The transport that reaches the log service (the controller's, since it proxies it)."""
        if not isinstance(self._transport, ConnectTransport):
            raise TypeError("the log service is reached over Connect only")
        return self._transport

    def _retrying(self, send: Callable[[], R], *, idempotent: bool, job_id: str | None) -> R:
        deadline, delays = time.monotonic() + self.retry_for, backoff()
        reopened = False
        while True:
            try:
                return send()
            except AuthenticationFailed as error:
                if self.cluster is None or reopened:
                    error.job_id = error.job_id or job_id
                    raise
                reopened = True
                self._reopen(self._transport)
                continue
            except FrayError as error:
                error.job_id = error.job_id or job_id
                delay = next(delays)
                if not (idempotent and error.retryable) or time.monotonic() + delay > deadline:
                    raise
            time.sleep(delay)

    def _reopen(self, failed: Transport) -> None:
        """Re-resolve the named cluster and reconnect (once per failed transport, whichever thread
        saw the failure first)."""
        assert self.cluster is not None
        with self._reconnecting:
            if self._transport is not failed:
                return
            self.cluster.reopen()
            self._transport = open_transport(self.cluster.url, headers=self.cluster.headers)
            failed.close()


def _sleep_until(delay: float, deadline: float | None, message: str) -> None:
    """Sleep ``delay`` seconds, or raise ``TimeoutError(message)`` if that passes ``deadline``."""
    if deadline is not None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(message)
        delay = min(delay, remaining)
    time.sleep(delay)
