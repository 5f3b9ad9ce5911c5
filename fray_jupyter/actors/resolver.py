"""Where an actor's name is served: ``Resolved(base, headers, task_id)``, the URL its calls go to.

Rules:

* ``RegistryResolver(client)`` looks the name up in the controller's endpoint registry
  (``ListEndpoints``, exact name) and calls the address the task registered (task to task, as
  Iris's ``NamespacedResolver``); with ``proxy=True`` calls go through the controller's actor proxy
  (``<url>/proxy/<name>``, what ``iris actor call`` uses) with the client's own credentials, for a
  caller outside the cluster's network: asked for at each call (a named cluster's token is
  refreshed before it expires), and renewed once when the proxy refuses them.
* ``FixedResolver(address)`` is one known address (an actor the kernel serves itself).
* Inside an Iris task a handle that came without a resolver (unpickled from a job's arguments)
  uses the registry of the task's own controller (``task_resolver``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from fray_jupyter.client.client import FrayClient
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.wire import proxy_url


@dataclass(frozen=True)
class Resolved:
    """Where to send an actor's calls: the base URL, headers to add, and the task serving it ("" unknown);
    through a controller's proxy also ``auth`` (the caller's credentials now, asked for each call, so a
    token is refreshed before it expires) and ``renew`` (what to do when the proxy refuses them:
    resolve the named cluster again, as the client does for its own calls)."""

    base: str
    headers: dict[str, str] = field(default_factory=dict)
    task_id: str = ""
    auth: Callable[[], Mapping[str, str]] | None = field(default=None, compare=False)
    renew: Callable[[], None] | None = field(default=None, compare=False)


class Resolver(Protocol):
    """Finds where an actor name is served; None when nothing serves it now."""

    def resolve(self, name: str) -> Resolved | None: ...

    def describe(self) -> str:
        """Where the resolver looks, for messages (a controller URL)."""
        ...


class RegistryResolver:
    """Names from a controller's endpoint registry (see the module rules)."""

    def __init__(self, client: FrayClient, *, proxy: bool = False) -> None:
        self.client = client
        self.proxy = proxy

    def describe(self) -> str:
        return f"the endpoint registry of {self.client.url}" + (" (through its actor proxy)" if self.proxy else "")

    def resolved(self, endpoint: Controller.Endpoint) -> Resolved:
        """Where the calls to a listed endpoint go."""
        if self.proxy:
            return Resolved(proxy_url(self.client.url, endpoint.name), {}, endpoint.task_id,
                            auth=self.client.auth_headers, renew=self.client.reauthenticate)
        return Resolved(endpoint.address.rstrip("/"), dict(endpoint.metadata), endpoint.task_id)

    def resolve(self, name: str) -> Resolved | None:
        found = self.client.endpoints(name, exact=True)
        return self.resolved(found[0]) if found else None


class FixedResolver:
    """One actor at a known address."""

    def __init__(self, address: str) -> None:
        self.address = address.rstrip("/")

    def describe(self) -> str:
        return self.address

    def resolve(self, name: str) -> Resolved | None:
        return Resolved(self.address)


@functools.cache
def task_resolver() -> RegistryResolver:
    """The registry of the controller running this process's Iris task; ``RuntimeError`` outside one."""
    from fray_jupyter.client.discovery import task_controller

    found = task_controller()
    if found is None:
        raise RuntimeError("this actor handle has no controller to resolve it: outside an Iris task, use the "
                           "handle the client returned (or its group), not one unpickled from elsewhere")
    return RegistryResolver(FrayClient(found[0], found[1]))
