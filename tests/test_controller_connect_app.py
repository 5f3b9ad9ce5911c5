"""The Connect ASGI app in process: codecs, compression, and Connect-style errors."""

from __future__ import annotations

import asyncio
import gzip
import json

import httpx
import zstandard
from google.protobuf.message import Message

from fray_jupyter.controller.api.methods import Method
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.transport.connect_app import MAX_REQUEST_BYTES, ConnectApp
from fray_jupyter.iris.proto import controller_pb2

C = controller_pb2.Controller
PATH = "/iris.cluster.ControllerService/GetJobState"
AUTH = {"authorization": "Bearer secret"}


def _invoke(method: Method, request: Message) -> Message:
    assert method.name == "GetJobState" and isinstance(request, C.GetJobStateRequest)
    if list(request.job_ids) == ["/boom"]:
        raise RpcError(Code.NOT_FOUND, "Job /boom not found")
    return C.GetJobStateResponse(states={job_id: 3 for job_id in request.job_ids})


async def _status() -> dict[str, object]:
    return {"jobs_running": 0}


def _post(path: str = PATH, body: bytes = b"", headers: dict[str, str] | None = None,
          verb: str = "POST") -> httpx.Response:
    async def call() -> httpx.Response:
        transport = httpx.ASGITransport(app=ConnectApp(_invoke, "secret", "inst-1", admin={"status": _status}))
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            return await client.request(verb, path, content=body, headers=headers or {})

    return asyncio.run(call())


def test_json_and_proto_codecs() -> None:
    reply = _post(body=b'{"jobIds": ["/a/b"], "unknownField": 1}',
                  headers={**AUTH, "content-type": "application/json; charset=utf-8"})
    assert reply.status_code == 200 and reply.headers["content-type"] == "application/json"
    assert reply.json() == {"states": {"/a/b": "JOB_STATE_RUNNING"}}
    body = C.GetJobStateRequest(job_ids=["/a/b"]).SerializeToString()
    reply = _post(body=gzip.compress(body), headers={**AUTH, "content-type": "application/proto",
                                                     "content-encoding": "gzip"})
    assert C.GetJobStateResponse.FromString(reply.content).states["/a/b"] == 3
    for compressor in (zstandard.ZstdCompressor(level=-1), zstandard.ZstdCompressor(write_content_size=False)):
        reply = _post(body=compressor.compress(body), headers={**AUTH, "content-type": "application/proto",
                                                               "content-encoding": "zstd"})
        assert C.GetJobStateResponse.FromString(reply.content).states["/a/b"] == 3


def test_zstd_bodies_are_capped_and_checked() -> None:
    proto = {**AUTH, "content-type": "application/proto", "content-encoding": "zstd"}
    bomb = zstandard.ZstdCompressor().compress(b"\x00" * (MAX_REQUEST_BYTES + 1))
    assert _error(_post(body=bomb, headers=proto)) == (429, "resource_exhausted")
    assert _error(_post(body=b"not zstd", headers=proto)) == (400, "invalid_argument")


def _error(reply: httpx.Response) -> tuple[int, str]:
    payload = json.loads(reply.content)
    assert set(payload) == {"code", "message"} and payload["message"]
    return reply.status_code, payload["code"]


def test_errors_follow_the_connect_protocol() -> None:
    proto = {**AUTH, "content-type": "application/proto"}
    assert _error(_post(headers={"content-type": "application/proto"})) == (401, "unauthenticated")
    assert _error(_post(body=b"\xff\xff", headers=proto)) == (400, "invalid_argument")
    assert _error(_post(body=b"{", headers={**AUTH, "content-type": "application/json"})) == (400, "invalid_argument")
    assert _error(_post(headers={**AUTH, "content-type": "text/plain"})) == (400, "invalid_argument")
    assert _error(_post(body=b"xx", headers={**proto, "content-encoding": "gzip"})) == (400, "invalid_argument")
    assert _error(_post(headers={**proto, "content-encoding": "br"})) == (501, "unimplemented")
    assert _error(_post("/iris.cluster.ControllerService/Nope", headers=proto)) == (501, "unimplemented")
    unsupported = _post("/proxy/system.log-server/finelog.stats.StatsService/DropTable", headers=proto)
    assert _error(unsupported) == (501, "unimplemented")
    assert "namespaces iris.task, iris.task_event, iris.profile and iris.task_status only" in unsupported.json()["message"]
    assert _error(_post(verb="GET", headers=proto)) == (405, "unimplemented")
    not_found = C.GetJobStateRequest(job_ids=["/boom"]).SerializeToString()
    assert _error(_post(body=not_found, headers=proto)) == (404, "not_found")


def test_health_needs_no_token_and_names_the_instance() -> None:
    reply = _post("/health", verb="GET")
    assert reply.status_code == 200 and reply.json() == {"status": "ok", "instance": "inst-1"}


def test_admin_verbs_need_the_token() -> None:
    assert _post("/fray/admin/status").status_code == 401
    reply = _post("/fray/admin/status", headers=AUTH)
    assert reply.status_code == 200 and reply.json() == {"jobs_running": 0}
    assert _post("/fray/admin/nothing", headers=AUTH).status_code == 501
