"""The wire's names, spelled once for the client and the controller: services, paths, the log
server's endpoint and the status-text namespace (Iris 0.2.227 and finelog's names).

Rules:

* An RPC's path is ``/<service>/<method>`` (``method_path``), the same for Connect (the URL path)
  and gRPC (the method path). Iris's actors answer ``ACTOR_SERVICE`` the same way.
* Connect's error codes (``CONNECT_CODES``) and the HTTP status each is sent with
  (``CONNECT_HTTP_STATUS``), as the Connect protocol spec names them; a request says
  ``CONNECT_PROTOCOL_HEADER`` and its codec by content type (``PROTO_CONTENT_TYPE``, ``JSON_CONTENT_TYPE``).
* A controller relays calls to a registered endpoint under ``/proxy/<proxy name>/…`` (``proxied``),
  the proxy name being the endpoint's name without its first ``/`` and with ``/`` as ``.``
  (``proxy_name``; Iris's ``ProxyResolver``); a browser opens one at that path of the cluster's
  dashboard (``proxy_link``). A real Iris controller so proxies the finelog server it
  runs beside, the registry entry ``/system/log-server``: ``system.log-server``.
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
ACTOR_SERVICE: Final[str] = "iris.actor.ActorService"
LOG_SERVICE: Final[str] = "finelog.logging.LogService"
STATS_SERVICE: Final[str] = "finelog.stats.StatsService"

PROTO_CONTENT_TYPE: Final[str] = "application/proto"
JSON_CONTENT_TYPE: Final[str] = "application/json"
CONNECT_PROTOCOL_HEADER: Final[dict[str, str]] = {"connect-protocol-version": "1"}
CONNECT_CODES: Final[frozenset[str]] = frozenset({
    "canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists",
    "permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
    "unimplemented", "internal", "unavailable", "data_loss", "unauthenticated"})
"""Connect's error code names."""
CONNECT_HTTP_STATUS: Final[dict[str, int]] = {
    "invalid_argument": 400, "unauthenticated": 401, "permission_denied": 403, "not_found": 404,
    "unimplemented": 404, "resource_exhausted": 429, "internal": 500, "unavailable": 503, "unknown": 500}
"""The HTTP status a Connect error is sent with, by code (Connect protocol spec)."""


def proxy_name(endpoint: str) -> str:
    """The name a controller relays the endpoint ``endpoint`` under: without its leading ``/``,
    every ``/`` as ``.`` (``/system/log-server`` → ``system.log-server``)."""
    return endpoint.lstrip("/").replace("/", ".")


LOG_SERVER_ENDPOINT: Final[str] = "/system/log-server"
LOG_SERVER_PROXY: Final[str] = proxy_name(LOG_SERVER_ENDPOINT)
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


def proxy_url(controller_url: str, endpoint: str) -> str:
    """Where a controller at ``controller_url`` relays calls to the endpoint ``endpoint``:
    ``<url>/proxy/<proxy name>`` (Iris's ``ProxyResolver``; what ``iris actor call`` uses)."""
    return controller_url.rstrip("/") + proxied("", proxy_name(endpoint))


def proxy_link(dashboard: str | None, endpoint: str) -> str:
    """The endpoint ``endpoint`` opened in a browser through the cluster's proxy, as Iris's dashboard
    serves it: ``<dashboard>/proxy/<proxy name>/``; "" without a dashboard (no proxy to reach)."""
    return proxy_url(dashboard, endpoint) + "/" if dashboard else ""


FETCH_LOGS_PATH: Final[str] = proxied(method_path(LOG_SERVICE, "FetchLogs"))
"""Where Marin's client reads every log line: finelog's ``FetchLogs`` through the controller's proxy."""
STATS_QUERY_PATH: Final[str] = proxied(method_path(STATS_SERVICE, "Query"))
"""Where Iris's dashboard reads status text: finelog's ``StatsService.Query`` through the proxy."""
CHANGE_FEED_PATH: Final[str] = method_path("fray.jupyter.ChangeFeed", "WaitForChanges")
"""The embedded controller's long poll for job changes (``controller.transport.changes``)."""
CLUSTER_PROFILE_PATH: Final[str] = method_path("fray.jupyter.ClusterProfile", "GetClusterProfile")
"""The embedded controller's report of its own cluster profile as JSON (``cluster.profile.profile_to_json``),
so ``fit()`` applies the exact profile, not only what the wire tells."""
