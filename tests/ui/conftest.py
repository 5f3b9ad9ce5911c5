"""Browser-test fixtures: one real JupyterLab per session and base URL, pytest-playwright's page on
Debian Chromium, and a watch on every page for errors from our extension. Run this folder in its own
pytest invocation (env-recipes.md G6): ``pytest tests/ui``.

Every test runs twice: with the server at the root (``[root]``), then under
``--ServerApp.base_url=/user/alice/`` (``[hub]``, as JupyterHub serves a user's server); ``-k root``
or ``-k hub`` picks one. Each base URL has its own server, started before its first test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import pytest
from frontend_errors import FrontendErrors
from labserver import Lab, launch_args, running_lab

BASE_URLS: Final[dict[str, str]] = {"root": "/", "hub": "/user/alice/"}


@pytest.fixture(scope="session", params=list(BASE_URLS.values()), ids=list(BASE_URLS))
def base_url(request: pytest.FixtureRequest) -> str:
    """The ``base_url`` the session's servers run under: ``/``, then ``/user/alice/``."""
    return str(request.param)


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory, base_url: str) -> Iterator[Lab]:
    """A ``jupyter lab`` serving a temporary folder under ``base_url``, stopped after its tests."""
    with running_lab(tmp_path_factory.mktemp("lab"), base_url=base_url) as server:
        yield server


@pytest.fixture(autouse=True)
def frontend_errors(request: pytest.FixtureRequest, base_url: str) -> Iterator[FrontendErrors | None]:
    """For a test with a browser page: fail it on any problem ``FrontendErrors`` names (an error
    from our extension, a failed request, a URL outside the base URL), listed after the test."""
    if "page" not in request.fixturenames:
        yield None
        return
    watch = FrontendErrors(base_url)
    watch.attach(request.getfixturevalue("page"))
    yield watch
    assert not watch.problems, "the frontend went wrong:\n" + "\n".join(watch.problems)


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's hook: launch the system Chromium, headless."""
    return {**browser_type_launch_args, **launch_args()}
