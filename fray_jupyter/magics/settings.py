"""The magics' settings: traitlets on ``FrayMagics`` (``c.FrayMagics.<key>`` in
``ipython_config.py``, or ``%fray config KEY VALUE`` for the session), each falling back to an
environment variable and then to a default.

==================  ==========================  =================================================
key                 fallback                    then
==================  ==========================  =================================================
``cluster``         (a URL setting or           ``$FRAY_CLUSTER``, then ``$MARIN_CLUSTER``; none:
                    ``$FRAY_CONTROLLER_URL``    the URL or the embedded controller
                    wins over these)
``controller_url``  ``$FRAY_CONTROLLER_URL``    the embedded controller's runtime file, else one
                                                is started on first use
``user``            ``$IRIS_USER``              your login name
``token_env``       (default)                   ``FRAY_CONTROLLER_TOKEN``: the variable holding
                                                the bearer token; without it, the embedded
                                                controller's token from its runtime file
==================  ==========================  =================================================

The token itself is never shown, only where it comes from.
"""

from __future__ import annotations

import os
import re
from typing import Final
from urllib.parse import urlsplit

from traitlets import HasTraits, TraitError

from fray_jupyter.client.clusters import CLUSTER_ENV, CLUSTER_NAME, MARIN_CLUSTER_ENV, chosen_cluster
from fray_jupyter.client.discovery import TOKEN_ENV, URL_ENV
from fray_jupyter.iris.user import USER_ENV, resolve_user
from fray_jupyter.runtime_file import read_runtime_file, runtime_file_path

FALLBACK_ENV: Final[dict[str, str]] = {"controller_url": URL_ENV, "user": USER_ENV}
"""Setting -> the environment variable consulted when the setting is empty."""
ENV_NAME: Final[re.Pattern[str]] = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def setting_keys(owner: HasTraits) -> list[str]:
    """The configurable settings of ``owner``, in definition order."""
    return list(owner.traits(config=True))


def effective(owner: HasTraits, key: str) -> str | None:
    """The setting's value, else its environment fallback, else None."""
    value = getattr(owner, key)
    if value:
        return str(value)
    env = FALLBACK_ENV.get(key)
    return (os.environ.get(env) or None) if env else None


def cluster(owner: HasTraits) -> str | None:
    """The named cluster the settings choose, or None (``client.clusters.chosen_cluster`` on the
    ``cluster`` and ``controller_url`` settings: a setting beats the environment)."""
    name = str(owner.cluster) or None  # type: ignore[attr-defined]
    return chosen_cluster(name, str(owner.controller_url) or os.environ.get(URL_ENV))  # type: ignore[attr-defined]


def token(owner: HasTraits) -> str | None:
    """The bearer token from the variable ``token_env`` names, or None (the runtime file's then)."""
    name = str(owner.token_env)  # type: ignore[attr-defined]
    return os.environ.get(name) or None if name else None


def _rows(owner: HasTraits) -> list[tuple[str, str, str]]:
    rows: list[tuple[str, str, str]] = []
    chosen = cluster(owner)
    if chosen is not None:
        source = ("config" if str(owner.cluster) else  # type: ignore[attr-defined]
                  f"${CLUSTER_ENV}" if os.environ.get(CLUSTER_ENV) else f"${MARIN_CLUSTER_ENV}")
        rows.append(("cluster", chosen, f"{source}; resolved by Iris's own code"))
    else:
        rows.append(("cluster", "", "none: the controller below"))
    url, env = str(owner.controller_url), os.environ.get(URL_ENV)  # type: ignore[attr-defined]
    if chosen is not None:
        rows.append(("controller_url", url, "not used: a cluster is chosen"))
    elif url:
        rows.append(("controller_url", url, "config"))
    elif env:
        rows.append(("controller_url", env, f"${URL_ENV}"))
    elif (info := read_runtime_file()) is not None:
        rows.append(("controller_url", info.url, f"embedded controller (pid {info.pid}, {runtime_file_path()})"))
    else:
        rows.append(("controller_url", "", "embedded controller, started on first use"))
    user = str(owner.user)  # type: ignore[attr-defined]
    if user:
        rows.append(("user", user, "config"))
    else:
        try:
            resolved = resolve_user()
        except ValueError as error:
            resolved = f"(invalid: {error})"
        rows.append(("user", resolved, f"${USER_ENV}" if os.environ.get(USER_ENV) else "your login"))
    name = str(owner.token_env)  # type: ignore[attr-defined]
    state = "set" if os.environ.get(name) else "not set: the embedded controller's token from its runtime file"
    rows.append(("token_env", name, "default" if name == TOKEN_ENV else "config"))
    rows.append(("(token)", f"${name}" if name else "", state))
    return rows


def render(owner: HasTraits, key: str | None = None) -> str:
    """The settings as aligned ``key  value  (source)`` lines; only ``key``'s when given."""
    rows = [row for row in _rows(owner) if key is None or row[0] == key]
    width = max(len(row[0]) for row in rows)
    value_width = max(len(row[1]) for row in rows)
    return "\n".join(f"{k:<{width}}  {v:<{value_width}}  ({source})" for k, v, source in rows)


def check_controller_url(what: str, url: str) -> None:
    """``ValueError`` naming ``what`` unless ``url`` starts with a scheme some transport speaks and
    names a host (and a port, if any, that is a number)."""
    from fray_jupyter.client.transport import TRANSPORTS

    try:
        parts = urlsplit(url)
        host, _ = parts.hostname, parts.port
    except ValueError as error:  # an unclosed IPv6 bracket, a port that is not a number
        raise ValueError(f"{what} {url!r} is not a URL: {error}") from None
    if "://" not in url or parts.scheme.lower() not in TRANSPORTS:
        known = ", ".join(f"{name}://" for name in TRANSPORTS)
        raise ValueError(f"{what} {url!r} must start with one of {known}")
    if not host:
        raise ValueError(f"{what} {url!r} names no host; write it like http://127.0.0.1:10000")


def validate(key: str, value: str) -> str:
    """``value`` for setting ``key``, checked; ``ValueError`` saying what is wrong."""
    if not value:
        return value
    if key == "cluster" and not CLUSTER_NAME.fullmatch(value):
        raise ValueError(f"cluster {value!r} must be a cluster name like marin or my-cluster "
                         "(letters, digits, '.', '_', '-'); `iris cluster list` shows them")
    if key == "controller_url":
        check_controller_url("controller_url", value)
    elif key == "user":
        resolve_user(value)
    elif key == "token_env" and not ENV_NAME.fullmatch(value):
        raise ValueError(f"token_env {value!r} must be an environment variable name")
    return value


def set_setting(owner: HasTraits, key: str, value: str) -> None:
    """Set ``key`` for this session (``""`` resets it to its default); ``ValueError`` if invalid."""
    keys = setting_keys(owner)
    if key not in keys:
        raise ValueError(f"unknown setting {key!r}; the settings are {', '.join(keys)}")
    try:
        setattr(owner, key, value if value else owner.trait_defaults(key))
    except TraitError as error:
        raise ValueError(str(error).split("\n")[0]) from None
