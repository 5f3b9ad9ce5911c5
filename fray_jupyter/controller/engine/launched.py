"""The launch requests of the engine's unfinished jobs, each decoded once.

Rule: a job's stored request (``Store.launch_request``; a sweep's can be megabytes) is decoded the
first time the engine needs it — at submission, or at the first start or state change after a
restart — and kept under the job's id with its row id (never reused: a replacement under the same
id is decoded afresh) until the job ends or is forgotten. Everything read from it then is read from memory:
the command and environment of each attempt, the hold reason, the preemption policy a terminal
state applies to the jobs below.
"""

from __future__ import annotations

from fray_jupyter.controller.kernel.rows import JobRow
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.proto import controller_pb2

C = controller_pb2.Controller


class LaunchedRequests:
    """Decoded requests by job id (see the module rule)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._by_job: dict[str, tuple[int, C.LaunchJobRequest]] = {}

    def of(self, job: JobRow) -> C.LaunchJobRequest:
        """The request ``job`` was launched with: from ``job.request`` when the row carries it (a
        submission), else read from the store once."""
        kept = self._by_job.get(job.job_id)
        if kept is not None and kept[0] == job.id:
            return kept[1]
        request: C.LaunchJobRequest | None
        if job.request is not None:
            request = C.LaunchJobRequest.FromString(job.request)
        elif (request := self.store.launch_request(job.job_id)) is None:
            raise LookupError(f"job {job.job_id} (row {job.id}) has no stored launch request")
        self._by_job[job.job_id] = (job.id, request)
        return request

    def drop(self, job_id: str) -> None:
        """Forget the request of the job ``job_id`` (it ended, or was replaced)."""
        self._by_job.pop(job_id, None)
