"""What the browser benches do on a JupyterLab page, shared: open the lab with the Fray Jobs sidebar
shown (``tests/ui/labserver.py``'s lab, Playwright's sync API)."""

from __future__ import annotations

from typing import Any, Final

SIDEBAR_ID: Final[str] = "fray-jobs"
VIEWPORT: Final[dict[str, int]] = {"width": 1400, "height": 1000}


def sidebar_page(browser: Any, lab: Any, workspace: str) -> Any:
    """A new page of ``lab``'s JupyterLab in ``workspace``, its layout restored, the Fray Jobs sidebar shown."""
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(f"{lab.url}/lab/workspaces/{workspace}?token={lab.token}")
    page.wait_for_function("() => window.jupyterapp?.restored")
    page.evaluate("async () => { await window.jupyterapp.restored; }")
    page.evaluate(f"window.jupyterapp.shell.activateById('{SIDEBAR_ID}')")
    return page
