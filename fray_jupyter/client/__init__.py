"""Talk to an Iris controller (the embedded one or a real Iris cluster): ``connect()`` finds or
starts one and returns a ``FrayClient`` with the Iris verbs; failures are ``FrayError`` subclasses.

Each name is loaded on first use (as in ``fray_jupyter``), so importing a light submodule —
``client.errors``, or ``client.discovery`` for its constants — does not load httpx, grpc and the
planning models; ``%load_ext fray_jupyter`` relies on that.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the type checker sees; the names load on first use (below)
    from fray_jupyter.client.client import TERMINAL_STATES as TERMINAL_STATES
    from fray_jupyter.client.client import FrayClient as FrayClient
    from fray_jupyter.client.client import JobPage as JobPage
    from fray_jupyter.client.discovery import TOKEN_ENV as TOKEN_ENV
    from fray_jupyter.client.discovery import URL_ENV as URL_ENV
    from fray_jupyter.client.discovery import connect as connect
    from fray_jupyter.client.errors import AuthenticationFailed as AuthenticationFailed
    from fray_jupyter.client.errors import ControllerStartFailed as ControllerStartFailed
    from fray_jupyter.client.errors import ControllerUnreachable as ControllerUnreachable
    from fray_jupyter.client.errors import FrayError as FrayError
    from fray_jupyter.client.errors import InvalidRequest as InvalidRequest
    from fray_jupyter.client.errors import JobAlreadyExists as JobAlreadyExists
    from fray_jupyter.client.errors import JobNotFound as JobNotFound
    from fray_jupyter.client.errors import RpcFailed as RpcFailed
    from fray_jupyter.client.logs import LogPage as LogPage
    from fray_jupyter.client.logs import split_key as split_key

# public name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["TERMINAL_STATES", "FrayClient", "JobPage"], "fray_jupyter.client.client"),
    **dict.fromkeys(["TOKEN_ENV", "URL_ENV", "connect"], "fray_jupyter.client.discovery"),
    **dict.fromkeys(
        ["AuthenticationFailed", "ControllerStartFailed", "ControllerUnreachable", "FrayError", "InvalidRequest",
         "JobAlreadyExists", "JobNotFound", "RpcFailed"], "fray_jupyter.client.errors"),
    **dict.fromkeys(["LogPage", "split_key"], "fray_jupyter.client.logs"),
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fray_jupyter.client' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
