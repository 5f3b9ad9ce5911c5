"""The conformance suite needs Marin's real packages; it fails (never skips) without them."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

try:
    import fray.types  # noqa: F401
    import iris.rpc.controller_pb2  # noqa: F401
except ImportError as missing:  # pragma: no cover - environment problem, not a test outcome
    raise RuntimeError(
        "the conformance suite needs marin-fray and marin-iris 0.2.227.dev40316220070 (Python 3.12): "
        "run the README's test command, which installs them"
    ) from missing

from tests.conformance.oracle import Oracle


@pytest.fixture(scope="session")
def real_client() -> Iterator[Oracle]:
    """Marin's real Fray -> Iris client, recording what it would send (no cluster)."""
    with Oracle() as oracle:
        yield oracle
