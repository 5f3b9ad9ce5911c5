"""``FrayClient``: the Iris ``ControllerService`` verbs, against the embedded controller or a real
Iris controller alike.

Rules:

* Every verb is one RPC (``follow`` and ``wait`` poll), sent through the ``Transport`` picked by
  the URL scheme, and fails with a one-line ``FrayError`` naming the URL and the job.
* Retries are ``client.retry``'s: which failures, the backoff with jitter, and the budget — short
  for a controller on this machine, Iris's own for a named cluster or a remote URL (``retry_for``
  seconds instead, when given) — but only when sending a call twice cannot do harm. Reads and
  ``TerminateJob`` are idempotent. ``LaunchJob`` is idempotent only under ``existing_job_policy``
  KEEP (what Fray and ``plan()`` send): a second send then returns the job the first one created,
  where ERROR would fail with ALREADY_EXISTS and RECREATE would kill the job just started.
* The verbs beside a job's own life (workers, endpoints, budgets, a task's profile, the change
  feed...) are ``client.cluster_verbs``'; listing's query and page are ``client.listing``'s.
* What a transport can do beyond unary calls is its own data (``transport.json_calls``, ``local``);
  the client never asks what class it is.
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
from typing import Any, Final, Protocol, Self, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message

from fray_jupyter.client import retry, sent
from fray_jupyter.client.cluster_verbs import ClusterVerbs
from fray_jupyter.client.errors import (
    AuthenticationFailed,
    ControllerUnreachable,
    FrayError,
    InvalidRequest,
    JobNotFound,
)
from fray_jupyter.client.listing import JobPage, job_page, job_query
from fray_jupyter.client.logs import (
    LogPage,
    LogQuery,
    fetch_logs_body,
    from_fetch_logs,
    from_task_logs,
    task_logs_request,
)
from fray_jupyter.client.retry import backoff, sleep_until
from fray_jupyter.client.status_text import StatusText, status_text_sql, status_texts
from fray_jupyter.client.transport import SERVICE, Transport, open_transport
from fray_jupyter.iris import arrow_ipc
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
    task_job,
)
from fray_jupyter.iris.user import resolve_user
from fray_jupyter.iris.wire import (
    FETCH_LOGS_PATH,
    STATS_QUERY_PATH,
    method_path,
)

M = TypeVar("M", bound=Message)
R = TypeVar("R")

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
finished. Iris's own ``job logs --follow`` waits one second too. A genuine worker reports a task's end
before it flushes that batch, so on a loaded cluster the batch can come later still and ``follow`` ends
without it, as Iris's own command does; ``logs`` reads it once it is shipped."""


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


class FrayClient(ClusterVerbs):
    """Client of one controller at ``url`` (``http(s)://`` Connect or ``grpc://``) with an optional
    bearer ``token``, or of a named Marin ``cluster`` (its resolved URL as ``url``; see
    ``client.clusters.connect_cluster``). ``user`` is whose jobs ``list`` shows by default (None:
    Iris's own choice, see ``user``). ``timeout`` bounds each RPC; ``retry_for`` bounds the retries
    of one verb (None: ``client.retry``'s budget for this controller; 0: never resend).
    Thread-safe; use as a context manager or call ``close()``."""

    def __init__(self, url: str, token: str | None = None, *, cluster: ClusterLink | None = None,
                 user: str | None = None, timeout: float = 30.0, retry_for: float | None = None) -> None:
        self.timeout = timeout
        self.cluster = cluster
        self._user = user
        self._token = token
        self._reconnecting = threading.Lock()
        self._transport: Transport = open_transport(url, token, headers=cluster.headers if cluster else None)
        self.policy = retry.policy_for(local=self._transport.local and cluster is None, retry_for=retry_for)
        self._log_service = False  # True once GetTaskLogs was unimplemented: ask the log service

    @property
    def retry_for(self) -> float:
        """Seconds one verb keeps resending a failure ``client.retry`` retries (``policy``'s budget)."""
        return self.policy.budget_ms / 1000

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

    @property
    def dashboard_url(self) -> str | None:
        """The named cluster's dashboard (where its proxy serves endpoints), or None off a named cluster."""
        return self.cluster.dashboard_url if self.cluster is not None else None

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
        controller assigned; its inline work-dir files are kept for a resubmit (``client.sent``)."""
        request = launch if isinstance(launch, Controller.LaunchJobRequest) else launch.request
        keep = request.existing_job_policy == job_pb2.EXISTING_JOB_POLICY_KEEP
        if request.environment.secrets and self._transport.json_calls:
            job_id = self._submit_with_secrets(request, idempotent=keep)
        else:
            job_id = self._call("LaunchJob", request, Controller.LaunchJobResponse,
                                idempotent=keep, job_id=request.name).job_id
        sent.keep(self.url, job_id, request.entrypoint)
        return job_id

    def _submit_with_secrets(self, request: Controller.LaunchJobRequest, *, idempotent: bool) -> str:
        """LaunchJob for a job with secrets, in Connect's JSON codec. Iris says no version of its own,
        and one older than Marin ``SECRETS_SINCE`` has no ``EnvironmentConfig.secrets``: it would keep
        the field as unknown bytes of the binary form and run the job without them, but it refuses an
        unknown JSON field (protobuf's own words, ``_NO_SECRETS_FIELD``); that refusal becomes one
        ``InvalidRequest`` naming ``SECRETS_SINCE`` (the job was not launched)."""
        path = method_path(SERVICE, "LaunchJob")
        body = json_format.MessageToDict(request)
        try:
            answer = self._json(path, body, idempotent=idempotent, job_id=request.name)
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
        if not wanted or not self._transport.json_calls:
            return {}
        try:
            answer = self._json(STATS_QUERY_PATH, {"sql": status_text_sql(wanted, since_ms)}, job_id=task_job(wanted[0]))
            return status_texts(answer)
        except (ControllerUnreachable, AuthenticationFailed):
            raise
        except (FrayError, ValueError):  # no such table yet, no stats service, not a table
            return {}

    def query_stats(self, sql: str) -> list[dict[str, Any]]:
        """The rows of ``sql`` over the stats namespaces (finelog's ``StatsService/Query`` through the
        controller's proxy; ``client.usage`` builds the SQL): [] over gRPC, where no proxy is reached;
        a refused query is the controller's error."""
        if not self._transport.json_calls:
            return []
        return arrow_ipc.query_rows(self._json(STATS_QUERY_PATH, {"sql": sql}))

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
                if error.code != "unimplemented" or not self._transport.json_calls:
                    raise
                self._log_service = True
        if not self._transport.json_calls:
            raise FrayError(f"logs(before={before}) reads the rows below a cursor, which needs the log service, "
                            "served over Connect only (an http:// or https:// controller URL)",
                            url=self.url, method="FetchLogs", code="unimplemented", job_id=job_id)
        payload = self._json(FETCH_LOGS_PATH, fetch_logs_body(job_id, query), job_id=job_id)
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
            sleep_until(delay, deadline, f"job {job_id} still running after {timeout} s of logs")

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
            sleep_until(next(delays), deadline, f"job {job_id} not finished after {timeout} s")
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
        query = job_query(lambda: self.user, user=user, scope=scope, parent=parent, prefix=prefix,
                          name_filter=name_filter, state=state, sort=sort, descending=descending,
                          offset=offset, limit=limit)
        response = self._call("ListJobs", Controller.ListJobsRequest(query=query), Controller.ListJobsResponse,
                              job_id=parent or None)
        return job_page(response, scope=scope, parent=parent)

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

    # -- plumbing ------------------------------------------------------------------------------
    def _finished(self, job_id: str) -> bool:
        return is_job_finished(self.state([job_id])[job_id])

    def _call(self, method: str, request: Message, response_type: type[M], *, idempotent: bool = True,
              job_id: str | None = None, service: str = SERVICE, timeout: float | None = None) -> M:
        wait = timeout or self.timeout
        return self._retrying(lambda: self._transport.call(method, request, response_type, wait, service),
                              idempotent=idempotent, job_id=job_id, method=method)

    def _json(self, path: str, body: dict[str, Any], *, idempotent: bool = True, job_id: str | None = None) -> Any:
        """A Connect JSON call to ``path`` of the controller's host (callers check ``json_calls``), retried."""
        return self._retrying(lambda: self._transport.call_json(path, body, self.timeout),
                              idempotent=idempotent, job_id=job_id, method=path.rsplit("/", 1)[-1])

    def _retrying(self, send: Callable[[], R], *, idempotent: bool, job_id: str | None, method: str) -> R:
        """``send()`` under ``self.policy`` (``retry.send``); a named cluster that refuses the
        credentials is re-resolved once and the call sent again; every error names ``job_id``."""
        reopened = False

        def once() -> R:
            nonlocal reopened
            try:
                return send()
            except AuthenticationFailed:
                if self.cluster is None or reopened:
                    raise
                reopened = True
                self._reopen(self._transport)
                return send()
        try:
            return retry.send(once, self.policy, idempotent=idempotent, url=self.url, method=method)
        except FrayError as error:
            error.job_id = error.job_id or job_id
            raise

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
