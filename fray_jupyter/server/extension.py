"""Route wiring and the extension's settings.

Settings (``jupyter_server_config.py`` or the command line):

* ``c.FrayServer.start_controller`` (default True): when no controller is configured or running,
  a request with ``start=1`` (the sidebar sends it while it is open) starts the embedded one — the
  same thing a kernel's ``connect()`` does, with the same runtime file and lock, so kernels and the
  server always share one controller. Turn it off to only ever show a controller someone else
  started (the sidebar then shows a banner).
* ``c.FrayServer.rpc_timeout`` (default 10 s): how long one controller call may take.
* ``c.FrayServer.cluster`` (default ""): a named Marin cluster the sidebar shows (resolved by Iris's
  own code, needs fray-jupyter[marin]); empty: ``$FRAY_CLUSTER`` / ``$MARIN_CLUSTER`` when no
  ``$FRAY_CONTROLLER_URL`` is set, else the controller the kernels find. The sidebar's switcher
  changes it for the running server (``server.link``).

Not a setting of this extension, but documented with it: widget round trips (the picker's preview)
are faster with Nagle's algorithm off on Jupyter Server's kernel websockets, an opt-in
``c.ServerApp.kernel_websocket_connection_class`` (see ``fray_jupyter.server.nodelay``).
"""

from __future__ import annotations

from typing import Any, Final

from jupyter_server.serverapp import ServerApp
from jupyter_server.utils import url_path_join
from traitlets import Bool, Float, Unicode
from traitlets.config import Configurable

from fray_jupyter.server.capacity import CapacityHandler
from fray_jupyter.server.captures import CaptureStore
from fray_jupyter.server.handlers import (
    CancelHandler,
    ClustersHandler,
    EndpointsHandler,
    EventsHandler,
    JobHandler,
    JobsHandler,
    OutputFileHandler,
    OutputsHandler,
    StatusHandler,
    TaskHandler,
    UsersHandler,
)
from fray_jupyter.server.link import ControllerLink
from fray_jupyter.server.logs import LogDownloadHandler, LogsHandler
from fray_jupyter.server.look_inside import ExecHandler, ProfileHandler, ProfilesHandler, StoredCaptureHandler
from fray_jupyter.server.resubmit import ResubmitHandler
from fray_jupyter.server.sessions import SessionsHandler
from fray_jupyter.server.usage import TimelineHandler, UsageHandler
from fray_jupyter.server.watch import ChangeHub

JOB: Final[str] = r"(?P<job_id>[^/]+)"
"""One path segment: the percent-encoded job id (Tornado decodes it before the handler sees it)."""

ROUTES: Final[tuple[tuple[str, type[Any]], ...]] = (
    ("fray/status", StatusHandler),
    ("fray/clusters", ClustersHandler),
    ("fray/events", EventsHandler),
    ("fray/users", UsersHandler),
    ("fray/sessions", SessionsHandler),
    ("fray/capacity", CapacityHandler),
    ("fray/jobs", JobsHandler),
    (f"fray/jobs/{JOB}", JobHandler),
    (f"fray/jobs/{JOB}/tasks/(?P<index>[0-9]{{1,6}})", TaskHandler),
    (f"fray/jobs/{JOB}/tasks/(?P<index>[0-9]{{1,6}})/profile", ProfileHandler),
    (f"fray/jobs/{JOB}/tasks/(?P<index>[0-9]{{1,6}})/exec", ExecHandler),
    (f"fray/jobs/{JOB}/profiles", ProfilesHandler),
    (f"fray/jobs/{JOB}/profiles/(?P<capture_id>[^/]+)", StoredCaptureHandler),
    (f"fray/jobs/{JOB}/resubmit", ResubmitHandler),
    (f"fray/jobs/{JOB}/logs", LogsHandler),
    (f"fray/jobs/{JOB}/logs/download", LogDownloadHandler),
    (f"fray/jobs/{JOB}/cancel", CancelHandler),
    (f"fray/jobs/{JOB}/usage", UsageHandler),
    (f"fray/jobs/{JOB}/events", TimelineHandler),
    (f"fray/jobs/{JOB}/outputs", OutputsHandler),
    (f"fray/jobs/{JOB}/endpoints", EndpointsHandler),
    (f"fray/jobs/{JOB}/outputs/(?P<index>[0-9]{{1,6}})/(?P<path>.+)", OutputFileHandler),
)


class FrayServer(Configurable):
    """Settings of the Fray server extension (see the module docstring)."""

    start_controller = Bool(True, help="Start the embedded controller when none is configured or running.").tag(
        config=True)
    rpc_timeout = Float(10.0, help="Seconds one call to the controller may take.").tag(config=True)
    cluster = Unicode("", help="Named Marin cluster to show; empty: $FRAY_CLUSTER, $MARIN_CLUSTER, else the "
                               "controller the kernels find.").tag(config=True)


def routes(base_url: str) -> list[tuple[str, type[Any]]]:
    """The handlers, under ``base_url``."""
    return [(url_path_join(base_url, pattern), handler) for pattern, handler in ROUTES]


def _load_jupyter_server_extension(serverapp: ServerApp) -> None:
    """Put a ``ControllerLink`` in the app settings and add the routes."""
    settings = FrayServer(parent=serverapp)
    web_app = serverapp.web_app
    link = ControllerLink(start=settings.start_controller, timeout=settings.rpc_timeout, cluster=settings.cluster)
    web_app.settings["fray_link"] = link
    web_app.settings["fray_hub"] = ChangeHub(link)
    web_app.settings["fray_captures"] = CaptureStore()
    web_app.add_handlers(".*$", routes(web_app.settings["base_url"]))  # type: ignore[no-untyped-call]
    serverapp.log.info("fray_jupyter: Fray Jobs API at %sfray/ (start_controller=%s)",
                       web_app.settings["base_url"], settings.start_controller)


def _unload_jupyter_server_extension(serverapp: ServerApp) -> None:
    """Close the controller client at shutdown."""
    hub = serverapp.web_app.settings.pop("fray_hub", None)
    if hub is not None:
        hub.stop()
    link = serverapp.web_app.settings.pop("fray_link", None)
    if link is not None:
        link.close()
