"""REST handlers for looking inside a running task, under ``<base_url>/fray/jobs/<id>/`` (the rules
of ``server.handlers`` hold: authenticated verbs, JSON errors, one percent-encoded job id segment).
The controller decides who may: only the job's owner (``controller.api.inspector``), so another user's
job is 403 ``permission_denied`` here too.

* ``POST …/tasks/<index>/profile?kind=cpu|memory|threads&seconds=N&format=F&attempt=A``: the
  capture itself, with its media type (``MEDIA_TYPES``), ``X-Fray-Profile-Format`` (kind/format),
  ``X-Fray-Capture`` (its id in the history) and, when it holds no profile, ``X-Fray-Profile-Empty``
  (the reason the stub gives, percent-encoded: ``captures.empty_reason``); a capture the
  controller could not make is 502 ``profile_failed`` with its reason; a bad parameter 400. Every
  capture made is kept in this server's history (``captures.CaptureStore``).
* ``GET …/profiles``: the job's profile history (``contract.ProfileHistory``): this server's
  captures and the controller's ``iris.profile`` rows of its tasks, newest first
  (``captures.merged``); a controller whose stats cannot be read lists this server's only, saying
  why in ``note``.
* ``GET …/profiles/<capture id>``: one capture of the history again, served as the profile route
  serves it; ``?view=lines`` gives a thread dump's lines with the task's own frames told from
  library frames (``contract.ThreadDump``, ``server.threads``; 400 for another kind); an unknown
  id 404. The controller's rows are read as Iris's dashboard reads them (its stats, which Iris
  lets any signed-in user query); this server's are its own captures.
* ``POST …/tasks/<index>/exec`` with JSON ``{"argv": [...], "timeout": 60}``: ``{"exit_code",
  "stdout", "stderr", "error"}``.

A capture is never run as a page of this origin: every one is served with
``Content-Security-Policy: sandbox allow-scripts allow-modals`` (its own scripts, such as a
flamegraph's zoom and search, run in an opaque origin) and ``nosniff``.
"""

from __future__ import annotations

import json
import time
from typing import Any, Final
from urllib.parse import quote

import tornado.web

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.inspection import (
    FORMATS,
    KINDS,
    ExecResult,
    InspectionFailed,
    Profile,
    profile_request,
)
from fray_jupyter.client.usage import stats_rows
from fray_jupyter.server import contract
from fray_jupyter.server.captures import (
    ID,
    Capture,
    CaptureStore,
    capture_sql,
    controller_capture,
    empty_reason,
    history_sql,
    merged,
)
from fray_jupyter.server.handlers import ApiError, FrayHandler
from fray_jupyter.server.threads import dump_json
from fray_jupyter.server.usage import extra

MEDIA_TYPES: Final[dict[str, str]] = {
    "svg": "image/svg+xml", "json": "application/json", "html": "text/html; charset=utf-8",
    "txt": "text/plain; charset=utf-8", "bin": "application/octet-stream",
}
"""A capture's file extension → the media type it is served as."""
CAPTURE_POLICY: Final[str] = "sandbox allow-scripts allow-modals"


class CaptureHandler(FrayHandler):
    """What the capture routes share: the server's history and serving one capture."""

    @property
    def captures(self) -> CaptureStore:
        return self.settings["fray_captures"]  # type: ignore[no-any-return]

    def serve(self, capture: Capture) -> None:
        """The capture's bytes with its media type and the ``X-Fray-*`` headers (module docstring)."""
        self.set_header("Content-Security-Policy", CAPTURE_POLICY)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("X-Fray-Profile-Format", f"{capture.kind}/{capture.format}")
        self.set_header("X-Fray-Capture", capture.capture_id)
        reason = empty_reason(capture.kind, capture.format, capture.data)
        if reason:
            self.set_header("X-Fray-Profile-Empty", quote(reason, safe=" "))
        self.finish(capture.data, set_content_type=MEDIA_TYPES[capture.extension])


class ProfileHandler(CaptureHandler):
    """``POST /fray/jobs/<id>/tasks/<index>/profile`` (module docstring)."""

    @tornado.web.authenticated
    async def post(self, job_id: str, index: str) -> None:
        kind = self.choice_arg("kind", "cpu", KINDS)
        fmt = self.choice_arg("format", next(iter(FORMATS[kind])), tuple(FORMATS[kind]))
        seconds = self.int_arg("seconds", 10, most=3600)
        attempt = self.get_query_argument("attempt", "")
        if attempt and not (attempt.isascii() and attempt.isdigit()):
            raise ApiError(400, f"attempt={attempt!r} must be a whole number", "bad_parameter")
        target = f"{job_id}/{index}" + (f":{attempt}" if attempt else "")
        try:
            profile_request(target, kind, seconds, fmt)
        except ValueError as error:
            raise ApiError(400, str(error), "bad_parameter") from None

        def capture(client: FrayClient) -> tuple[Profile | str, str]:
            try:
                return client.profile(target, kind, seconds, fmt), client.url
            except InspectionFailed as error:  # answered, but no capture: not a controller failure
                return error.detail, client.url
        requested_ms = int(time.time() * 1000)
        captured, url = await self.call(capture)
        if isinstance(captured, str):
            raise ApiError(502, captured, "profile_failed")
        self.serve(self.captures.add(url=url, job_id=job_id, index=int(index), attempt=int(attempt) if attempt else None,
                                     kind=kind, fmt=fmt, seconds=seconds, requested_ms=requested_ms,
                                     captured_ms=int(time.time() * 1000), data=captured.data))


class ProfilesHandler(CaptureHandler):
    """``GET /fray/jobs/<id>/profiles`` (module docstring)."""

    @tornado.web.authenticated
    async def get(self, job_id: str) -> None:
        def history(client: FrayClient) -> contract.ProfileHistory:
            job = client.status(job_id)  # an unknown job is 404, not an empty history
            notes: list[str] = []
            rows: list[dict[str, Any]] = extra(lambda: stats_rows(client, history_sql(job_id, job.task_count)), [], notes)
            found = [c for c in (controller_capture(client.url, job_id, row) for row in rows) if c is not None]
            listed = merged(self.captures.of_job(client.url, job_id), found)
            return contract.ProfileHistory(captures=[capture.json() for capture in listed],
                                           note=f"the controller's profiles are not listed: {notes[0]}" if notes else "")
        self.reply(await self.call(history))


class StoredCaptureHandler(CaptureHandler):
    """``GET /fray/jobs/<id>/profiles/<capture id>`` (module docstring)."""

    @tornado.web.authenticated
    async def get(self, job_id: str, capture_id: str) -> None:
        view = self.choice_arg("view", "", ("", "lines"))
        match = ID.match(capture_id)
        if match is None:
            raise ApiError(400, f"capture {capture_id!r} must be an id the history lists (s-N or c-I-MS-TYPE)",
                           "bad_parameter")

        def read(client: FrayClient) -> Capture | None:
            if match["number"] is not None:
                return self.captures.get(client.url, job_id, capture_id)
            index, ms, profile_type = int(match["index"]), int(match["ms"]), match["type"]
            rows = stats_rows(client, capture_sql(job_id, index, ms, profile_type))
            if not rows:
                return None
            row = {**rows[0], "source": f"{job_id}/{index}", "captured_at": ms, "type": profile_type}
            data = rows[0].get("profile_data")
            return controller_capture(client.url, job_id, row, data if isinstance(data, bytes) else b"")
        found = await self.call(read)
        if found is None:
            raise ApiError(404, f"{job_id} has no profile {capture_id!r} (this server keeps its newest "
                                "captures only, the controller its own)", "not_found")
        if view != "lines":
            self.serve(found)
        elif found.kind != "threads":
            raise ApiError(400, f"view=lines is for thread dumps; {capture_id} is a {found.kind} profile",
                           "bad_parameter")
        else:
            self.reply(dump_json(found.data.decode(errors="replace")))


class ExecHandler(FrayHandler):
    """``POST /fray/jobs/<id>/tasks/<index>/exec`` (module docstring)."""

    @tornado.web.authenticated
    async def post(self, job_id: str, index: str) -> None:
        try:
            body = json.loads(self.request.body or b"{}")
        except ValueError:
            raise ApiError(400, "the body must be JSON: {\"argv\": [...], \"timeout\": 60}", "bad_parameter") from None
        argv, timeout = (body.get("argv"), body.get("timeout", 60)) if isinstance(body, dict) else (None, None)
        if not isinstance(argv, list) or not argv or not all(isinstance(part, str) for part in argv):
            raise ApiError(400, "argv must be a non-empty list of strings (the command, no shell)", "bad_parameter")
        if not isinstance(timeout, int) or isinstance(timeout, bool):
            raise ApiError(400, f"timeout={timeout!r} must be a whole number of seconds (-1: none)", "bad_parameter")

        def run(client: FrayClient) -> ExecResult:
            return client.exec(f"{job_id}/{index}", argv, timeout=timeout)
        result = await self.call(run)
        self.reply({"exit_code": result.exit_code, "stdout": result.stdout, "stderr": result.stderr,
                    "error": result.error})
