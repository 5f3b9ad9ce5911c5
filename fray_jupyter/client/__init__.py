"""Talk to an Iris controller (the embedded one or a real Iris cluster): ``connect()`` finds or
starts one and returns a ``FrayClient`` with the Iris verbs; failures are ``FrayError`` subclasses.

Each name is loaded on first use (as in ``fray_jupyter``), so importing a light submodule —
``client.errors``, or ``client.discovery`` for its constants — does not load httpx, grpc and the
planning models; ``%load_ext fray_jupyter`` relies on that.
"""

from __future__ import annotations

from fray_jupyter.lazy import lazy_exports

# public name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["FrayClient", "JobPage"], "fray_jupyter.client.client"),
    **dict.fromkeys(["TOKEN_ENV", "URL_ENV", "connect"], "fray_jupyter.client.discovery"),
    **dict.fromkeys(["ClusterEntry", "NamedCluster", "list_clusters"], "fray_jupyter.client.clusters"),
    **dict.fromkeys(
        ["AuthenticationFailed", "ClusterUnavailable", "ControllerStartFailed", "ControllerUnreachable",
         "FrayError", "InvalidRequest", "JobAlreadyExists", "JobNotFound", "LoginRequired", "RpcFailed"],
        "fray_jupyter.client.errors"),
    **dict.fromkeys(["LogPage", "log_line"], "fray_jupyter.client.logs"),
    **dict.fromkeys(["JobHandle"], "fray_jupyter.client.handle"),
}
__all__ = sorted(_EXPORTS)  # noqa: PLE0605 - the names of _EXPORTS, their one list
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
