"""Iris status messages → the REST API's JSON (the shapes of ``server.contract``).

Rules: states are Iris's names (``iris.states``: ``JOB_STATE_RUNNING`` → ``"running"``, the form
``JobQuery.state_filter`` takes); times are epoch milliseconds or None
when unset; every job-provided string (name, error, status message, log line) is passed through
as data — the sidebar renders it as text, never as HTML.
"""

from __future__ import annotations

from collections.abc import Sequence

from fray_jupyter.client.diagnostics import Diagnosis
from fray_jupyter.client.results import TaskOutputs
from fray_jupyter.client.status_text import StatusText
from fray_jupyter.iris.attempts import RetryLimits, attempt_counts
from fray_jupyter.iris.loglines import LEVEL_NAMES
from fray_jupyter.iris.placement import device_text
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.proto.logging_pb2 import LogEntry
from fray_jupyter.iris.proto.time_pb2 import Timestamp
from fray_jupyter.iris.states import (
    is_job_finished,
    job_state_name,
    job_user_and_name,
    split_key,
    task_index,
    task_state_name,
)
from fray_jupyter.server import contract
from fray_jupyter.server.contract import Job, LogLine, Task


def epoch_ms(timestamp: Timestamp) -> int | None:
    """The timestamp's epoch milliseconds, None when unset."""
    return timestamp.epoch_ms or None


def job_json(job: job_pb2.JobStatus) -> Job:
    """One job as the list and the detail view show it; ``replicas`` is its task count."""
    user, short_name = job_user_and_name(job.job_id)
    return {
        "job_id": job.job_id,
        "parent_job_id": job.parent_job_id,
        "has_children": job.has_children,
        "name": job.name.rpartition("/")[2] or short_name or job.job_id,
        "user": job.submitting_user or user,
        "state": job_state_name(job.state),
        "terminal": is_job_finished(job.state),
        "replicas": job.task_count,
        "completed": job.completed_count,
        "task_state_counts": dict(job.task_state_counts),
        "failure_count": job.failure_count,
        "preemption_count": job.preemption_count,
        "pending_reason": job.pending_reason,
        "status_message": job.status_message,
        "error": job.error,
        "exit_code": job.exit_code,
        "submitted_ms": epoch_ms(job.submitted_at),
        "started_ms": epoch_ms(job.started_at),
        "finished_ms": epoch_ms(job.finished_at),
        "device": device_text(job.resources),
        "cpu_millicores": job.resources.cpu_millicores,
        "memory_bytes": job.resources.memory_bytes,
        "disk_bytes": job.resources.disk_bytes,
    }


def attempt_json(attempt: job_pb2.TaskAttempt) -> contract.Attempt:
    """One attempt of a task: how it ended, and when."""
    return contract.Attempt(
        attempt_id=attempt.attempt_id, state=task_state_name(attempt.state), exit_code=attempt.exit_code,
        error=attempt.error, worker_failure=attempt.is_worker_failure, started_ms=epoch_ms(attempt.started_at),
        finished_ms=epoch_ms(attempt.finished_at))


def task_json(task: job_pb2.TaskStatus, root_cause: Sequence[str] = (), status: StatusText | None = None) -> Task:
    """One task of a job, by index, with its current attempt, its attempts and what they charged
    (``iris.attempts``), its ``root_cause`` lines and the status text it reported (``status``)."""
    counts = attempt_counts(task.attempts)
    return {
        "task_id": task.task_id,
        "index": task_index(task.task_id),
        "state": task_state_name(task.state),
        "attempt": task.current_attempt_id,
        "attempts": len(task.attempts),
        "exit_code": task.exit_code,
        "error": task.error,
        "pending_reason": task.pending_reason,
        "worker_id": task.worker_id,
        "started_ms": epoch_ms(task.started_at),
        "finished_ms": epoch_ms(task.finished_at),
        "history": [attempt_json(attempt) for attempt in task.attempts],
        "failure_count": counts.failures,
        "preemption_count": counts.preemptions,
        "root_cause": list(root_cause),
        "status_text": status.detail_md if status else "",
        "status_summary": status.summary_md if status else "",
        "status_message": task.status_message,
    }


def limits_json(limits: RetryLimits) -> contract.RetryLimits:
    """The job's retry limits."""
    return contract.RetryLimits(max_task_failures=limits.max_task_failures,
                                max_retries_failure=limits.max_retries_failure,
                                max_retries_preemption=limits.max_retries_preemption)


def detail_json(diagnosis: Diagnosis) -> contract.JobDetail:
    """The job, its tasks (each with its root cause and status text) and its retry limits."""
    tasks = [task_json(task, diagnosis.root_causes.get(task.task_id, ()), diagnosis.status_texts.get(task.task_id))
             for task in diagnosis.tasks]
    return contract.JobDetail(job=job_json(diagnosis.status), tasks=tasks, limits=limits_json(diagnosis.limits))


def log_json(entry: LogEntry) -> LogLine:
    """One log line: which task and attempt wrote it, its cursor (``seq``), time, stream, text, level."""
    task_id, attempt = split_key(entry.key)
    return {
        "task_id": task_id,
        "attempt": attempt,
        "seq": entry.seq,
        "time_ms": epoch_ms(entry.timestamp),
        "source": entry.source,
        "data": entry.data,
        "level": LEVEL_NAMES.get(entry.level, "").lower(),
    }


def outputs_json(outputs: TaskOutputs) -> contract.TaskOutputs:
    """What one task's current attempt wrote (``client.results.task_outputs``)."""
    return contract.TaskOutputs(
        task_id=outputs.task_id, attempt=outputs.attempt, uri=outputs.uri, note=outputs.note,
        files=[contract.OutputFile(name=f.name, size=f.size, kind=f.kind) for f in outputs.files])
