"""``JobHandle``: a submitted job by id, with the client that reaches its controller.

It holds no job state of its own: every method asks the controller, so a handle made in one
kernel (``%%fray -o job``) stays right after the job changes, and ``JobHandle(id, client)`` can be
rebuilt anywhere from the id alone. A live panel for it is ``JobStatusPanel.of(handle)``
(``fray_jupyter.widgets``): the handle itself knows nothing of views or widgets.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from fray_jupyter.client import results
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.inspection import ExecResult, Profile, task_target
from fray_jupyter.client.logs import log_line
from fray_jupyter.client.results import TaskOutputs
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import job_state_name


class JobHandle:
    """The job ``job_id`` on ``client``'s controller."""

    def __init__(self, job_id: str, client: FrayClient) -> None:
        self.job_id = job_id
        self.client = client

    def __repr__(self) -> str:
        return f"JobHandle({self.job_id!r}, controller={self.client.url!r})"

    def status(self) -> job_pb2.JobStatus:
        """The job's current ``JobStatus``."""
        return self.client.status(self.job_id)

    @property
    def state(self) -> str:
        """The current state's name: ``"pending"``, ``"running"``, ``"succeeded"``, …"""
        return job_state_name(self.status().state)

    def tasks(self) -> tuple[job_pb2.TaskStatus, ...]:
        """The job's tasks, by index."""
        return self.client.tasks(self.job_id)

    def children(self) -> list[JobHandle]:
        """Handles of the job's direct child jobs (those its tasks submitted), oldest first, as
        the controller lists them (``ListJobs`` scope CHILDREN)."""
        return [JobHandle(child.job_id, self.client) for child in self.client.children(self.job_id)]

    def logs(self, *, tail: int = 0, include_children: bool = False) -> list[str]:
        """Log lines so far, each ``[<task>] <text>`` (with ``include_children``, the whole tree's,
        a child's as ``[<child>/<task>]``); ``tail`` keeps only the newest ones."""
        page = self.client.logs(self.job_id, tail=tail > 0, max_lines=tail, include_children=include_children)
        return [log_line(entry, self.job_id) for entry in page.entries]

    def follow(self, *, timeout: float | None = None, include_children: bool = False) -> Iterator[str]:
        """Log lines as they are written (with ``include_children``, the whole tree's), until the
        job ends."""
        for entry in self.client.follow(self.job_id, timeout=timeout, include_children=include_children):
            yield log_line(entry, self.job_id)

    def wait(self, timeout: float | None = None) -> job_pb2.JobStatus:
        """Block until the job is terminal and return its final status (``TimeoutError`` after
        ``timeout`` seconds)."""
        return self.client.wait(self.job_id, timeout=timeout)

    def results(self, timeout: float | None = None) -> list[Any]:
        """Wait for the job and return each task's return value, by task index (a job run from a
        Python callable). Raises ``RemoteError`` (the remote type, message and traceback) when a
        task's callable raised, ``ResultUnavailable`` when there is no value (see
        ``client.results``), ``TimeoutError`` after ``timeout`` seconds."""
        final = self.client.wait(self.job_id, timeout=timeout)
        return results.job_results(final, self.client.tasks(self.job_id))

    def result(self, timeout: float | None = None) -> Any:
        """``results()`` of a one-task job: its return value."""
        values = self.results(timeout)
        if len(values) != 1:
            raise ValueError(f"job {self.job_id} has {len(values)} tasks; results() returns one value per task")
        return values[0]

    def outputs(self, dest: Path | str | None = None) -> list[Path]:
        """The files the job's tasks wrote under ``$IRIS_OUTPUT_DIR`` (current attempt of each),
        unpacked under ``dest/<task index>/`` (default: a fresh temporary dir); their paths."""
        root = Path(dest) if dest is not None else results.default_outputs_dir(self.job_id)
        return [path for index, task in enumerate(self.tasks())
                for path in results.extract_outputs(task, root / str(index))]

    def output_files(self) -> list[TaskOutputs]:
        """What each task's current attempt wrote (names, sizes, the archive's URI), by task index."""
        return [results.task_outputs(task) for task in self.tasks()]

    def profile(self, task: int | str = 0, kind: str = "cpu", seconds: int = 10, fmt: str | None = None,
                **options: Any) -> Profile:
        """A ``kind`` profile (``cpu``, ``memory`` or ``threads``) of one task (an index, or
        ``"0:1"`` for an attempt) over ``seconds`` (``client.inspection``'s rules)."""
        return self.client.profile(task_target(self.job_id, task), kind, seconds, fmt, **options)

    def threads(self, task: int | str = 0, *, locals: bool = False, native: bool = False) -> str:
        """A thread dump of one task (py-spy dump): every thread's stack, as text."""
        return self.profile(task, "threads", locals=locals, native=native).text()

    def exec(self, argv: Sequence[str], task: int | str = 0, *, timeout: int = 60) -> ExecResult:
        """Run ``argv`` in one running task, in its working directory with its environment."""
        return self.client.exec(task_target(self.job_id, task), argv, timeout=timeout)

    def cancel(self) -> None:
        """Terminate the job: its unfinished tasks end KILLED, and so does every job below it."""
        self.client.terminate(self.job_id)
