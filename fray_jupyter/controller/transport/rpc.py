"""What both transports share: the caller check (``Authenticator``), request decoding (``decode``)
and calling the service core (``invoke_logged``). The RPCs served are ``methods.METHODS``; a refusal
is an ``rpc_error.RpcError``, which each transport answers in its own protocol.

Who may call (``Authenticator``): a caller with ``authorization: Bearer <token>`` holding the
controller's token; or a caller with no ``authorization`` header at all whose TCP connection
comes over loopback from a socket owned by the controller's own OS user (``peer``: a real Iris
trusts loopback; here other local users share 127.0.0.1, so only the user who could read the
token from the runtime file anyway is trusted). A wrong token is always refused. Both act as the
controller's own user (``owner``, its admin, as Iris lets an admin act on every job); a token from
``user_tokens`` is let in as that user only. Who an admitted call comes from is ``CALLER`` while it
is served (``api.inspector`` lets only a job's owner, or the admin, look inside its tasks).

A handler may return an awaitable (a verb that waits on a subprocess, such as ``ProfileTask``): the
transports await it on the controller's loop, so a 10-second profile never blocks other calls.
"""

from __future__ import annotations

import hmac
import inspect
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Final

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from fray_jupyter.controller.api.caller import CALLER, Caller
from fray_jupyter.controller.api.methods import Method
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.runtime import peer as peer_module

_LOG = logging.getLogger(__name__)


BEARER_PREFIX: Final[str] = "Bearer "
Peer = tuple[str, int]
"""A connection's remote end: (host, port)."""


class Authenticator:
    """Decides who may call (see the module docstring): the ``token`` holder, and — unless
    ``same_user`` is False — tokenless loopback callers whose socket belongs to this process's
    effective uid. ``owner_of(peer, local_port)`` finds a socket's owner (``peer.socket_owner``)."""

    def __init__(self, token: str, *, same_user: bool = True,
                 owner_of: Callable[[Peer, int], int | None] = peer_module.socket_owner,
                 owner: str = "", user_tokens: Mapping[str, str] | None = None) -> None:
        self.token = token
        self.same_user = same_user
        self._owner_of = owner_of
        self._uid = os.geteuid() if hasattr(os, "geteuid") else -1
        self.owner = owner or _own_user()
        self.user_tokens = dict(user_tokens or {})

    def check(self, header: str | None, peer: Peer | None = None, local_port: int | None = None) -> None:
        """Accept or raise UNAUTHENTICATED. ``header`` is the ``authorization`` value (None when
        absent or empty), ``peer`` the caller's (host, port) and ``local_port`` the port it called.
        The token is compared in constant time. The accepted caller is set in ``CALLER``; a refusal
        is logged (the caller's address, never what it sent)."""
        if not header:
            if self.same_user and peer is not None and local_port is not None and self._is_own(peer, local_port):
                CALLER.set(Caller(self.owner, admin=True))
                return
            _LOG.info("refused a caller at %s: no token", _address(peer))
            raise RpcError(Code.UNAUTHENTICATED, "missing 'authorization: Bearer <token>' header"
                           + (" (without one, only this controller's own OS user is let in, over loopback)"
                              if self.same_user else ""))
        presented = header[len(BEARER_PREFIX):].strip().encode() if header.startswith(BEARER_PREFIX) else None
        if presented is not None and hmac.compare_digest(presented, self.token.encode()):
            CALLER.set(Caller(self.owner, admin=True))
            return
        for user, token in self.user_tokens.items():
            if presented is not None and hmac.compare_digest(presented, token.encode()):
                CALLER.set(Caller(user, admin=False))
                return
        _LOG.info("refused a caller at %s: invalid bearer token", _address(peer))
        raise RpcError(Code.UNAUTHENTICATED, "invalid bearer token")

    def _is_own(self, peer: Peer, local_port: int) -> bool:
        return self._uid >= 0 and peer_module.is_loopback(peer[0]) and self._owner_of(peer, local_port) == self._uid


def _address(peer: Peer | None) -> str:
    return f"{peer[0]}:{peer[1]}" if peer is not None else "an unknown address"


def parse_user_token(value: str) -> tuple[str, str]:
    """One ``USER=TOKEN`` entry of ``$FRAY_CONTROLLER_USER_TOKENS`` → (user, token); a ``ValueError`` (naming the user part,
    never the token) when the user is empty or has '/' or spaces, or the token is empty."""
    user, _, token = value.partition("=")
    if not user.strip() or "/" in user or " " in user.strip() or not token.strip():
        raise ValueError(f"{user!r}=...: expected USER=TOKEN (a user name without '/' or spaces, a non-empty token)")
    return user.strip(), token.strip()


def _own_user() -> str:
    """This process's user as Iris names it (``$IRIS_USER``, else the login); "root" if neither works."""
    from fray_jupyter.iris.user import resolve_user

    try:
        return resolve_user()
    except ValueError:
        return "root"


Answer = Message | Awaitable[Message]
Invoke = Callable[[Method, Message], Answer]
"""Serve one decoded request: what a transport calls (a transport awaits an awaitable answer)."""


def decode(method: Method, codec: str, body: bytes) -> Message:
    """Parse a request body; anything unparseable (JSON that is not an object included) is
    INVALID_ARGUMENT (unknown JSON fields are ignored, so newer clients with extra fields still work)."""
    message = method.request()
    name = method.request.DESCRIPTOR.full_name
    try:
        if codec == "proto":
            message.ParseFromString(body)
        else:
            payload = json.loads(body or b"{}")
            if not isinstance(payload, dict):
                raise RpcError(Code.INVALID_ARGUMENT,
                               f"cannot parse {name}: expected a JSON object, got {type(payload).__name__}")
            json_format.ParseDict(payload, message, ignore_unknown_fields=True)
    except (DecodeError, json_format.ParseError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise RpcError(Code.INVALID_ARGUMENT, f"cannot parse {name}: {error}") from None
    return message


def invoke_logged(service: object) -> Invoke:
    """``invoke`` for a service object: call ``service.<handler>(request)``; an unexpected
    exception is logged and answered as INTERNAL, never propagated to the server."""

    def invoke(method: Method, request: Message) -> Answer:
        try:
            response: Answer = getattr(service, method.handler)(request)
        except RpcError:
            raise
        except Exception as error:  # noqa: BLE001 - a bug in one RPC must not take the server down
            raise _internal(method, error) from None
        if inspect.isawaitable(response):
            return _logged(method, response)
        return response

    return invoke


async def _logged(method: Method, answer: Awaitable[Message]) -> Message:
    try:
        return await answer
    except RpcError:
        raise
    except Exception as error:  # noqa: BLE001 - as in ``invoke_logged``
        raise _internal(method, error) from None


def _internal(method: Method, error: Exception) -> RpcError:
    _LOG.exception("%s failed", method.name, exc_info=error)
    return RpcError(Code.INTERNAL, f"{method.name} failed: {type(error).__name__}: {error}")
