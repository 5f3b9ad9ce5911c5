"""The embedded Iris-compatible controller: ``iris.cluster.ControllerService`` served over
Connect (HTTP/1.1) and native gRPC, running each job's tasks as local processes.

Packages, top to bottom (each imports only those below it; ``tests/test_layers.py`` holds them to it):

* ``startup`` (options, start-up, signals, the runtime file, shutdown), ``lifecycle`` (the idle
  rule) and ``manage`` (``status|stop|gc``): the controller as a process.
* ``transport``: Connect (``connect_app``) and gRPC (``grpc_server``), what both share (``rpc``: who
  may call, decoding) and the change feed (``changes``). Only the gRPC transport has a thread.
* ``api``: one method per RPC (``service``), the method table (``methods``), the caller
  (``caller``) and the rules each RPC answers by (``validation``, ``job_query``, ``messages``, ...).
* ``engine``: the queue and the one place transitions are carried out (``engine``), each attempt's
  lifecycle, recovery at start, users' budgets, the endpoint registry and the cluster profile.
* ``stats``: finelog's stats namespaces, their SQL and the sampler.
* ``runtime``: what runs on this machine (an attempt's processes, setup, ports, profiles); it
  never touches the store.
* ``store``: SQLite, every SQL statement of the controller.
* ``kernel``: the pure rules (rows, transitions, state rules, trees, task events, exits, the
  scheduler): no I/O, no database, no processes.

``rpc_error`` (status codes, ``RpcError``) is shared by every package; ``iris_local`` (a genuine Iris
local cluster, the twin) stands apart. The API and the engine run on one event loop.

``main`` is loaded on first use, so importing one module (``controller.api.validation``,
``controller.kernel.transitions``) does not load the server, uvicorn or grpc.aio.
"""

from __future__ import annotations

from fray_jupyter.lazy import lazy_exports

_EXPORTS: dict[str, str] = {"main": "fray_jupyter.controller.startup"}
__all__ = sorted(_EXPORTS)  # noqa: PLE0605 - the names of _EXPORTS, their one list
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
