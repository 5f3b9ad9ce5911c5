"""``client.budget.budget``: the preview's budget picture from a controller's answers, cached, and never
an error — with no controller, an unreachable one, or one that does not answer the budget RPCs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from fray_jupyter.client.budget import CACHE, NO_CONTROLLER, budget
from fray_jupyter.client.client import FrayClient
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.planning import Plan, plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from tests.controller_harness import launch_request, start_controller, stop_quietly
from tests.loopback import loopback_server
from tests.waiting import until

J = job_pb2


def _plan(user: str = "alice") -> Plan:
    return plan(JobRequest(name="train", entrypoint=Entrypoint.from_binary("true", []),
                           resources=ResourceConfig.with_tpu("v5p-8")), user=user)


class _OlderController(BaseHTTPRequestHandler):
    """What a controller from before the budget RPCs answers them: Connect's ``unimplemented``."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps({"code": "unimplemented", "message": f"no such method: {self.path}"}).encode()
        self.send_response(501)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def older() -> Iterator[str]:
    with loopback_server(_OlderController) as url:
        yield url


def test_without_a_controller_only_the_jobs_own_spend_is_shown() -> None:
    picture = budget(_plan(), None)
    assert picture.job_spend == 4_744 and not picture.known and picture.budget_note == NO_CONTROLLER


def test_a_controller_without_the_budget_rpcs_leaves_the_budget_unknown(older: str) -> None:
    with FrayClient(older, retry_for=0) as client:
        picture = budget(_plan(), client, max_age=0)
    assert not picture.known and picture.queue is None
    assert picture.lines[0].endswith("alice's budget is unknown (this controller does not answer GetUserBudget)")
    assert picture.queue_note == "this controller does not answer GetSchedulerState"


def test_an_unreachable_controller_says_so_in_one_line() -> None:
    with FrayClient("http://127.0.0.1:9", retry_for=0, timeout=2) as client:
        picture = budget(_plan(), client, max_age=0)
    assert picture.budget_note.startswith("GetUserBudget failed: cannot reach the Fray controller at http://127.0.0.1:9")
    assert "\n" not in picture.lines[0]


def test_answers_are_cached_per_controller_and_user(tmp_path: Path) -> None:
    controller = start_controller(tmp_path / "state", "--slots", "2")
    CACHE.clear()
    try:
        with FrayClient(controller.info.url, controller.info.token) as client:
            assert budget(_plan(), client).spent == 0
            job_id = client.submit(launch_request("busy", "sleep 60", user="alice"))
            until(lambda: client.user_budget("alice").budget_spent != 0, "alice's task placed", feed=client)
            assert budget(_plan(), client).spent == 0  # within CACHE_SECONDS: the answer read before
            assert budget(_plan("bob"), client).spent == 0 and budget(_plan(), client, max_age=0).spent == 5
            fresh = budget(_plan(), client, max_age=0)
            assert fresh.effective_band == J.PRIORITY_BAND_INTERACTIVE and fresh.queue is not None
            with FrayClient(controller.info.grpc_url, controller.info.token) as native:  # both transports serve them
                assert budget(_plan(), native, max_age=0) == fresh
                assert [u.user for u in native.users()] == ["alice"]
            client.terminate(job_id)
    finally:
        stop_quietly(controller)
