"""The embedded controller's transport-free core in this process, for tests: its store, engine and
service on the current event loop (``run``), and waiting on the controller's own signal.

``Core.until(condition, what)`` re-checks ``condition`` each time the store records a change (a write
to a job, its tasks or its log lines: the change feed of ``controller.transport.changes``, which the controller's
watchers long-poll), and at least every ``RECHECK_S`` seconds for a condition on state outside the
store (the engine's memory, files). It fails, naming ``what`` and the last value seen, after
``tests/waiting.py``'s ``HANG_GUARD_S``: a guard against a hang, never a measure of how fast the
controller is.
"""

from __future__ import annotations

import asyncio
import io
import time
import zipfile
from collections.abc import Awaitable, Callable, Collection
from pathlib import Path
from typing import Final, TypeVar

import pytest

from fray_jupyter.controller.api.service import ControllerService
from fray_jupyter.controller.engine.engine import Engine
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.store.store import Store
from fray_jupyter.controller.transport.changes import ChangeFeed
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from tests.controller_harness import TERMINAL
from tests.waiting import HANG_GUARD_S

C = controller_pb2.Controller
J = job_pb2
T = TypeVar("T")
RECHECK_S: Final[float] = 0.5


class Core:
    """A service with its engine running on the current event loop, and the store's change feed."""

    def __init__(self, root: Path, slots: int) -> None:
        self.store = Store(root / "controller.sqlite3")
        self.feed = ChangeFeed()
        self.store.on_change = self.feed.touch
        self.engine = Engine(self.store, root / "work", slots)
        self.service = ControllerService(self.store, self.engine, root / "bundles")

    def launch(self, request: C.LaunchJobRequest) -> str:
        """LaunchJob; the job's id."""
        return self.service.launch_job(request).job_id

    def status(self, job_id: str) -> J.JobStatus:
        """GetJobStatus's job."""
        return self.service.get_job_status(C.GetJobStatusRequest(job_id=job_id)).job

    def tasks(self, job_id: str) -> list[J.TaskStatus]:
        """ListTasks's tasks."""
        return list(self.service.list_tasks(C.ListTasksRequest(job_id=job_id)).tasks)

    def lines(self, job_id: str) -> list[str]:
        """The job's stored log lines, every task's, in GetTaskLogs's order."""
        response = self.service.get_task_logs(C.GetTaskLogsRequest(id=job_id))
        return [entry.data for batch in response.task_logs for entry in batch.logs]

    async def until(self, condition: Callable[[], T | None], what: str) -> T:
        """``condition()``'s first true value, re-checked on every change (module rule)."""
        give_up = time.monotonic() + HANG_GUARD_S
        while not (value := condition()):
            left = give_up - time.monotonic()
            assert left > 0, f"never happened: {what} (last: {value!r})"
            await self.feed.wait(self.feed.revision, self.feed.epoch, min(RECHECK_S, left))
        return value

    async def wait(self, job_id: str, states: Collection[int] = TERMINAL) -> J.JobStatus:
        """The job's status once its state is one of ``states`` (by default, once it has ended)."""
        def reached() -> J.JobStatus | None:
            status = self.status(job_id)
            return status if status.state in states else None

        return await self.until(reached, f"{job_id} in states {sorted(states)}")

    async def running(self, job_id: str) -> None:
        """Until every task of the job is RUNNING."""
        await self.until(lambda: all(t.state == J.TASK_STATE_RUNNING for t in self.tasks(job_id)),
                         f"every task of {job_id} running")


def run(tmp_path: Path, body: Callable[[Core], Awaitable[None]], slots: int = 4) -> None:
    """Run ``body`` on a fresh ``Core`` under ``tmp_path`` with ``slots`` task slots, then close it."""
    async def main() -> None:
        core = Core(tmp_path, slots)
        runner = asyncio.ensure_future(core.engine.run())
        try:
            await body(core)
        finally:
            await core.engine.close()
            runner.cancel()
            core.store.close()

    asyncio.run(main())


def refused(code: Code, call: Callable[[], object]) -> str:
    """The message of the ``RpcError`` with ``code`` that ``call`` raises."""
    with pytest.raises(RpcError) as error:
        call()
    assert error.value.code == code, error.value.message
    return error.value.message


def zip_bundle(files: dict[str, str] | dict[str, bytes], *, deflated: bool = False) -> bytes:
    """A workspace bundle holding ``files`` (name to content), stored or deflated."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED if deflated else zipfile.ZIP_STORED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()
