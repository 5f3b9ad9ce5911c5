"""Calling the server extension's /fray/ routes from pytest-jupyter tests, shared by the route and
hostile-REST tests: paths are sent exactly as given (a job id is one ``%2F``-encoded segment, which
``jp_fetch`` would re-encode). Its fixtures are imported by the modules that use them:
``jp_server_config`` and ``no_controller_env``; ``announced`` (the module's ``controller``, announced
to the server) and ``rest`` (one authenticated call); ``announce`` points the server at a controller."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, NamedTuple
from urllib.parse import quote, urlencode

import pytest
from jupyter_server.utils import url_path_join

from fray_jupyter.client.discovery import TOKEN_ENV, URL_ENV
from fray_jupyter.runtime_file import ControllerInfo, runtime_file_path, write_runtime_file
from tests.waiting import HANG_GUARD_S


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
            body=content if method in ("POST", "PUT") else None, raise_error=False, request_timeout=HANG_GUARD_S,
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


def announce(info: ControllerInfo) -> None:
    """Announce the controller ``info`` describes, with its own token, in this server's runtime dir
    (the only one it finds)."""
    write_runtime_file(ControllerInfo(url=info.url, grpc_url=info.grpc_url, token=info.token, pid=info.pid,
                                      instance=info.instance), runtime_file_path())


@pytest.fixture(autouse=True)
def announced(controller: Any, jp_environ: Any) -> None:
    """The module's ``controller``, announced in this server's runtime dir (autouse where imported)."""
    announce(controller.info)


@pytest.fixture
def rest(http_server_client: Any, jp_base_url: str, jp_auth_header: dict[str, str],
         jp_asyncio_loop: Any) -> Callable[..., Reply]:
    """``rest(path, method="GET", query=None, auth=True)``: one call, with Jupyter's token unless ``auth`` is false."""
    def call(path: str, *, method: str = "GET", query: dict[str, str] | None = None, auth: bool = True) -> Reply:
        return fetch(http_server_client, jp_asyncio_loop, jp_base_url, path + (f"?{urlencode(query)}" if query else ""),
                     method=method, headers=dict(jp_auth_header) if auth else None)
    return call
