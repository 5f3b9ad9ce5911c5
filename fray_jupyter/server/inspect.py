"""REST handlers for looking inside a running task, under ``<base_url>/fray/jobs/<id>/tasks/<index>/``
(the rules of ``server.handlers`` hold: authenticated verbs, JSON errors, one percent-encoded job
id segment). The controller decides who may: only the job's owner (``controller.api.inspector``), so
another user's job is 403 ``permission_denied`` here too.

* ``POST …/profile?kind=cpu|memory|threads&seconds=N&format=F&attempt=A``: the capture itself, with
  its media type (``MEDIA_TYPES``) and ``X-Fray-Profile-Format``; a capture the controller could
  not make is 502 ``profile_failed`` with its reason; a bad parameter 400.
* ``POST …/exec`` with JSON ``{"argv": [...], "timeout": 60}``: ``{"exit_code", "stdout",
  "stderr", "error"}``.
"""

from __future__ import annotations

import json
from typing import Final

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
from fray_jupyter.server.handlers import ApiError, FrayHandler

MEDIA_TYPES: Final[dict[str, str]] = {
    "svg": "image/svg+xml", "json": "application/json", "html": "text/html; charset=utf-8",
    "txt": "text/plain; charset=utf-8", "bin": "application/octet-stream",
}
"""A capture's file extension → the media type it is served as."""


class ProfileHandler(FrayHandler):
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

        def capture(client: FrayClient) -> Profile | str:
            try:
                return client.profile(target, kind, seconds, fmt)
            except InspectionFailed as error:  # answered, but no capture: not a controller failure
                return error.detail
        captured = await self.call(capture)
        if isinstance(captured, str):
            raise ApiError(502, captured, "profile_failed")
        self.set_header("Content-Type", MEDIA_TYPES[captured.extension])
        self.set_header("X-Fray-Profile-Format", f"{kind}/{fmt}")
        self.finish(captured.data)


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
