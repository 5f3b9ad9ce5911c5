""""Will it fit?" before submit: ``fit(plan, client)`` asks a controller for its shape
(``GetAutoscalerStatus`` and ``ListWorkers``, cached ``CACHE_SECONDS`` per controller, with the profile
it reports) and gives ``iris.fit.fit_from``'s verdict on it (the verdicts and the rule for facts the
wire does not carry are there).

The profile: ``fit(plan, client)`` with no ``profile`` uses the one the controller reports about
itself (the embedded controller's own ``GetClusterProfile``; ``FrayClient.cluster_profile``), so
against the embedded controller the verdict is always read with its exact profile. A real Iris
reports none; then only the wire speaks.
"""

from __future__ import annotations

from typing import Final, Protocol

from fray_jupyter.client.cache import CACHE_SECONDS, Expiring
from fray_jupyter.cluster.profile import ClusterProfile
from fray_jupyter.iris.fit import Fit, PlanLike, fit_from
from fray_jupyter.iris.proto import controller_pb2

__all__ = ["CACHE", "Fit", "PlanLike", "Shape", "ShapeSource", "fit", "reported_profile", "shape"]

C = controller_pb2.Controller
MAX_VERDICTS: Final[int] = 256


class ShapeSource(Protocol):
    """A controller client that reports its cluster's shape (a ``FrayClient``)."""

    @property
    def url(self) -> str: ...

    def autoscaler_status(self) -> C.GetAutoscalerStatusResponse: ...

    def workers(self) -> C.ListWorkersResponse: ...


Shape = tuple[C.GetAutoscalerStatusResponse, C.ListWorkersResponse, ClusterProfile | None]
"""A controller's two capacity responses and the profile it reports (None: none)."""


class _Cache:
    """Per controller URL, its ``Shape``, and the verdicts computed from it (``client.cache``)."""

    def __init__(self) -> None:
        self.shapes: Expiring[str, Shape] = Expiring()
        self.verdicts: Expiring[tuple[str, bytes, str], Fit] = Expiring(most=MAX_VERDICTS)

    def clear(self) -> None:
        """Forget every shape and verdict (the next ``fit`` asks the controller again)."""
        self.shapes.clear()
        self.verdicts.clear()


CACHE: Final[_Cache] = _Cache()


def shape(source: ShapeSource, max_age: float = CACHE_SECONDS) -> Shape:
    """The ``Shape`` of ``source``'s controller, read at most ``max_age`` seconds ago; a ``FrayError``
    from the two wire reads propagates."""
    def read() -> Shape:
        reported = reported_profile(source)
        return source.autoscaler_status(), source.workers(), reported

    return CACHE.shapes.get(source.url, max_age, read)


def reported_profile(source: ShapeSource) -> ClusterProfile | None:
    """The profile ``source``'s controller reports about itself (``FrayClient.cluster_profile``: the
    embedded controller does, a real Iris does not), or None."""
    ask = getattr(source, "cluster_profile", None)
    answer = ask() if callable(ask) else None
    return answer if isinstance(answer, ClusterProfile) else None


def fit(plan: PlanLike, client: ShapeSource, *, profile: ClusterProfile | None = None,
        max_age: float = CACHE_SECONDS) -> Fit:
    """Whether ``plan`` fits the cluster behind ``client`` now, after a scale-up, or never, read with
    ``profile`` — or, without one, the profile the controller reports, if it does. The controller's
    shape is fetched at most once per ``max_age`` seconds; a ``FrayError`` from the two wire reads
    (no controller, UNIMPLEMENTED on an old one) propagates."""
    def read() -> Fit:
        autoscaler, workers, reported = shape(client, max_age)
        return fit_from(plan, autoscaler, workers, profile or reported)

    key = (client.url, plan.request.SerializeToString(deterministic=True), profile.name if profile else "")
    return CACHE.verdicts.get(key, max_age, read)
