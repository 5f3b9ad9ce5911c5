"""A real, hermetic ``jupyter lab`` on 127.0.0.1 for browser tests and the picker bench, and the
Debian Chromium launch settings. Never ``playwright install``: Playwright drives the system's
/usr/bin/chromium (``/usr/lib/chromium/chromium`` where it exists: the ``/usr/bin`` wrapper prints a
harmless shell error on some mounts).

What keeps the server hermetic and quiet: ``--allow-root`` (CI runs as root, and JupyterLab exits at
start-up as root without it); the "official Jupyter news" toast, which covers the bottom-right corner
and which ``--LabApp.news_url=None`` does not remove, is turned off by a user-settings file
(``notification.jupyterlab-settings``) under ``JUPYTERLAB_SETTINGS_DIR``; every Jupyter config, data,
runtime and workspace dir is under the test's own folder (the config dir's ``labconfig/page_config.json``
turns off the build check), and deleted files are not moved to a trash folder."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from tests.jupyter_isolation import stop_runtime_controller

CHROMIUM = "/usr/lib/chromium/chromium" if Path("/usr/lib/chromium/chromium").exists() else "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"]
NOTIFICATION_SETTINGS = {"fetchNews": "false", "checkForUpdates": False}
# No "build recommended" check: on every page load it runs node twice (yarn's config, node's version)
# to see whether a source build is due, which a prebuilt extension never needs.
PAGE_CONFIG = {"buildCheck": False, "buildAvailable": False}
START_TIMEOUT = 60.0
KERNEL_IDLE = ("() => { const w = window.jupyterapp?.shell.currentWidget;"
               " return w?.sessionContext?.session?.kernel?.status === 'idle'; }")


def launch_args() -> dict[str, Any]:
    """Keyword arguments for ``playwright.chromium.launch``."""
    return {"executable_path": CHROMIUM, "headless": True, "args": CHROMIUM_ARGS}


@dataclass(frozen=True)
class Lab:
    """A running server: its URL (origin and ``base_url``, no trailing slash: ``{url}/lab``), token,
    the directory notebooks are served from, and the server's process id."""

    url: str
    token: str
    root: Path
    pid: int

    def notebook(self, name: str, *sources: str) -> str:
        """Write a notebook of code cells into the root; return its name."""
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(notebook, self.root / name)
        return name

    def open_url(self, name: str, app: str = "lab") -> str:
        """URL opening notebook ``name`` in JupyterLab (``app="lab"``, in a workspace of its own, so
        notebooks other tests opened are not restored beside it) or Notebook 7 (``"notebook"``)."""
        path = f"lab/workspaces/{Path(name).stem}/tree/{name}" if app == "lab" else f"notebooks/{name}"
        return f"{self.url}/{path}?token={self.token}"

    def home_url(self, app: str = "lab") -> str:
        """URL of JupyterLab's last workspace (``app="lab"``) or Notebook 7's file browser (``"notebook"``)."""
        return f"{self.url}/{'lab' if app == 'lab' else 'tree'}?token={self.token}"


REPO = Path(__file__).resolve().parents[2]


def check_labextension_built() -> None:
    """Fail with the command to run when the built labextension is older than its sources (a
    pull or an edit since the last ``pip install -e .``): the browser would run stale code."""
    built = REPO / "fray_jupyter" / "labextension" / "package.json"
    sources = [path for path in (REPO / "labextension" / "src").rglob("*") if path.is_file()]  # as the build hook
    if not built.exists():
        raise RuntimeError(f"no built labextension at {built.parent}; build it: .venv/bin/python -m pip install -e .")
    newer = [path for path in sources if path.stat().st_mtime > built.stat().st_mtime]
    if newer:
        raise RuntimeError(f"the built labextension is older than {newer[0].relative_to(REPO)} (and {len(newer) - 1} "
                           "other source(s)); rebuild it: .venv/bin/python -m pip install -e . (scripts/test does)")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_until_up(url: str, token: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"jupyter lab did not answer within {START_TIMEOUT:.0f} s:\n{log.read_text()[-3000:]}")


def base_url_arg(base_url: str) -> str:
    """The server option serving everything under ``base_url`` (``/user/alice/``: as JupyterHub
    serves a user's single-user server); refuses a path not starting and ending with ``/``."""
    if not (base_url.startswith("/") and base_url.endswith("/")):
        raise ValueError(f"base_url {base_url!r}: must start and end with '/', e.g. '/user/alice/'")
    return f"--ServerApp.base_url={base_url}"


@contextmanager
def running_lab(workdir: Path, *extra_args: str, base_url: str = "/",
                env: Mapping[str, str] | None = None) -> Iterator[Lab]:
    """Start ``jupyter lab`` (plus ``extra_args``, with ``env`` over this environment) under
    ``base_url`` with every Jupyter directory under ``workdir``; stop it on exit."""
    check_labextension_built()
    root, settings = workdir / "notebooks", workdir / "settings"
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
        json.dumps(NOTIFICATION_SETTINGS))
    (workdir / "config" / "labconfig").mkdir(parents=True)
    (workdir / "config" / "labconfig" / "page_config.json").write_text(json.dumps(PAGE_CONFIG))
    root.mkdir()
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTERLAB_WORKSPACES_DIR": str(workdir / "ws"),
           "JUPYTER_RUNTIME_DIR": str(workdir / "runtime"), "JUPYTER_DATA_DIR": str(workdir / "data"),
           "JUPYTER_CONFIG_DIR": str(workdir / "config"), "IRIS_USER": "alice", **(env or {})}
    port, token = _free_port(), secrets.token_hex(16)
    log = workdir / "lab.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
             f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={root}", "--LabApp.expose_app_in_browser=True",
             "--JupyterNotebookApp.expose_app_in_browser=True", "--FileContentsManager.delete_to_trash=False",
             base_url_arg(base_url), *extra_args],
            env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}{base_url.rstrip('/')}"
    try:
        _wait_until_up(url, token, process, log)
        yield Lab(url, token, root, process.pid)
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        stop_runtime_controller(workdir / "runtime")  # one the sidebar or a kernel started here


def run_first_cell(page: Any, url: str) -> None:
    """Open the notebook at ``url`` in a Playwright page, wait for an idle kernel, run cell 1."""
    page.goto(url)
    page.wait_for_function(KERNEL_IDLE, timeout=60_000)
    page.locator(".jp-Cell .jp-InputArea-editor >> visible=true").first.click()
    page.keyboard.press("Shift+Enter")
