"""Hostile requests to the server extension's REST API (``/fray/…``) through a real Jupyter server
(pytest-jupyter) and a real controller subprocess: bad query parameters, hostile job ids in the path,
wrong methods. Each is a 4xx with a JSON message (never a 500); the server keeps serving and the
jobs stay listed.

pytest-jupyter's fixtures are imported into this module only, as in ``test_server_handlers``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *

from fray_jupyter.client.discovery import TOKEN_ENV, URL_ENV
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.runtime_file import runtime_file_path, write_runtime_file
from tests.controller_harness import ControllerProcess, launch_request, start_controller, stop_quietly
from tests.fray_rest import (
    Reply,
    fetch,
    job_path,
    jp_server_config,  # noqa: F401 - fixtures
)


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    process = start_controller(tmp_path_factory.mktemp("hostile-rest") / "state", "--slots", "2")
    yield process
    stop_quietly(process)


@pytest.fixture(scope="module")
def known_job(controller: ControllerProcess) -> str:
    """A finished job with one log line, there before any hostile request and checked after each."""
    wire = controller.wire()
    job_id = wire.launch(launch_request("survivor", "echo still-here"))
    wire.wait(job_id, {job_pb2.JOB_STATE_SUCCEEDED})
    wire.close()
    return job_id


@pytest.fixture
def raw(http_server_client: Any, jp_base_url: str, jp_auth_header: dict[str, str], jp_asyncio_loop: Any,
        controller: ControllerProcess, jp_environ: Any, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Reply]:
    """``raw("jobs?limit=x", method=...)``: the path and query exactly as given (already encoded)."""
    monkeypatch.delenv(URL_ENV, raising=False)
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    write_runtime_file(controller.info, runtime_file_path())

    def call(path: str, *, method: str = "GET") -> Reply:
        return fetch(http_server_client, jp_asyncio_loop, jp_base_url, path, method=method,
                     headers=dict(jp_auth_header))

    return call


KNOWN = "%2Falice%2Fsurvivor"  # the known job's id, encoded
CASES: list[tuple[str, str, int]] = [
    # (path?query as sent, method, expected status)
    ("jobs?limit=-1", "GET", 400),
    ("jobs?limit=abc", "GET", 400),
    ("jobs?limit=1e3", "GET", 400),
    ("jobs?limit=%D9%A1%D9%A0", "GET", 400),  # Arabic-Indic digits: isdigit() but not ASCII
    ("jobs?limit=501", "GET", 400),
    ("jobs?limit=%FF", "GET", 400),  # not UTF-8
    ("jobs?offset=99999999999999999999", "GET", 400),
    ("jobs?offset=-5", "GET", 400),
    ("jobs?sort=bogus", "GET", 400),
    ("jobs?order=sideways", "GET", 400),
    ("jobs?state=RUNNING", "GET", 400),
    ("jobs?state=" + "x" * 10_000, "GET", 400),
    ("jobs?start=2", "GET", 400),
    (f"jobs/{KNOWN}/logs?cursor=xyz", "GET", 400),
    (f"jobs/{KNOWN}/logs?cursor=-1", "GET", 400),
    (f"jobs/{KNOWN}/logs?cursor=9223372036854775808", "GET", 400),
    (f"jobs/{KNOWN}/logs?max_lines=abc", "GET", 400),
    (f"jobs/{KNOWN}/logs?max_lines=5001", "GET", 400),
    (f"jobs/{KNOWN}/logs?tail=2", "GET", 400),
    (f"jobs/{KNOWN}/logs?min_level=%3Cscript%3E", "GET", 400),
    (f"jobs/{KNOWN}/logs?before=9223372036854775808", "GET", 400),
    ("jobs/%2Falice%2F" + "x" * 10_240 + "/logs/download", "GET", 404),
    ("jobs/..%2F..%2F..%2Fetc%2Fpasswd/logs/download", "GET", 404),
    (f"jobs/{KNOWN}/logs/download", "POST", 405),
    ("jobs/%2Falice%2Fa%00b", "GET", 404),  # encoded NUL
    ("jobs/..%2F..%2F..%2Fetc%2Fpasswd", "GET", 404),  # traversal
    ("jobs/..%2F..%2F..%2Fetc%2Fpasswd/logs", "GET", 404),
    ("jobs/%2E%2E", "GET", 404),
    ("jobs/%2Falice%2F" + "x" * 10_240, "GET", 404),  # 10 KB id
    ("jobs/%2Falice%2F" + "x" * 10_240 + "/logs", "GET", 404),
    ("jobs/%2Falice%2F" + "x" * 10_240 + "/cancel", "POST", 404),
    ("jobs/%FF%FE", "GET", 400),  # not UTF-8
    ("jobs/%20", "GET", 404),
    ("jobs/%2Falice%2Fsurvivor%2F0", "GET", 404),  # a task id is not a job id
    ("jobs/%2Falice%2Fsurvivor%2F0/cancel", "POST", 404),
    ("jobs/%2Falice%2F%3Cscript%3E/logs", "GET", 404),
    (f"jobs/{KNOWN}/cancel", "GET", 405),
    (f"jobs/{KNOWN}/logs", "POST", 405),
    ("jobs", "POST", 405),
    (f"jobs/{KNOWN}", "DELETE", 405),
    ("status", "PUT", 405),
]


@pytest.mark.parametrize(("path", "method", "expected"), CASES, ids=[f"{m} {p[:60]}" for p, m, _ in CASES])
def test_hostile_requests_are_4xx_json_and_the_server_keeps_serving(raw: Callable[..., Reply], known_job: str,
                                                                    path: str, method: str, expected: int) -> None:
    reply = raw(path, method=method)
    assert reply.code == expected, reply
    assert isinstance(reply.body, dict) and isinstance(reply.body.get("message"), str) and reply.body["message"], reply
    assert "Traceback" not in reply.body["message"]
    listed = raw("jobs?name=survivor")
    assert listed.code == 200 and [j["job_id"] for j in listed.body["jobs"]] == [known_job]
    logs = raw(job_path(known_job, "logs"))
    assert [entry["data"] for entry in logs.body["entries"]] == ["still-here"]


@pytest.mark.parametrize("query", ["limit=", "offset=5000", "name=%00", "name=" + "%25" * 5000,
                                   "name=%E2%80%AE", "limit=500&limit=1",
                                   "sort=date%00"])  # Tornado drops control characters from arguments
def test_odd_but_valid_list_queries_are_answered(raw: Callable[..., Reply], known_job: str, query: str) -> None:
    reply = raw(f"jobs?{query}")
    assert reply.code == 200, reply
    assert set(reply.body) == {"jobs", "total", "has_more"}


def test_a_huge_cursor_reads_nothing_new(raw: Callable[..., Reply], known_job: str) -> None:
    reply = raw(f"{job_path(known_job, 'logs')}?cursor={2**62}")
    assert reply == (200, {"entries": [], "cursor": 2**62})
