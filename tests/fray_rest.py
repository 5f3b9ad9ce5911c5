"""Calling the server extension's /fray/ routes from pytest-jupyter tests, shared by the route and
hostile-REST tests: paths are sent exactly as given (a job id is one ``%2F``-encoded segment, which
``jp_fetch`` would re-encode). Its two fixtures are imported by the modules that use them:
``jp_server_config`` and ``no_controller_env``."""

from __future__ import annotations

import json
from typing import Any, NamedTuple
from urllib.parse import quote

import pytest
from jupyter_server.utils import url_path_join

from fray_jupyter.client.discovery import TOKEN_ENV, URL_ENV


class Reply(NamedTuple):
    code: int
    body: Any


def job_path(job_id: str, *rest: str) -> str:
    """``jobs/<encoded id>/<rest…>``."""
    return "/".join(["jobs", quote(job_id, safe=""), *rest])


def fetch(http_server_client: Any, loop: Any, base_url: str, path: str, *, method: str = "GET",
          headers: dict[str, str] | None = None, content: bytes = b"") -> Reply:
    """One request to ``<base_url>/fray/<path>`` (``content`` sent with a POST or PUT); the answer's
    body parsed as JSON when it is JSON."""
    async def send() -> Any:
        # The request is made inside the running loop: tornado's fetch() creates its Future on the
        # current loop, and an earlier test's asyncio.run() may have left none set in this thread.
        return await http_server_client.fetch(
            url_path_join(base_url, "fray", path), method=method, headers=headers or {},
            body=content if method in ("POST", "PUT") else None, raise_error=False, request_timeout=30,
            allow_nonstandard_methods=True)

    response = loop.run_until_complete(send())
    try:
        body = json.loads(response.body) if response.body else None
    except ValueError:
        body = response.body.decode(errors="replace")
    return Reply(response.code, body)


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    """The server extension on (it starts no controller of its own), terminals off, and every request
    authenticated."""
    return {
        "ServerApp": {"jpserver_extensions": {"fray_jupyter": True, "jupyter_server_terminals": False},
                      "allow_unauthenticated_access": False},
        "FrayServer": {"start_controller": False},
    }


@pytest.fixture(autouse=True)
def no_controller_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the runtime file (or what a test sets) decides which controller the server reaches."""
    monkeypatch.delenv(URL_ENV, raising=False)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
