"""Pushed job changes: the embedded controller's change feed, the server's one watcher shared by
every tab, and the authenticated ``/fray/events`` stream, against a real controller process and a
real Jupyter server; the polling fallback against a genuine Iris local cluster."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import pytest
from pytest_jupyter.jupyter_server import *

from fray_jupyter.client import FrayClient
from fray_jupyter.client.discovery import URL_ENV
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.runtime_file import runtime_file_path, write_runtime_file
from fray_jupyter.server.contract import PushEvent
from fray_jupyter.server.link import ControllerLink
from fray_jupyter.server.watch import ChangeHub
from tests.controller_harness import ControllerProcess, launch_request
from tests.fray_rest import jp_server_config, no_controller_env  # noqa: F401 - fixtures
from tests.real_iris import real_iris_controller
from tests.waiting import arrives, until

CONTROLLER_ARGS = ("--slots", "4")  # the module's controller (conftest)


def _launch(controller: ControllerProcess, command: str = "true") -> str:
    wire = controller.wire()
    try:
        return wire.launch(launch_request(f"w-{uuid.uuid4().hex[:8]}", command, replicas=1))
    finally:
        wire.close()


# -- the change feed ------------------------------------------------------------------------------
def test_the_feed_answers_at_once_on_a_change_and_waits_otherwise(controller: ControllerProcess) -> None:
    with FrayClient(controller.info.url, controller.info.token) as client:
        first = client.changes(0, "", wait=0)
        assert first.reset and first.epoch  # a new watcher re-reads everything once
        started = time.monotonic()
        idle = client.changes(first.revision, first.epoch, wait=0.3)
        assert idle.job_ids == () and not idle.reset and time.monotonic() - started >= 0.25
        job_id = _launch(controller)
        changed = client.changes(first.revision, first.epoch, wait=10)
        assert job_id in changed.job_ids and changed.revision > first.revision
        assert client.changes(changed.revision, "another-epoch", wait=10).reset  # controller restarted
        assert client.changes(changed.revision + 10**6, first.epoch, wait=10).reset
    grpc_client = FrayClient(controller.info.grpc_url, controller.info.token)  # connecting is not the call
    with grpc_client, pytest.raises(Exception, match="unimplemented"):
        grpc_client.changes(0, "", wait=0)


# -- the /fray/events stream ------------------------------------------------------------------------
async def _open_stream(port: int, base_url: str, headers: dict[str, str]) -> tuple[asyncio.StreamReader,
                                                                                       asyncio.StreamWriter, int]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = "".join(f"{key}: {value}\r\n" for key, value in headers.items())
    writer.write(f"GET {base_url}fray/events HTTP/1.1\r\nHost: 127.0.0.1\r\n{head}\r\n".encode())
    await writer.drain()

    async def head_read() -> int:
        status = int((await reader.readline()).split()[1])
        while (await reader.readline()) not in (b"\r\n", b""):
            pass
        return status

    return reader, writer, await arrives(head_read(), "the head of the /fray/events answer")


async def _next_event(reader: asyncio.StreamReader, kind: str) -> dict[str, Any]:
    """The next event of ``kind`` (chunked transfer framing and comments skipped)."""
    async def read() -> dict[str, Any]:
        while line := await reader.readline():
            text = line.decode().strip()
            if text.startswith("data: "):
                event: dict[str, Any] = json.loads(text.removeprefix("data: "))
                if event["kind"] == kind:
                    return event
        raise AssertionError(f"/fray/events ended before a {kind!r} event")

    return await arrives(read(), f"a {kind!r} event on /fray/events")


def test_one_watcher_pushes_every_tab_a_change_as_it_happens(
        controller: ControllerProcess, http_server_client: Any, jp_serverapp: Any, jp_http_port: int, jp_base_url: str,
        jp_auth_header: dict[str, str], jp_asyncio_loop: Any, jp_environ: Any) -> None:
    write_runtime_file(controller.info, runtime_file_path())
    hub: ChangeHub = jp_serverapp.web_app.settings["fray_hub"]

    async def scenario() -> None:
        tabs = [await _open_stream(jp_http_port, jp_base_url, jp_auth_header) for _ in range(3)]
        assert [status for *_, status in tabs] == [200, 200, 200]
        for reader, _, _ in tabs:
            await _next_event(reader, "hello")
        await asyncio.to_thread(until, lambda: hub.source == "feed", "the hub watching the controller's change feed")
        assert hub.watching
        job_id = await asyncio.to_thread(_launch, controller, "sleep 0.2")
        events = [await _next_event(reader, "changed") for reader, _, _ in tabs]
        assert all(job_id in event["jobIds"] and event["source"] == "feed" for event in events)
        for _, writer, _ in tabs:
            writer.close()
        # how soon is bench/live.py's: here only that the watcher stops once no tab is open
        await asyncio.to_thread(until, lambda: not hub.watching, "the watcher stops with no tab open")

    jp_asyncio_loop.run_until_complete(scenario())


def test_the_stream_needs_jupyters_authentication(http_server_client: Any, jp_serverapp: Any, jp_http_port: int,
                                                  jp_base_url: str,
                                                  jp_asyncio_loop: Any) -> None:
    async def anonymous() -> int:
        _, writer, status = await _open_stream(jp_http_port, jp_base_url, {})
        writer.close()
        return status

    assert jp_asyncio_loop.run_until_complete(anonymous()) == 403
    assert not jp_serverapp.web_app.settings["fray_hub"].watching


# -- a controller without the feed: polled while watched ------------------------------------------------
async def _naming(queue: asyncio.Queue[PushEvent], job_id: str) -> PushEvent:
    """The next event of ``queue`` that names ``job_id``."""
    while job_id not in (event := await queue.get()).get("jobIds", ()):
        pass
    return event


def test_a_real_iris_is_polled_only_while_someone_watches(tmp_path_factory: pytest.TempPathFactory,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with real_iris_controller(tmp_path_factory.mktemp("real-iris")) as url, FrayClient(url) as client:
        monkeypatch.setenv(URL_ENV, url)

        async def scenario() -> None:
            hub = ChangeHub(ControllerLink(start=False))
            queue = hub.subscribe()
            assert (await queue.get())["source"] == ""
            assert (await arrives(queue.get(), "the hub's hello once it polls")) == {
                "kind": "hello", "source": "poll", "jobIds": [], "message": ""}
            job = JobRequest(name=f"p-{uuid.uuid4().hex[:6]}", entrypoint=Entrypoint.from_binary("true"),
                             resources=ResourceConfig(cpu=1, ram="256m", disk="1g"))
            job_id = await asyncio.to_thread(client.submit, plan(job, user="fray-test"))
            event = await arrives(_naming(queue, job_id), f"an event naming {job_id}")
            assert event["source"] == "poll"
            coordinator = JobRequest(name=f"{job.name}-coord", entrypoint=Entrypoint.from_binary("sleep", ["30"]),
                                     resources=job.resources)
            parent = await asyncio.to_thread(client.submit, plan(coordinator, user="fray-test"))
            step = plan(job, user="fray-test").request
            step.name = f"{parent}/step"
            child = await asyncio.to_thread(client.submit, step)
            event = await arrives(_naming(queue, child), f"an event naming {child}")
            assert parent in event["jobIds"]  # a new child is pushed with its parent
            await asyncio.to_thread(client.terminate, parent)
            hub.unsubscribe(queue)
            assert not hub.watching

        asyncio.run(scenario())  # how soon a change arrives is bench/live.py's ("real Iris" p95)
