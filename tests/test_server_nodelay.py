"""``fray_jupyter.server.nodelay``: with the documented server setting, the socket of a kernel
websocket has TCP_NODELAY set; with the stock connection class it does not (why the setting
exists; should Jupyter Server ever turn it on itself, the stock case fails and the setting can go).
A real Jupyter server (pytest-jupyter, in this process) and a real Python kernel.

pytest-jupyter's fixtures are imported into this module only, as in ``test_server_handlers``.
"""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest
from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection
from pytest_jupyter.jupyter_server import *

from fray_jupyter.server.nodelay import NoDelayKernelWebsocketConnection

SETTING = "fray_jupyter.server.nodelay.NoDelayKernelWebsocketConnection"
STOCK: dict[str, Any] = {"ServerApp": {"jpserver_extensions": {"jupyter_server_terminals": False}}}
NODELAY: dict[str, Any] = {"ServerApp": {**STOCK["ServerApp"], "kernel_websocket_connection_class": SETTING}}


@pytest.fixture
def jp_server_config(request: pytest.FixtureRequest) -> dict[str, Any]:
    return request.param  # type: ignore[no-any-return]


@pytest.mark.parametrize(("jp_server_config", "nodelay"), [(NODELAY, 1), (STOCK, 0)],
                         indirect=["jp_server_config"], ids=["setting", "stock"])
def test_kernel_websocket_socket_has_nodelay_only_with_the_setting(
        jp_fetch: Any, jp_ws_fetch: Any, jp_asyncio_loop: Any, jp_serverapp: Any, nodelay: int) -> None:
    expected_class = NoDelayKernelWebsocketConnection if nodelay else ZMQChannelsWebsocketConnection
    assert jp_serverapp.kernel_websocket_connection_class is expected_class

    async def check() -> int:
        reply = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": "python3"}))
        kernel_id = json.loads(reply.body)["id"]
        ws = await jp_ws_fetch("api", "kernels", kernel_id, "channels", params={"session_id": "nodelay-test"})
        try:
            await asyncio.wait_for(ws.read_message(), timeout=60)  # the server has connected the kernel
            handler = ZMQChannelsWebsocketConnection._open_sessions[f"{kernel_id}:nodelay-test"]
            sock = handler.ws_connection.stream.socket
            return int(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0)
        finally:
            ws.close()
            await jp_fetch("api", "kernels", kernel_id, method="DELETE")

    assert jp_asyncio_loop.run_until_complete(check()) == nodelay
