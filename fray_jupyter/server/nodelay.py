"""Kernel websockets with Nagle's algorithm off (TCP_NODELAY): an opt-in Jupyter Server setting.

Why: a widget round trip (the ``ResourcePicker``'s change → preview) is a few small websocket
messages from the server to the browser in a row (status busy, comm updates, status idle). Jupyter
Server leaves Nagle's algorithm on for kernel websockets, so the second small write waits for the
browser to acknowledge the first, and browsers delay that ACK (40 ms on Linux): most round trips
then take 40–70 ms instead of a few. ``bench/picker.py --tcp-nodelay`` measures both.

Why a setting and not automatic: the fray_jupyter server extension serves no websockets of its
own (the Fray Jobs sidebar polls REST), and these are Jupyter Server's kernel websockets, shared by
every kernel and extension. Switching them from an extension would silently replace the
``kernel_websocket_connection_class`` a user or a gateway setup chose, and Tornado keeps Nagle on
by default on purpose (fewer packets on slow links). So it is one line of server config:

    c.ServerApp.kernel_websocket_connection_class = \\
        "fray_jupyter.server.nodelay.NoDelayKernelWebsocketConnection"

or ``--ServerApp.kernel_websocket_connection_class=fray_jupyter.server.nodelay.NoDelayKernelWebsocketConnection``
on the ``jupyter lab`` command line. It is the stock connection in every other respect.
"""

from __future__ import annotations

from typing import Any

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection


class NoDelayKernelWebsocketConnection(ZMQChannelsWebsocketConnection):
    """Jupyter Server's kernel websocket connection with TCP_NODELAY set on the socket."""

    def connect(self) -> Any:  # what the stock class returns (jupyter_server's own types disagree)
        """Turn Nagle off (Tornado's ``set_nodelay``; the websocket is open by now), then connect."""
        self.websocket_handler.set_nodelay(True)
        return super().connect()
