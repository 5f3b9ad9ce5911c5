"""Why a job waits or failed, read whole from any controller: what the status panel, the sidebar's
REST answers and ``%fray status`` show beside the states.

Rules:

* The job's status and its launch request (``GetJobStatus``; kept as ``request``: what was sent, as
  the controller returns it), whose retry limits the counts are read against: ``max_task_failures`` (failed attempts over the whole job), ``max_retries_failure``
  and ``max_retries_preemption`` (per task).
* Its tasks with their attempts (``ListTasks``); a task's own failure and preemption counts come
  from its attempts by Iris's rule (``iris.attempts``), the job's from the controller.
* For each FAILED or WORKER_FAILED task, the controller's likely root-cause lines
  (``GetTaskStatus.root_cause_highlights``), for at most ``MAX_ROOT_CAUSE_TASKS`` tasks (the first
  by index: one call each).
* Each task's newest status text since the job was submitted (``FrayClient.status_texts``).
* A failed task's root cause starts with its memory against the request, from ``iris.task``
  (``client.usage.memory_root_cause``: "OOM-killed at 1.9 GiB of 2 GiB requested"), when the
  controller has samples of it; a controller without them leaves the lines as they are.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from fray_jupyter.client import usage
from fray_jupyter.client.errors import FrayError
from fray_jupyter.client.status_text import StatusText
from fray_jupyter.iris.attempts import RetryLimits
from fray_jupyter.iris.highlights import ROOT_CAUSE_STATES
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.proto.controller_pb2 import Controller

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient

MAX_ROOT_CAUSE_TASKS: Final[int] = 8


def retry_limits(request: Controller.LaunchJobRequest) -> RetryLimits:
    """The limits a launch request set."""
    return RetryLimits(request.max_task_failures, request.max_retries_failure, request.max_retries_preemption)


@dataclass(frozen=True)
class Diagnosis:
    """One job as its panel explains it (see the module rules); maps are keyed by task id."""

    status: job_pb2.JobStatus
    limits: RetryLimits
    tasks: tuple[job_pb2.TaskStatus, ...]
    root_causes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    status_texts: dict[str, StatusText] = field(default_factory=dict)
    request: Controller.LaunchJobRequest = field(default_factory=Controller.LaunchJobRequest)

    @property
    def details(self) -> dict[str, str]:
        """Task id → the markdown detail of the status text it reported (what the panel shows)."""
        return {task_id: text.detail_md for task_id, text in self.status_texts.items()}


def root_causes(client: FrayClient, tasks: Iterable[job_pb2.TaskStatus],
                most: int = MAX_ROOT_CAUSE_TASKS) -> dict[str, tuple[str, ...]]:
    """Task id → the controller's likely root-cause lines (``GetTaskStatus.root_cause_highlights``)
    for the first ``most`` of ``tasks`` that ended FAILED or WORKER_FAILED, in the order given: one
    call each."""
    failed = [task.task_id for task in tasks if task.state in ROOT_CAUSE_STATES][:most]
    return {task_id: tuple(client.task(task_id).root_cause_highlights) for task_id in failed}


def with_memory(client: FrayClient, job: job_pb2.JobStatus, tasks: Iterable[job_pb2.TaskStatus],
                causes: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """``causes`` with each task's memory line first (see the module rules)."""
    if not causes:
        return causes
    try:
        used = usage.job_usage(client, job)
    except (FrayError, ValueError):  # no iris.task namespace, or not a table
        return causes
    lines = {task.task_id: usage.memory_root_cause(task, used.get(task.task_id)) for task in tasks}
    return {task_id: ((line,) if (line := lines.get(task_id)) else ()) + found for task_id, found in causes.items()}


def diagnose(client: FrayClient, job_id: str) -> Diagnosis:
    """Read the job, its tasks, the failed ones' root causes and every task's status text."""
    answer = client.job(job_id)
    tasks = client.tasks(job_id)
    causes = with_memory(client, answer.job, tasks, root_causes(client, tasks))
    texts = client.status_texts([task.task_id for task in tasks], since_ms=answer.job.submitted_at.epoch_ms)
    return Diagnosis(answer.job, retry_limits(answer.request), tasks, causes, texts, answer.request)
