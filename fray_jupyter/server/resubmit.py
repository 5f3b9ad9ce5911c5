"""``POST /fray/jobs/<id>/resubmit?name=``: send a job's stored request again under a fresh name, as
``%fray resubmit JOB`` does (``client.resubmit``: its rules for the new name, the work-dir files this
machine kept, and what it refuses), and answer the new job (``contract.ResubmitResult``).

Rules: ``name`` (optional) is the new job's last path component; without it the client picks
``<name>-r2``, ``-r3`` … A refusal (redacted values, a work-dir file nobody kept, a name taken) is
400 ``invalid_request`` with the client's one line, and nothing is sent; an unknown job 404.
"""

from __future__ import annotations

import tornado.web

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.resubmit import resubmit
from fray_jupyter.server import contract, serialize
from fray_jupyter.server.handlers import FrayHandler


class ResubmitHandler(FrayHandler):
    """``POST /fray/jobs/<id>/resubmit`` (module docstring)."""

    @tornado.web.authenticated
    async def post(self, job_id: str) -> None:
        name = self.get_query_argument("name", "") or None

        def send(client: FrayClient) -> contract.ResubmitResult:
            new_id = resubmit(client, job_id, name)
            return contract.ResubmitResult(job_id=new_id, job=serialize.job_json(client.status(new_id)))
        self.reply(await self.call(send))
