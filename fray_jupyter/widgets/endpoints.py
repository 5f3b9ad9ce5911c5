"""``EndpointsView``: the endpoints a running job's tasks (and its children's) registered — its
actors, a trace viewer: name, address, task, and the link through the cluster's proxy — as the status
panel lists them (``views.endpoints``).

Rules: read with each poll of the panel (``read``), by name; a controller without an endpoint
registry lists none, a job that has ended has none, and a transient failure keeps what was shown.
"""

from __future__ import annotations

import ipywidgets as widgets

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import FrayError
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import is_job_finished
from fray_jupyter.iris.wire import proxy_link
from fray_jupyter.views.endpoints import endpoints_html


class EndpointsView(widgets.HTML):
    """The endpoints table of one job (see the module rules)."""

    def __init__(self) -> None:
        super().__init__()
        self.listed: tuple[tuple[str, str, str, str], ...] = ()

    def read(self, client: FrayClient, job_id: str, status: job_pb2.JobStatus) -> bool:
        """Read ``(name, address, task, link)`` of the endpoints under the job; True if they changed."""
        found = self._read(client, job_id, status)
        changed, self.listed = found != self.listed, found
        return changed

    def _read(self, client: FrayClient, job_id: str,
              status: job_pb2.JobStatus) -> tuple[tuple[str, str, str, str], ...]:
        if is_job_finished(status.state):
            return ()
        try:
            found = client.endpoints(f"{job_id}/")
        except FrayError as error:
            return () if error.code == "unimplemented" else self.listed
        return tuple(sorted((e.name, e.address, e.task_id, proxy_link(client.dashboard_url, e.name)) for e in found))

    def show(self) -> None:
        """Draw the endpoints as last read."""
        self.value = endpoints_html(self.listed)
