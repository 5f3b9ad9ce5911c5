"""Browser-test fixtures: one real JupyterLab per session and base URL, pytest-playwright's page on
Debian Chromium, and a watch on every page for errors from our extension. Run this folder in its own
pytest invocation (``pytest tests/ui``): pytest-jupyter's autouse event-loop fixtures, active in the
server tests, close a loop Playwright's sync API still runs.

Every test runs with the server at the root (``[root]``). The tests marked ``hub`` run again under
``--ServerApp.base_url=/user/alice/`` (``[hub]``, as JupyterHub serves a user's server): one for each
way a URL reaches the page — a REST call and the live feed (every path the labextension asks for is
made by ``api.ts``'s ``frayUrl``, every route the server answers by ``server.extension``'s one table),
a download link, an output file's image, a profile capture, and Notebook 7's own shell — where a path
that forgets the base URL shows up as a failed request in the watch every test runs under. One run at
the root proves the rest, which do not depend on where the server is mounted. ``-k root`` or ``-k hub``
picks one. Each base URL has its own server, started before its first test.

The tests of a base URL share one browser context, each with a page of its own (closed after it): so
Chromium compiles JupyterLab's scripts once and serves them from its cache after, which took about two
thirds of the CPU of a page load when every test had a context of its own. Nothing a test checks lives
in the context: JupyterLab keeps its layout and our panel's state in the server's workspace, and each
test opens a workspace of its own (``Lab.open_url``). Chromium runs with ``--process-per-site`` and the
context keeps one page of the server's site open (``/api``) for its lifetime, so every test's page
joins that one renderer process instead of starting its own, whose caches (compiled scripts, decoded
styles) start empty: a notebook page then costs about 3.7 CPU-seconds instead of 4.8. The pages stay
apart as before (each its own document and script realm, closed after its test)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import pytest
from frontend_errors import FrontendErrors
from labserver import Lab, launch_args, running_lab
from playwright.sync_api import Browser, BrowserContext, Page

BASE_URLS: Final[dict[str, str]] = {"root": "/", "hub": "/user/alice/"}


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``hub`` marker: the test also runs under the JupyterHub-style base URL."""
    config.addinivalue_line("markers", "hub: also run under the base URL /user/alice/ (JupyterHub)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep a test's ``[hub]`` run only when the test is marked ``hub``."""
    keep, drop = [], []
    for item in items:
        params = getattr(item, "callspec", None)
        under_hub = params is not None and params.params.get("base_url") == BASE_URLS["hub"]
        (drop if under_hub and item.get_closest_marker("hub") is None else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session", params=list(BASE_URLS.values()), ids=list(BASE_URLS))
def base_url(request: pytest.FixtureRequest) -> str:
    """The ``base_url`` the session's servers run under: ``/``, then ``/user/alice/``."""
    return str(request.param)


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory, base_url: str) -> Iterator[Lab]:
    """A ``jupyter lab`` serving a temporary folder under ``base_url``, stopped after its tests."""
    with running_lab(tmp_path_factory.mktemp("lab"), base_url=base_url) as server:
        yield server


@pytest.fixture(scope="session")
def context(browser: Browser, browser_context_args: dict[str, Any], lab: Lab) -> Iterator[BrowserContext]:
    """Overrides pytest-playwright's: one browser context per base URL, holding a page of the server's
    site open for the renderer process the tests' pages share (see the module's docstring)."""
    shared = browser.new_context(**browser_context_args)
    keepalive = shared.new_page()
    keepalive.goto(f"{lab.url}/api")
    yield shared
    shared.close()


@pytest.fixture
def page(context: BrowserContext) -> Iterator[Page]:
    """Overrides pytest-playwright's: a new page in the shared context, closed after the test."""
    opened = context.new_page()
    yield opened
    opened.close()


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
    assert not watch.problems, "the frontend went wrong:\n" + "\n".join(watch.problems) + server_errors(request, watch)


def server_errors(request: pytest.FixtureRequest, watch: FrontendErrors) -> str:
    """For an HTTP 500 among the problems: the server log's last uncaught exception, which says why."""
    if not any(problem.startswith("HTTP 500") for problem in watch.problems) or "lab" not in request.fixturenames:
        return ""
    log = request.getfixturevalue("lab").root.parent / "lab.log"  # running_lab's log, beside the notebooks
    text = log.read_text(errors="replace") if log.exists() else ""
    start = text.rfind("Uncaught exception")
    return "\n\nthe server's log:\n" + text[start:start + 6000] if start >= 0 else ""


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's hook: launch the system Chromium, headless, one renderer process per site."""
    launch = launch_args()
    return {**browser_type_launch_args, **launch, "args": [*launch["args"], "--process-per-site"]}
