"""A stand-in for ``FrayClient`` that a test scripts: the job's state, its tasks, its log rows, its
children and endpoints are fields the test sets, and every call is recorded (the status panel's
and the live feed's tests drive it)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from fray_jupyter.client.client import JobPage
from fray_jupyter.client.logs import LogPage
from fray_jupyter.client.status_text import StatusText
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.proto.logging_pb2 import LogEntry
from fray_jupyter.iris.proto.time_pb2 import Timestamp
from fray_jupyter.views import job as view

JOB = "/alice/train"
XSS = "<img src=x onerror=alert(1)>"


@dataclass
class ScriptedController:
    """A stand-in ``FrayClient``: the test sets ``state``/``tasks``/``rows``; every call is counted."""

    state: int = J.JOB_STATE_RUNNING
    error: str = ""
    url: str = "http://scripted.invalid"
    dashboard_url: None = None  # no named cluster: no dashboard to link endpoints through
    task_states: list[int] = field(default_factory=lambda: [J.TASK_STATE_RUNNING, J.TASK_STATE_RUNNING])
    rows: list[LogEntry] = field(default_factory=list)
    fail_with: Exception | None = None
    terminate_error: Exception | None = None
    calls: list[float] = field(default_factory=list)
    terminated: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    root_cause: list[str] = field(default_factory=list)
    texts: dict[str, StatusText] = field(default_factory=dict)
    children: list[J.JobStatus] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)
    log_calls: list[tuple[str, bool]] = field(default_factory=list)
    registered: list[Controller.Endpoint] = field(default_factory=list)

    def add_log(self, task: int, text: str, attempt: int = 0) -> None:
        with self.lock:
            self.rows.append(LogEntry(key=f"{JOB}/{task}:{attempt}", data=text, attempt_id=attempt,
                                      seq=len(self.rows) + 1))

    def status(self, job_id: str) -> J.JobStatus:
        self.calls.append(time.monotonic())
        if self.fail_with is not None:
            raise self.fail_with
        done = sum(s in (J.TASK_STATE_SUCCEEDED, J.TASK_STATE_KILLED) for s in self.task_states)
        status = J.JobStatus(job_id=job_id, name=f"train {XSS}", state=self.state, error=self.error,  # type: ignore[arg-type]
                             task_count=len(self.task_states), completed_count=done,
                             has_children=any(c.job_id.startswith(job_id + "/") for c in self.children),
                             submitted_at=Timestamp(epoch_ms=1_000), pending_reason="no slot <free>",
                             status_message="emulating v5p-8")
        if view.is_terminal(status):
            status.finished_at.epoch_ms = 6_200
            status.exit_code = 0 if self.state == J.JOB_STATE_SUCCEEDED else 1
        return status

    def job(self, job_id: str) -> Controller.GetJobStatusResponse:
        return Controller.GetJobStatusResponse(job=self.status(job_id), request=Controller.LaunchJobRequest(
            max_task_failures=1, max_retries_failure=0, max_retries_preemption=100))

    def task(self, task_id: str) -> Controller.GetTaskStatusResponse:
        return Controller.GetTaskStatusResponse(root_cause_highlights=self.root_cause)

    def status_texts(self, task_ids: object, *, since_ms: int = 0) -> dict[str, StatusText]:
        return dict(self.texts)

    def query_stats(self, sql: str) -> list[dict[str, object]]:
        """No usage has been sampled: every stats query answers no rows."""
        return []

    def list(self, *, scope: str = "roots", parent: str = "", limit: int = 50, **_: object) -> JobPage:
        assert scope == "children", scope
        self.listed.append(parent)
        below = [job for job in self.children if job.job_id.rsplit("/", 1)[0] == parent]
        return JobPage(tuple(below[:limit]), len(below), len(below) > limit)

    def tasks(self, job_id: str) -> tuple[J.TaskStatus, ...]:
        tasks = []
        for index, state in enumerate(self.task_states):
            task = J.TaskStatus(task_id=f"{job_id}/{index}", state=state, worker_id="fray-local",  # type: ignore[arg-type]
                                current_attempt_id=0)
            if state in (J.TASK_STATE_FAILED, J.TASK_STATE_SUCCEEDED, J.TASK_STATE_KILLED):
                task.finished_at.epoch_ms = 6_000
                task.exit_code = 2 if state == J.TASK_STATE_FAILED else 0
                task.error = "command failed with exit code 2" if state == J.TASK_STATE_FAILED else ""
            tasks.append(task)
        return tuple(tasks)

    def logs(self, job_id: str, *, cursor: int = 0, include_children: bool = False, **_: object) -> LogPage:
        self.log_calls.append((job_id, include_children))
        with self.lock:
            rows = tuple(row for row in self.rows if row.seq > cursor)
        return LogPage(rows, max([cursor, *(row.seq for row in rows)]))

    def endpoints(self, prefix: str = "", **_: object) -> tuple[Controller.Endpoint, ...]:
        return tuple(e for e in self.registered if e.name.startswith(prefix))

    def terminate(self, job_id: str) -> None:
        if self.terminate_error is not None:
            raise self.terminate_error
        self.terminated = True
        self.state = J.JOB_STATE_KILLED
        self.task_states = [J.TASK_STATE_KILLED for _ in self.task_states]
