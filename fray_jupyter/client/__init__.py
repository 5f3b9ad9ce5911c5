"""Talk to an Iris controller (the embedded one or a real Iris cluster): ``connect()`` finds or
starts one and returns a ``FrayClient`` with the Iris verbs; failures are ``FrayError`` subclasses."""

from fray_jupyter.client.client import TERMINAL_STATES, FrayClient, JobPage
from fray_jupyter.client.discovery import TOKEN_ENV, URL_ENV, connect
from fray_jupyter.client.errors import (
    AuthenticationFailed,
    ControllerStartFailed,
    ControllerUnreachable,
    FrayError,
    InvalidRequest,
    JobAlreadyExists,
    JobNotFound,
    RpcFailed,
)
from fray_jupyter.client.logs import LogPage, split_key

__all__ = [
    "TERMINAL_STATES", "TOKEN_ENV", "URL_ENV", "AuthenticationFailed", "ControllerStartFailed",
    "ControllerUnreachable", "FrayClient", "FrayError", "InvalidRequest", "JobAlreadyExists", "JobNotFound",
    "JobPage", "LogPage", "RpcFailed", "connect", "split_key",
]
