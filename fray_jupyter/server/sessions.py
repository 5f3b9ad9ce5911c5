"""``GET /fray/sessions?user=``: the sessions whose hosts are ready, read as ``%fray jobs`` reads them:
the hosts' endpoints in the controller's registry (``session.facts``), then each session's job.

Rules: ``user`` keeps one user's sessions (endpoints under ``/<user>/``; none: everyone's); a
controller with no endpoint registry has no sessions; a session whose job is gone by the time it is
read is left out. Stopping one is cancelling its job (``POST /fray/jobs/<id>/cancel``).
"""

from __future__ import annotations

import time

import tornado.web

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import FrayError, JobNotFound
from fray_jupyter.iris.placement import device_text
from fray_jupyter.iris.states import job_state_name
from fray_jupyter.server import contract
from fray_jupyter.server.handlers import FrayHandler
from fray_jupyter.session.facts import session_line, sessions_of


def session_rows(client: FrayClient, user: str | None) -> list[contract.SessionRow]:
    """The sessions of ``user`` (None: everyone's) with a host ready, by job id."""
    try:
        endpoints = client.endpoints("" if user is None else f"/{user}/")
    except FrayError as error:
        if error.code != "unimplemented":
            raise
        return []
    now_ms = int(time.time() * 1000)
    rows = []
    for job_id, facts in sorted(sessions_of(endpoints).items()):
        try:
            job = client.status(job_id)
        except JobNotFound:
            continue
        device = device_text(job.resources)
        rows.append(contract.SessionRow(
            job_id=job_id, name=job.name.rpartition("/")[2] or job_id, state=job_state_name(job.state),
            device=device, hosts=job.task_count, ready=len(facts.hosts), running=facts.running,
            idle_ms=facts.idle_ms(now_ms), releases_in_ms=facts.releases_in_ms(now_ms),
            line=session_line(facts, job.task_count, now_ms, device)))
    return rows


class SessionsHandler(FrayHandler):
    """``GET /fray/sessions?user=`` (the module rules)."""

    @tornado.web.authenticated
    async def get(self) -> None:
        user = self.user_arg() if self.get_query_argument("user", "") else None
        self.reply(contract.SessionList(sessions=await self.call(lambda client: session_rows(client, user))))
