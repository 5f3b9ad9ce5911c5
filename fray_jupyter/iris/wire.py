"""The wire's names, spelled once for the client and the controller: services, paths, the log
server's endpoint and the status-text namespace (Iris 0.2.227 and finelog's names).

Rules:

* An RPC's path is ``/<service>/<method>`` (``method_path``), the same for Connect (the URL path)
  and gRPC (the method path).
* A real Iris controller proxies the finelog server it runs beside under
  ``/proxy/<endpoint name>/…`` (``proxied``), the endpoint name being the registry entry
  ``/system/log-server`` without its first ``/`` and with ``/`` as ``.``: ``system.log-server``.
  Tasks find it by looking up ``LOG_SERVER_ENDPOINT``; clients read logs (``FETCH_LOGS_PATH``) and
  status text (``STATS_QUERY_PATH``) through it; tasks post telemetry batches there too
  (``TELEMETRY_PATH``, JSON, not an RPC).
* Task status text lives in the finelog namespace ``STATUS_TEXT_NAMESPACE`` (a table of that name).
* fray-jupyter's own two methods (not Iris's) live in the ``fray.jupyter`` package: the change feed's
  long poll and the controller's cluster profile.
"""

from __future__ import annotations

from typing import Final

CONTROLLER_SERVICE: Final[str] = "iris.cluster.ControllerService"
ENDPOINT_SERVICE: Final[str] = "iris.cluster.EndpointService"
LOG_SERVICE: Final[str] = "finelog.logging.LogService"
STATS_SERVICE: Final[str] = "finelog.stats.StatsService"

LOG_SERVER_ENDPOINT: Final[str] = "/system/log-server"
LOG_SERVER_PROXY: Final[str] = LOG_SERVER_ENDPOINT.removeprefix("/").replace("/", ".")
"""The name a real Iris controller proxies finelog under (``/proxy/<name>/...``)."""
LOG_SERVER_PROXY_PATH: Final[str] = f"/proxy/{LOG_SERVER_PROXY}"
STATUS_TEXT_NAMESPACE: Final[str] = "iris.task_status"
TELEMETRY_PATH: Final[str] = "/v1/telemetry"
"""Where the log server takes rigging's telemetry batches (Iris's ``TELEMETRY_ENDPOINT_PATH``;
tasks post them under the log server's proxy prefix)."""


def method_path(service: str, method: str) -> str:
    """``/<service>/<method>``: an RPC's URL path (Connect) and method path (gRPC)."""
    return f"/{service}/{method}"


def proxied(path: str, proxy: str = LOG_SERVER_PROXY) -> str:
    """``path`` as a real Iris controller serves it under its ``/proxy/<proxy>`` prefix."""
    return f"/proxy/{proxy}{path}"


FETCH_LOGS_PATH: Final[str] = proxied(method_path(LOG_SERVICE, "FetchLogs"))
"""Where Marin's client reads every log line: finelog's ``FetchLogs`` through the controller's proxy."""
STATS_QUERY_PATH: Final[str] = proxied(method_path(STATS_SERVICE, "Query"))
"""Where Iris's dashboard reads status text: finelog's ``StatsService.Query`` through the proxy."""
CHANGE_FEED_PATH: Final[str] = method_path("fray.jupyter.ChangeFeed", "WaitForChanges")
"""The embedded controller's long poll for job changes (``controller.changes``)."""
CLUSTER_PROFILE_PATH: Final[str] = method_path("fray.jupyter.ClusterProfile", "GetClusterProfile")
"""The embedded controller's report of its own cluster profile as JSON (``cluster.profile.profile_to_json``),
so ``fit()`` applies the exact profile, not only what the wire tells."""
