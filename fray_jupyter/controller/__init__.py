"""The embedded Iris-compatible controller: ``iris.cluster.ControllerService`` served over
Connect (HTTP/1.1) and native gRPC, running each job's tasks as local processes.

Modules, top to bottom: ``server`` (start-up, signals, runtime file) → ``connect_app`` /
``grpc_server`` (transports) → ``service`` (one method per RPC; ``validation``, ``views``,
``checkpoint``) → ``engine`` (queue, slots, attempts, recovery; ``scheduler``, ``states``, ``runner``
with ``exits``, ``ports``; the endpoint registry ``endpoints``, whose leases the engine's sleep also
waits for) →
``store`` (SQLite). ``rpc`` holds what the transports share (the caller check, decoding),
``methods`` the method table, ``rpc_error`` the codes and errors.
The service core and the engine run on one event loop; only the gRPC transport has a thread.

``main`` is loaded on first use, so importing one module (``controller.validation``,
``controller.states``) does not load the server, uvicorn or grpc.aio.
"""

from __future__ import annotations

from fray_jupyter.lazy import lazy_exports

_EXPORTS: dict[str, str] = {"main": "fray_jupyter.controller.startup"}
__all__ = sorted(_EXPORTS)  # noqa: PLE0605 - the names of _EXPORTS, their one list
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
