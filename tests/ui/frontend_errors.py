"""What a browser test must never see, in JupyterLab or Notebook 7, at the root or under a base URL:
an error from the fray-jupyter labextension, or a request that went wrong because a URL was built
without the server's ``base_url``.

Rules (``FrontendErrors.problems``):

* an uncaught exception whose stack runs through the extension's bundle
  (``<base_url>lab/extensions/fray-jupyter/``), or a console error logged from it (or naming it);
* any HTTP answer >= 400 to a request for our REST API (``<base_url>fray/``) or our bundle, except
  502/503/504 from the API (the controller is unreachable: the sidebar shows a banner, and tests
  cause it on purpose);
* any request to the server outside ``<base_url>`` (what JupyterHub's proxy would send to the Hub).

The Jupyter frontends' own errors are not ours and pass: Notebook 7's shortcut settings throw on
every page, and jupyter_server answers Notebook 7 a 403 for a font JupyterLab fetched first from
the same server (its static-file cache is keyed by file name alone, and both ship that font).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

EXTENSION_NAME: Final[str] = "fray-jupyter"
UNREACHABLE: Final[frozenset[int]] = frozenset({502, 503, 504})


def _server_path(url: str) -> str | None:
    """The path of a request to a server on this machine (the Jupyter server under test), else None."""
    parts = urlsplit(url)
    return parts.path if parts.hostname == "127.0.0.1" else None


@dataclass
class FrontendErrors:
    """Collects the problems of one page whose Jupyter server (on 127.0.0.1) serves under
    ``base_url`` (``/`` or ``/user/alice/``)."""

    base_url: str
    problems: list[str] = field(default_factory=list)

    @property
    def bundle(self) -> str:
        """The path the labextension's JavaScript is served from."""
        return f"{self.base_url}lab/extensions/{EXTENSION_NAME}/"

    def attach(self, page: Any) -> None:
        """Watch ``page`` from now on."""
        page.on("pageerror", self._on_page_error)
        page.on("console", self._on_console)
        page.on("request", self._on_request)
        page.on("response", self._on_response)

    def _on_page_error(self, error: Any) -> None:
        if self.bundle in f"{error.stack}":
            self.problems.append(f"uncaught in the extension: {error.message}\n{error.stack}")

    def _on_console(self, message: Any) -> None:
        if message.type != "error":
            return
        where = str(message.location.get("url", ""))
        if self.bundle in where or message.text.startswith(f"{EXTENSION_NAME}:"):
            self.problems.append(f"console error from the extension: {message.text} ({where})")

    def _on_request(self, request: Any) -> None:
        path = _server_path(request.url)
        if path is not None and not path.startswith(self.base_url):
            self.problems.append(f"{request.method} {request.url}: outside the base URL {self.base_url}")

    def _on_response(self, response: Any) -> None:
        path, status, api = _server_path(response.url), response.status, f"{self.base_url}fray/"
        if path is None or status < 400 or not path.startswith((api, self.bundle)):
            return
        if not (status in UNREACHABLE and path.startswith(api)):
            self.problems.append(f"HTTP {status} for {response.request.method} {response.url}")
