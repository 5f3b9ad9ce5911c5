"""The embedded Iris-compatible controller: ``iris.cluster.ControllerService`` served over
Connect (HTTP/1.1) and native gRPC, running each job's tasks as local processes.

Modules, top to bottom: ``server`` (start-up, signals, runtime file) → ``connect_app`` /
``grpc_server`` (transports) → ``service`` (one method per RPC; ``validation``, ``views``) →
``engine`` (queue, slots, attempts, recovery; ``scheduler``, ``states``, ``runner``) →
``store`` (SQLite). ``rpc`` holds what the transports share (codes, errors, method table).
The service core and the engine run on one event loop; only the gRPC transport has a thread.
"""

from fray_jupyter.controller.server import main

__all__ = ["main"]
