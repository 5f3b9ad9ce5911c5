"""The submitting user, as Iris resolves it outside a job (no model or protobuf imports here, so the
magics' settings can use it without loading the planning code; ``iris.request`` re-exports it)."""

from __future__ import annotations

import getpass
import os
from typing import Final

USER_ENV: Final[str] = "IRIS_USER"


def resolve_user(explicit: str | None = None) -> str:
    """The submitting user, as Iris resolves it outside a job: the argument, ``$IRIS_USER``, the OS
    user, else "root". It must be one id component: non-empty, no '/' or whitespace."""
    user = explicit if explicit is not None else os.environ.get(USER_ENV)
    if user is None:
        try:
            user = getpass.getuser() or "root"
        except (OSError, KeyError, ImportError):
            user = "root"
    user = user.strip()
    if not user or "/" in user or any(c.isspace() for c in user):
        raise ValueError(f"user {user!r} must be a non-empty name without '/' or spaces")
    return user
