"""The watch every browser test runs under (conftest.py, frontend_errors.py) is not blind: in a real
page it reports a request to our API answered 404, a request outside the base URL (under
``/user/alice/``), and a console error naming our extension; a controller-unreachable 503 from
``/fray/`` and a 404 outside our routes pass."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from frontend_errors import FrontendErrors
from labserver import Lab
from playwright.sync_api import Page


@pytest.mark.hub
def test_the_watch_reports_404s_urls_outside_the_base_url_and_our_console_errors(
        lab: Lab, page: Page, base_url: str, frontend_errors: FrontendErrors) -> None:
    page.route("**/fray/status", lambda route: route.fulfill(status=503, body="{}"))
    page.goto(lab.home_url())
    page.wait_for_function("() => window.jupyterapp?.name === 'JupyterLab'")
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(lab.url))
    frontend_errors.problems.clear()  # whatever the page did while starting is the other tests' business
    page.evaluate("""async ([inside, outside]) => {
        await fetch(inside + 'fray/status');
        await fetch(inside + 'fray/no-such-route');
        await fetch(outside + '/fray/no-such-route');
        await fetch(inside + 'api/no-such-route');
        console.error('fray-jupyter: on purpose');
        console.error('someone else: not ours');
    }""", [f"{origin}{base_url}", origin])
    problems, frontend_errors.problems[:] = list(frontend_errors.problems), []
    assert not any("fray/status" in problem for problem in problems)  # unreachable: the sidebar's banner
    assert f"HTTP 404 for GET {origin}{base_url}fray/no-such-route" in problems
    assert "console error from the extension: fray-jupyter: on purpose" in "\n".join(problems)
    assert not any("someone else" in problem or "api/no-such-route" in problem for problem in problems)
    outside = [problem for problem in problems if "outside the base URL" in problem]
    assert len(outside) == (0 if base_url == "/" else 1)
