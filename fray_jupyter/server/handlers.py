"""REST handlers under ``<base_url>/fray/``: thin — parse the query, call the controller through
``FrayClient`` in a worker thread (the client blocks), return JSON.

Rules:

* Every verb is ``@tornado.web.authenticated`` (a test fails on any that is not).
* Errors are JSON ``{"message", "code"}`` with an HTTP status: a bad query parameter 400; a job
  the controller does not know 404; no controller configured, running or answering 503 with the
  client's one-line message; any other controller failure 502 (504 when it timed out).
* A job id (``/user/name``, slashes included) travels as ONE percent-encoded path segment:
  ``/fray/jobs/%2Falice%2Ftrain/logs`` (``encodeURIComponent`` on the TypeScript side).
* Logging: "no controller yet" (none configured or running: a normal state the sidebar's background
  poll meets) is one debug line; any other controller failure is one warning line; neither is
  followed by Jupyter's access-log error with the request headers.
* A request never starts a process unless it says ``start=1`` (and ``c.FrayServer.start_controller``
  allows it): the sidebar asks for that while the user has it open; its background polls for
  notifications, and any plain GET, only look for a running controller.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar
from urllib.parse import quote

import tornado.iostream
import tornado.web
from jupyter_server.base.handlers import APIHandler

from fray_jupyter.client import (
    AuthenticationFailed,
    ClusterUnavailable,
    ControllerUnreachable,
    FrayClient,
    FrayError,
    InvalidRequest,
    JobAlreadyExists,
    JobNotFound,
    LoginRequired,
    results,
)
from fray_jupyter.client.clusters import CLUSTER_NAME, list_clusters, marin_unavailable
from fray_jupyter.client.diagnostics import diagnose, retry_limits
from fray_jupyter.client.discovery import NO_CONTROLLER_URL
from fray_jupyter.client.listing import SCOPES, SORT_FIELDS
from fray_jupyter.iris.states import JOB_STATES, MAX_LIST_JOBS_LIMIT, MAX_LIST_JOBS_OFFSET, task_id_for
from fray_jupyter.iris.user import resolve_user
from fray_jupyter.iris.wire import proxy_link
from fray_jupyter.server import contract, serialize
from fray_jupyter.server.link import ControllerLink
from fray_jupyter.server.watch import ChangeHub

T = TypeVar("T")

MAX_OUTPUT_FILE_BYTES: Final[int] = 16 * 2**20
INLINE_TYPES: Final[dict[str, str]] = {
    "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
    "svg": "image/svg+xml", **dict.fromkeys(("txt", "log", "json", "csv", "tsv", "md", "yaml", "yml", "py", "out"),
                                            "text/plain; charset=utf-8"),
}
"""Output file extensions the browser may show inline, and how they are served."""

HTTP_STATUS: Final[tuple[tuple[type[FrayError], int, str], ...]] = (
    (JobNotFound, 404, "not_found"),
    (InvalidRequest, 400, "invalid_request"),
    (JobAlreadyExists, 409, "already_exists"),
    (ControllerUnreachable, 503, "controller_unreachable"),
    (ClusterUnavailable, 503, "cluster_unavailable"),
    (LoginRequired, 502, "login_required"),
    (AuthenticationFailed, 502, "controller_refused_token"),
)
"""Client error class → HTTP status and the ``code`` in the JSON body (first match wins)."""


class ApiError(tornado.web.HTTPError):
    """An error answered as JSON ``{"message": ..., "code": ...}`` with ``status``."""

    def __init__(self, status: int, message: str, code: str, *, expected: bool = False) -> None:
        super().__init__(status)
        self.message = message
        self.code = code
        self.expected = expected  # a normal state (no controller yet), not a failure


def api_error(error: FrayError) -> ApiError:
    """The HTTP answer for a client error (see ``HTTP_STATUS``); the controller's refusal of a
    caller who is not the job's owner is 403 ``permission_denied``."""
    if error.code == "permission_denied":
        return ApiError(403, str(error), "permission_denied")
    for cls, status, code in HTTP_STATUS:
        if isinstance(error, cls):
            return ApiError(status, str(error), code, expected=cls is ControllerUnreachable and error.url == NO_CONTROLLER_URL)
    if error.code == "deadline_exceeded":
        return ApiError(504, str(error), "controller_timeout")
    return ApiError(502, str(error), "controller_error")


class FrayHandler(APIHandler):
    """Base: the ``ControllerLink`` from the app settings, query parsing, JSON errors."""

    @property
    def link(self) -> ControllerLink:
        return self.settings["fray_link"]  # type: ignore[no-any-return]

    async def call(self, verb: Callable[[FrayClient], T]) -> T:
        """``verb(client)`` in a worker thread; a client error becomes the matching ``ApiError``."""
        start = self.wants_start()

        def run() -> T:
            return self.link.run(verb, start=start)
        try:
            return await asyncio.to_thread(run)
        except FrayError as error:
            raise api_error(error) from None

    def reply(self, body: Mapping[str, object]) -> None:
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        error = kwargs.get("exc_info", (None, None, None))[1]
        if not isinstance(error, ApiError):
            super().write_error(status_code, **kwargs)
            return
        log = self.log.debug if error.expected else self.log.warning
        log("fray: %s %s -> %d: %s", self.request.method, self.request.path, status_code, error.message)
        self.answered_error = True
        self.reply(contract.ApiError(message=error.message, code=error.code))

    answered_error = False

    def _log(self) -> None:
        """Tornado's per-request log hook: an ``ApiError`` was already logged once by
        ``write_error``, so its access line is debug, without Jupyter's header dump."""
        if not self.answered_error:
            super()._log()
            return
        self.log.debug("%d %s %s %.2fms", self.get_status(), self.request.method, self.request.path,
                       1000.0 * self.request.request_time())

    # -- query parameters -----------------------------------------------------------------------
    def wants_start(self) -> bool:
        """``start=1``: start the embedded controller if none runs (see the module rules)."""
        return self.choice_arg("start", "0", ("0", "1")) == "1"

    def int_arg(self, name: str, default: int, *, most: int) -> int:
        """Query parameter ``name`` as an integer in ``0..most`` (400 otherwise)."""
        text = self.get_query_argument(name, "")
        if not text:
            return default
        if not (text.isascii() and text.isdigit()) or int(text) > most:
            raise ApiError(400, f"{name}={text!r} must be a whole number from 0 to {most}", "bad_parameter")
        return int(text)

    def user_arg(self) -> str:
        """Query parameter ``user``: one id component, as Iris's users are (400 otherwise)."""
        text = self.get_query_argument("user", "")
        try:
            return resolve_user(text)
        except ValueError:
            raise ApiError(400, f"user={text!r} must be one user name: non-empty, without '/' or spaces",
                           "bad_parameter") from None

    def choice_arg(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        """Query parameter ``name``, one of ``choices`` (400 otherwise)."""
        text = self.get_query_argument(name, "") or default
        if text not in choices:
            raise ApiError(400, f"{name}={text!r} must be one of: {', '.join(c or '(empty)' for c in choices)}",
                           "bad_parameter")
        return text


class StatusHandler(FrayHandler):
    """``GET /fray/status``: the controller's URL, whether it answers, the error if not, and the
    user whose jobs notify (``$IRIS_USER`` or the login, as ``plan()`` resolves it)."""

    @tornado.web.authenticated
    async def get(self) -> None:
        start = self.wants_start()
        status = await asyncio.to_thread(lambda: self.link.status(start=start))
        try:
            user: str | None = resolve_user()
        except ValueError:
            user = None
        self.reply(contract.ControllerStatus(url=status.url, reachable=status.reachable, error=status.error, user=user,
                                             cluster=status.cluster, dashboard_url=status.dashboard_url))


class ClustersHandler(FrayHandler):
    """``GET /fray/clusters``: the named cluster the server is on (``current``, null: the embedded
    controller) and the clusters the user can switch to (``iris cluster list``'s, each with
    ``logged_in``: the credential store has a record); ``available`` is null or the one line that
    says what to install. ``POST ?cluster=NAME`` switches (``cluster=`` empty: the embedded
    controller) and answers the same listing."""

    @tornado.web.authenticated
    async def get(self) -> None:
        self.reply(await asyncio.to_thread(self._listing))

    @tornado.web.authenticated
    async def post(self) -> None:
        name = self.get_query_argument("cluster", None)
        if name is None or (name and not CLUSTER_NAME.fullmatch(name)):
            raise ApiError(400, f"cluster {name!r} must be a cluster name, or \"\" for the embedded controller",
                           "bad_parameter")
        self.link.selected = name
        self.reply(await asyncio.to_thread(self._listing))

    def _listing(self) -> contract.ClusterList:
        return contract.ClusterList(
            current=self.link.current_cluster(), available=marin_unavailable(),
            clusters=[contract.ClusterChoice(name=entry.name, logged_in=entry.logged_in) for entry in list_clusters()])


class JobsHandler(FrayHandler):
    """``GET /fray/jobs?scope=&parent=&user=&state=&name=&sort=&order=&offset=&limit=``: one page of
    jobs, newest first by default, with ``total`` (matches before paging) and ``has_more``. ``scope``
    is Iris's: ``all`` (default), ``roots`` (no parent) or ``children`` (of ``parent``, which it
    needs and only it takes). ``user`` keeps one user's jobs, Iris's way (``job_id_prefix="/<user>/"``;
    not with ``children``: a parent's children are listed whoever's they are); none: everyone's.
    ``name`` and ``state`` filter on the controller, before paging."""

    @tornado.web.authenticated
    async def get(self) -> None:
        scope = self.choice_arg("scope", "all", tuple(SCOPES))
        parent = self.get_query_argument("parent", "")
        if (scope == "children") != bool(parent):
            raise ApiError(400, "scope=children needs parent=<job id>" if not parent else
                           f"parent={parent!r} is only for scope=children (got scope={scope})", "bad_parameter")
        state = self.choice_arg("state", "", ("", *JOB_STATES))
        sort = self.choice_arg("sort", "date", tuple(SORT_FIELDS))
        descending = self.choice_arg("order", "desc", ("asc", "desc")) == "desc"
        offset = self.int_arg("offset", 0, most=MAX_LIST_JOBS_OFFSET)  # a controller refuses deeper pages
        limit = self.int_arg("limit", 50, most=MAX_LIST_JOBS_LIMIT) or 50
        name = self.get_query_argument("name", "")
        user = self.user_arg() if self.get_query_argument("user", "") else None  # None: everyone's
        if user is not None and scope == "children":
            raise ApiError(400, f"user={user!r} is only for scope=roots or scope=all (a parent's children are "
                           "listed whoever's they are)", "bad_parameter")
        page = await self.call(lambda client: client.list(
            user=user, name_filter=name, state=state, sort=sort, descending=descending, offset=offset, limit=limit,
            scope=scope, parent=parent))
        self.reply(contract.JobPage(jobs=[serialize.job_json(job) for job in page.jobs], total=page.total,
                                    has_more=page.has_more))


class UsersHandler(FrayHandler):
    """``GET /fray/users``: every user with work (or a budget) on the controller, the busiest first,
    with their unfinished jobs and those jobs' tasks counted by state (Iris's ``ListUsers``)."""

    @tornado.web.authenticated
    async def get(self) -> None:
        users = await self.call(lambda client: client.users())
        self.reply(contract.UserList(users=[
            contract.UserSummary(user=summary.user, job_state_counts=dict(summary.job_state_counts),
                                 task_state_counts=dict(summary.task_state_counts)) for summary in users]))


class JobHandler(FrayHandler):
    """``GET /fray/jobs/<id>``: the job, its tasks (with their attempts, status text and, for the
    first ``MAX_ROOT_CAUSE_TASKS`` failed ones, root cause) and its retry limits (``client.diagnostics``)."""

    @tornado.web.authenticated
    async def get(self, job_id: str) -> None:
        self.reply(serialize.detail_json(await self.call(lambda client: diagnose(client, job_id))))


class TaskHandler(FrayHandler):
    """``GET /fray/jobs/<id>/tasks/<index>``: one task with every attempt, its root cause when it failed
    and its status text, and the job's retry limits."""

    @tornado.web.authenticated
    async def get(self, job_id: str, index: str) -> None:
        def read(client: FrayClient) -> contract.TaskDetail:
            task_id = task_id_for(job_id, int(index))
            answer, job = client.task(task_id), client.job(job_id)
            texts = client.status_texts([task_id], since_ms=job.job.submitted_at.epoch_ms)
            task = serialize.task_json(answer.task, answer.root_cause_highlights, texts.get(task_id))
            return contract.TaskDetail(task=task, limits=serialize.limits_json(retry_limits(job.request)))
        self.reply(await self.call(read))


class CancelHandler(FrayHandler):
    """``POST /fray/jobs/<id>/cancel``: terminate the job (a finished one is left as it is) and
    return its status afterwards."""

    @tornado.web.authenticated
    async def post(self, job_id: str) -> None:
        def cancel(client: FrayClient) -> Any:
            client.terminate(job_id)
            return client.status(job_id)
        job = await self.call(cancel)
        self.reply(contract.CancelResult(job=serialize.job_json(job)))


class OutputsHandler(FrayHandler):
    """``GET /fray/jobs/<id>/outputs``: per task, the files its current attempt wrote under
    ``$IRIS_OUTPUT_DIR`` (name, size, kind), the archive's URI, or why there are none. An archive
    that cannot be read (e.g. its filesystem package is missing) is 502 ``outputs_unavailable``
    with the one line saying why."""

    @tornado.web.authenticated
    async def get(self, job_id: str) -> None:
        listing = await self.call(lambda client: outputs_or_error(
            lambda: [results.task_outputs(task) for task in client.tasks(job_id)]))
        self.reply(contract.JobOutputs(tasks=[serialize.outputs_json(outputs) for outputs in listing]))


class EndpointsHandler(FrayHandler):
    """``GET /fray/jobs/<id>/endpoints``: the endpoints (actors, trace viewers) registered under the job
    and the jobs below it, by name (``ListEndpoints`` with the prefix ``<id>/``), each with its link
    through the cluster's proxy (``proxy_link``); none where the controller has no endpoint registry."""

    @tornado.web.authenticated
    async def get(self, job_id: str) -> None:
        def read(client: FrayClient) -> list[contract.Endpoint]:
            try:
                found = client.endpoints(f"{job_id}/")
            except FrayError as error:
                if error.code != "unimplemented":
                    raise
                return []
            return [contract.Endpoint(name=e.name, address=e.address, task_id=e.task_id,
                                      link=proxy_link(client.dashboard_url, e.name))
                    for e in sorted(found, key=lambda e: e.name)]
        self.reply(contract.JobEndpoints(endpoints=await self.call(read)))


class OutputFileHandler(FrayHandler):
    """``GET /fray/jobs/<id>/outputs/<task index>/<path>``: one file a task's current attempt wrote,
    at most ``MAX_OUTPUT_FILE_BYTES``. Images and text keep their media type (``INLINE_TYPES``),
    anything else is a download; a task's files are never run as a page of this origin
    (``Content-Security-Policy: sandbox``, ``nosniff``)."""

    @tornado.web.authenticated
    async def get(self, job_id: str, index: str, path: str) -> None:
        def read(client: FrayClient) -> bytes | None:
            tasks = client.tasks(job_id)
            if int(index) >= len(tasks):
                return None
            return outputs_or_error(lambda: results.read_output_file(tasks[int(index)], path, MAX_OUTPUT_FILE_BYTES))
        content = await self.call(read)
        if content is None:
            raise ApiError(404, f"task {index} of {job_id} wrote no file {path!r}", "not_found")
        media_type = INLINE_TYPES.get(path.rpartition(".")[2].lower())
        if media_type is None:
            self.set_header("Content-Disposition", f"attachment; filename*=UTF-8''{quote(path.rpartition('/')[2])}")
        self.set_header("Content-Security-Policy", "sandbox")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.finish(content, set_content_type=media_type or "application/octet-stream")


def outputs_or_error(read: Callable[[], T]) -> T:
    """``read()``, with an unreadable archive answered as 502 ``outputs_unavailable``."""
    try:
        return read()
    except results.ResultUnavailable as error:
        raise ApiError(502, str(error), "outputs_unavailable") from None


class EventsHandler(FrayHandler):
    """``GET /fray/events``: a server-sent event stream of job changes from the one watcher all
    tabs share (``server.watch``); a comment line every ``KEEPALIVE`` s keeps proxies from closing
    it. The stream ends when the tab closes it."""

    KEEPALIVE: Final[float] = 20.0

    @tornado.web.authenticated
    async def get(self) -> None:
        hub: ChangeHub = self.settings["fray_hub"]
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")
        queue = hub.subscribe()
        self._closed = asyncio.Event()
        try:
            self.write("retry: 2000\n\n")
            await self.flush()
            while not self._closed.is_set():
                getter = asyncio.ensure_future(queue.get())
                closed = asyncio.ensure_future(self._closed.wait())
                done, _ = await asyncio.wait({getter, closed}, timeout=self.KEEPALIVE,
                                             return_when=asyncio.FIRST_COMPLETED)
                closed.cancel()
                if getter in done:
                    event = getter.result()
                    self.write(f"event: {event['kind']}\ndata: {json.dumps(event)}\n\n")
                else:
                    getter.cancel()
                    self.write(": keepalive\n\n")
                await self.flush()
        except tornado.iostream.StreamClosedError:
            pass
        finally:
            hub.unsubscribe(queue)

    def on_connection_close(self) -> None:
        closed = getattr(self, "_closed", None)
        if closed is not None:
            closed.set()
