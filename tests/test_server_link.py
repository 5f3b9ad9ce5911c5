"""server.link: a controller that keeps answering ``unavailable`` is reported unreachable within the
link's short retry budget, in ``client.retry``'s words for how long it was retried; one that answers
is reachable. Against a real HTTP server through the real Connect transport."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from fray_jupyter.client.discovery import URL_ENV
from fray_jupyter.server.link import ControllerLink


class Controller(BaseHTTPRequestHandler):
    """Answers ``unavailable`` (HTTP 503, Connect JSON) while ``down``, else an empty ``ListJobs`` answer."""

    down: ClassVar[bool] = True
    calls: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        Controller.calls.append(self.path)
        body = json.dumps({"code": "unavailable", "message": "restarting"}).encode() if self.down else b""
        self.send_response(503 if self.down else 200)
        self.send_header("content-type", "application/json" if self.down else "application/proto")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def link(monkeypatch: pytest.MonkeyPatch) -> Iterator[ControllerLink]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Controller)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv(URL_ENV, f"http://127.0.0.1:{server.server_address[1]}")
    for name in ("FRAY_CLUSTER", "MARIN_CLUSTER"):
        monkeypatch.delenv(name, raising=False)
    Controller.down, Controller.calls = True, []
    opened = ControllerLink(start=False, timeout=5)
    try:
        yield opened
    finally:
        opened.close()
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_controller_that_stays_unavailable_is_reported_with_how_long_it_was_retried(link: ControllerLink) -> None:
    status = link.status()
    assert not status.reachable and status.error is not None
    assert status.error.startswith(f"cannot reach the Fray controller at {status.url}: restarting (gave up after ")
    took = re.fullmatch(r".*\(gave up after (\d+) attempts, (\d+ ms|\d+\.\d s)\)", status.error)
    assert took is not None, status.error
    assert int(took[1]) == len(Controller.calls) >= 2  # resent, within the link's budget of RETRY_FOR s
    Controller.down = False
    assert link.status().reachable
