"""Named Marin clusters (``connect(cluster="marin")``, ``%%fray --cluster NAME``), reached through
Iris's own connection code.

Rules:

* A name is resolved by ``iris.cli.connect.connect_controller(cluster_name=NAME)``, the code behind
  ``iris --cluster NAME``: the manifest is looked up in Iris's config dirs
  (``~/.config/marin/clusters``, an in-tree ``lib/iris/config``, the manifests bundled with
  marin-iris); the credentials come from rigging's per-cluster store
  (``~/.config/marin/credentials/<cluster>.json``, written by ``iris --cluster NAME login``); Iris
  opens the SSH tunnel, port-forward or local cluster the manifest needs. fray-jupyter implements
  none of IAP, OAuth or tunnels: it holds Iris's ``ControllerEndpoint`` open and closes it.
* It needs Marin's Iris (``pip install 'fray-jupyter[marin]'``, Python >= 3.12); without it, naming
  a cluster is one ``ClusterUnavailable`` line saying what to install.
* Which cluster (``chosen_cluster``): the one named in code; else none if a URL is given (in code
  or ``$FRAY_CONTROLLER_URL``); else ``$FRAY_CLUSTER``, then Marin's own ``$MARIN_CLUSTER``; none
  set means the embedded controller.
* Every call asks the endpoint's credentials for the current headers (the IAP edge token as
  ``Proxy-Authorization``, a bearer as ``Authorization`` when ``$MARIN_CLUSTER_TOKEN`` is set); the
  token providers refresh them before they expire. A provider that cannot (no login, or an expired
  or revoked one) becomes ``LoginRequired``, one line: run ``iris --cluster NAME login``.
* One ``NamedCluster`` is one resolution: kept open by its ``FrayClient``, re-resolved once when a
  call is refused for authentication (``reopen``), closed with the client (tunnels and a local
  cluster live exactly as long as it), and closed at interpreter exit if nobody closed it
  (``at_exit.close_at_exit``): a local cluster's threads would otherwise keep the process alive.
* A local-kind manifest starts an Iris local cluster inside the process that resolves it. So that a
  kernel and the Jupyter server see the same jobs, the process that started one records its URL in
  ``<jupyter runtime dir>/fray-cluster-<name>.json`` (mode 0600, with its pid) until it closes it,
  and another process resolving the same name while that process lives is given that URL
  (``connect_controller(controller_url=..., cluster_name=NAME)``, still Iris's code). Each
  resolution ("read the record, else start the cluster and write the record") holds an exclusive
  lock on ``fray-cluster-<name>.lock`` beside it, so processes resolving one name at the same
  instant share one cluster; a process that cannot take the lock within ``RESOLVE_LOCK_TIMEOUT``
  seconds gets one ``ClusterUnavailable`` line naming the lock file.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from fray_jupyter.client.at_exit import close_at_exit
from fray_jupyter.client.errors import AuthenticationFailed, ClusterUnavailable, LoginRequired
from fray_jupyter.file_lock import LockTimeout, exclusive
from fray_jupyter.lazy import one_import_at_a_time
from fray_jupyter.runtime_file import (
    ControllerInfo,
    read_runtime_file,
    remove_runtime_file,
    runtime_file_path,
    write_runtime_file,
)

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient

CLUSTER_ENV: Final[str] = "FRAY_CLUSTER"
MARIN_CLUSTER_ENV: Final[str] = "MARIN_CLUSTER"
EXTRA: Final[str] = "pip install 'fray-jupyter[marin]'"
CLUSTER_NAME: Final[re.Pattern[str]] = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
"""A cluster name as Iris's config dirs hold them: a manifest's file name without ``.yaml``."""
RESOLVE_LOCK_TIMEOUT: Final[float] = 120.0
"""Seconds a resolution waits for another process's resolution of the same name (a local cluster
starting, a tunnel opening) before giving up."""


def cluster_from_env() -> str | None:
    """``$FRAY_CLUSTER``, else ``$MARIN_CLUSTER``, else None."""
    return os.environ.get(CLUSTER_ENV) or os.environ.get(MARIN_CLUSTER_ENV) or None


def chosen_cluster(cluster: str | None = None, url: str | None = None) -> str | None:
    """The cluster to use, if any: ``cluster``; else none when a URL is given (``url``: the caller's,
    including ``$FRAY_CONTROLLER_URL``); else ``cluster_from_env()``. A cluster beats a URL at the
    same level, anything given beats the environment."""
    if cluster:
        return cluster
    if url:
        return None
    return cluster_from_env()


def shared_cluster_file(name: str) -> Path:
    """Where a process that started cluster ``name`` locally says where it is (module rules)."""
    return runtime_file_path().with_name(f"fray-cluster-{name}.json")


def resolve_lock_file(name: str) -> Path:
    """The lock held while cluster ``name`` is resolved (module rules), beside its shared record."""
    return shared_cluster_file(name).with_suffix(".lock")


def login_command(name: str) -> str:
    """The ``iris`` command that logs in to cluster ``name`` (``--cluster`` is a group option)."""
    return f"iris --cluster {name} login"


def marin_unavailable() -> str | None:
    """None when Marin's Iris connection code can be used here, else one line saying what to install."""
    if sys.version_info < (3, 12):
        python = f"{sys.version_info.major}.{sys.version_info.minor}"
        return f"named clusters need Marin's Iris, which needs Python >= 3.12 (this is {python}): {EXTRA}"
    try:
        importlib.metadata.version("marin-iris")
    except importlib.metadata.PackageNotFoundError:
        return f"named clusters need Marin's Iris (marin-iris is not installed): {EXTRA}"
    return None


def _login_errors() -> tuple[type[BaseException], ...]:
    """rigging's "cannot mint a token without a (new) login" errors."""
    with one_import_at_a_time():
        from rigging.auth import IapCredentialsUnavailable, IapLoginRequired  # type: ignore[import-untyped]

    return IapLoginRequired, IapCredentialsUnavailable


class NamedCluster:
    """One resolution of cluster ``name`` (see the module rules): ``url``, ``headers()`` for each
    call, ``reopen()`` after an authentication failure, ``close()``. Thread-safe."""

    def __init__(self, name: str, *, lock_timeout: float = RESOLVE_LOCK_TIMEOUT) -> None:
        self.name = name
        self.lock_timeout = lock_timeout
        self._lock = threading.Lock()
        self._endpoint: Any = None
        self._shared = False  # the local cluster another process started and shares
        self._endpoint = self._resolve()
        close_at_exit(self)

    @property
    def label(self) -> str:
        """How errors name it: ``cluster NAME``."""
        return f"cluster {self.name}"

    @property
    def url(self) -> str:
        """The controller URL Iris resolved (a tunnel's local end, the IAP edge, a local cluster)."""
        return str(self._endpoint.url).rstrip("/")

    @property
    def dashboard_url(self) -> str:
        """The origin of the cluster's own Iris dashboard: the manifest's ``dashboard_url`` (its
        public origin, what ``iris job run`` prints job links under), else the controller URL Iris
        resolved (every Iris controller serves its dashboard at its own address; a tunnel's local
        end only opens on the machine that holds the tunnel)."""
        config = self._endpoint.config
        public = str(getattr(config, "dashboard_url", "") or "") if config is not None else ""
        return public.rstrip("/") or self.url

    @property
    def kind(self) -> str:
        """The manifest's controller kind (``gcp``, ``coreweave``, ``local``, …), or ``""``."""
        config = self._endpoint.config
        if config is None:
            return "local" if self._shared else ""
        return str(config.controller.controller_kind())

    def headers(self) -> Mapping[str, str]:
        """The credentials' headers now (providers mint or refresh as needed); ``LoginRequired``
        when a provider needs a login, ``AuthenticationFailed`` when it fails otherwise."""
        try:
            return dict(self._endpoint.credentials.headers())
        except _login_errors() as error:
            raise self.login_required(str(error)) from None
        except Exception as error:  # noqa: BLE001 - a provider's failure (network, bad key) is one line
            raise AuthenticationFailed(f"cannot get a token: {type(error).__name__}: {error}", url=self.label,
                                       code="unauthenticated") from None

    def login_required(self, detail: str = "") -> LoginRequired:
        """The one-line error that says to log in again."""
        why = f" ({detail})" if detail else ""
        return LoginRequired(f"not logged in to cluster {self.name!r}, or the login expired{why}; "
                             f"run `{login_command(self.name)}`", url=self.label, code="unauthenticated")

    def reopen(self) -> None:
        """Close this resolution and resolve the name again (re-reads the manifest and the credential
        store, e.g. after ``iris login``; reopens the tunnel)."""
        with self._lock:
            self._close_endpoint()
            self._endpoint = self._resolve()

    def close(self) -> None:
        """Release the tunnel or local cluster Iris opened."""
        with self._lock:
            self._close_endpoint()

    def _close_endpoint(self) -> None:
        if self._endpoint is not None:
            endpoint, self._endpoint = self._endpoint, None
            if not self._shared:
                remove_runtime_file(os.getpid(), shared_cluster_file(self.name))
            endpoint.close()

    def _resolve(self) -> Any:
        reason = marin_unavailable()
        if reason is not None:
            raise ClusterUnavailable(reason, url=self.label)
        try:
            with exclusive(resolve_lock_file(self.name), self.lock_timeout):
                return self._connect()
        except LockTimeout as error:
            raise ClusterUnavailable(f"another process has been resolving this cluster for over {error.timeout:g} s "
                                     f"(it holds {error.path}); try again once it is done", url=self.label) from None

    def _connect(self) -> Any:
        """Iris's endpoint for the name: the shared local cluster's, else a new resolution."""
        with one_import_at_a_time("pyarrow.ipc"):
            import click
            from iris.cli.connect import connect_controller

        shared = read_runtime_file(shared_cluster_file(self.name))
        self._shared = shared is not None and shared.pid != os.getpid()
        try:
            if shared is not None and self._shared:
                return connect_controller(controller_url=shared.url, cluster_name=self.name)
            endpoint = connect_controller(cluster_name=self.name)
            if endpoint.config is not None and endpoint.config.controller.controller_kind() == "local":
                write_runtime_file(ControllerInfo(endpoint.url, "", "", os.getpid()), shared_cluster_file(self.name))
            return endpoint
        except click.ClickException as error:
            raise ClusterUnavailable(error.format_message(), url=self.label) from None
        except _login_errors() as error:
            raise self.login_required(str(error)) from None
        except Exception as error:  # noqa: BLE001 - a bad manifest or a failed start is one line, not a traceback
            raise ClusterUnavailable(f"{type(error).__name__}: {error}", url=self.label) from None


@dataclass(frozen=True)
class ClusterEntry:
    """A cluster the user can pick: its name, the manifest that defines it, whether the credential
    store holds a login record for it."""

    name: str
    manifest: str
    logged_in: bool


def list_clusters() -> list[ClusterEntry]:
    """The named clusters ``iris cluster list`` shows (Iris's config dirs, first match wins), by
    name, each with whether ``~/.config/marin/credentials`` has a record; ``[]`` without Marin's Iris."""
    if marin_unavailable() is not None:
        return []
    with one_import_at_a_time("pyarrow.ipc"):
        from iris.cli.connect import IRIS_CLUSTER_CONFIG_DIRS
        from rigging.config_discovery import list_cluster_configs  # type: ignore[import-untyped]
        from rigging.credential_store import load_credentials  # type: ignore[import-untyped]

    entries = []
    for name, path in sorted(list_cluster_configs(IRIS_CLUSTER_CONFIG_DIRS).items()):
        try:
            logged_in = load_credentials(name) is not None
        except (OSError, ValueError, KeyError):  # an unreadable record counts as none
            logged_in = False
        entries.append(ClusterEntry(name, str(path), logged_in))
    return entries


def connect_cluster(name: str, *, timeout: float = 30.0, retry_for: float | None = None) -> FrayClient:
    """A ``FrayClient`` of cluster ``name``, owning its resolution (closed with the client); ``retry_for``
    None: Iris's own retry budget (``client.retry.IRIS``)."""
    from fray_jupyter.client.client import FrayClient

    cluster = NamedCluster(name)
    try:
        return FrayClient(cluster.url, cluster=cluster, timeout=timeout, retry_for=retry_for)
    except BaseException:
        cluster.close()
        raise
