"""Calling the server extension's /fray/ routes from pytest-jupyter tests, shared by the route and
hostile-REST tests: paths are sent exactly as given (a job id is one ``%2F``-encoded segment, which
``jp_fetch`` would re-encode)."""

from __future__ import annotations

import json
from typing import Any, NamedTuple
from urllib.parse import quote

from jupyter_server.utils import url_path_join


class Reply(NamedTuple):
    code: int
    body: Any


def job_path(job_id: str, *rest: str) -> str:
    """``jobs/<encoded id>/<rest…>``."""
    return "/".join(["jobs", quote(job_id, safe=""), *rest])


def fetch(http_server_client: Any, loop: Any, base_url: str, path: str, *, method: str = "GET",
          headers: dict[str, str] | None = None) -> Reply:
    """One request to ``<base_url>/fray/<path>``; the body parsed as JSON when it is JSON."""
    async def send() -> Any:
        # The request is made inside the running loop: tornado's fetch() creates its Future on the
        # current loop, and an earlier test's asyncio.run() may have left none set in this thread.
        return await http_server_client.fetch(
            url_path_join(base_url, "fray", path), method=method, headers=headers or {},
            body=b"" if method in ("POST", "PUT") else None, raise_error=False, request_timeout=30,
            allow_nonstandard_methods=True)

    response = loop.run_until_complete(send())
    try:
        body = json.loads(response.body) if response.body else None
    except ValueError:
        body = response.body.decode(errors="replace")
    return Reply(response.code, body)
