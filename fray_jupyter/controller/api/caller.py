"""Who the call being served comes from: the transports' caller check (``rpc.Authenticator``) sets
it once it admits a call, and the service reads it where a job's owner matters (``inspector``
lets only a job's owner, or the admin, look inside its tasks)."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Caller:
    """Who an admitted call comes from: ``user``; ``admin`` when it is the controller's own user
    (its token, or its OS user over loopback), who may act on every job."""

    user: str
    admin: bool


CALLER: ContextVar[Caller | None] = ContextVar("fray_controller_caller", default=None)
"""The caller of the call being served (set by ``Authenticator.check``; None outside a call)."""
