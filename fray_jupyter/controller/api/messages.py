"""Stored rows → Iris status messages (``JobStatus``, ``TaskStatus``, ``LogEntry``), and the
honest one-line note on how a job's requested resources are emulated on this machine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, cast

from fray_jupyter.controller.kernel.rows import AttemptRow, JobRow, TaskRow
from fray_jupyter.controller.kernel.state_rules import COMPLETED_TASK_STATES
from fray_jupyter.controller.runtime.runner import WORKER_ID
from fray_jupyter.controller.store.logstore import LogRow
from fray_jupyter.iris.attempts import retry_reason
from fray_jupyter.iris.loglines import log_level
from fray_jupyter.iris.proto import job_pb2, logging_pb2, time_pb2
from fray_jupyter.iris.states import log_key, task_id_for, task_state_name

J = job_pb2
PENDING_FEEDBACK: Final[str] = "Pending scheduler feedback"
"""Iris's pending reason for a job its scheduler has not yet said anything about."""


def timestamp(epoch_ms: int) -> time_pb2.Timestamp:
    """An ``iris.time.Timestamp``."""
    return time_pb2.Timestamp(epoch_ms=epoch_ms)


def _size(num_bytes: int) -> str:
    return f"{num_bytes / 2**30:.4g} GiB"


def emulation_note(resources: job_pb2.ResourceSpecProto) -> str:
    """What the job asked for and how it runs here: requests describe the target cluster, so
    they are recorded, not enforced; an accelerator job runs on this machine's CPU."""
    cores = resources.cpu_millicores / 1000
    requested = (f"requested per task: {cores:g} core{'s' if cores != 1 else ''}, "
                 f"{_size(resources.memory_bytes)} RAM, {_size(resources.disk_bytes)} disk "
                 "(recorded, not enforced)")
    device = resources.device
    if device.HasField("tpu"):
        chips = f" ({device.tpu.count} chips/VM)" if device.tpu.count else ""
        return f"emulating {device.tpu.variant}{chips} on this machine's CPU; {requested}"
    if device.HasField("gpu"):
        return f"emulating {device.gpu.count}× {device.gpu.variant} per task on this machine's CPU; {requested}"
    return f"running on this machine; {requested}"


def job_status(job: JobRow, counts: Mapping[int, int], pending_reason: str, *, has_children: bool = False,
               parent_job_id: str = "") -> job_pb2.JobStatus:
    """A ``JobStatus`` as Iris fills it: ``pending_reason`` is the scheduler's explanation while
    PENDING (Iris's ``PENDING_FEEDBACK`` before there is one) and the job's error otherwise (e.g. why
    it is UNSCHEDULABLE); ``has_children`` and ``parent_job_id`` as the caller read them (Iris's
    listing leaves the parent empty)."""
    status = J.JobStatus(
        has_children=has_children, parent_job_id=parent_job_id,
        job_id=job.job_id, state=cast(J.JobState, job.state), exit_code=job.exit_code or 0, error=job.error,
        status_message=job.status_message, failure_count=job.failure_count,
        preemption_count=job.preemption_count, name=job.name, submitting_user=job.user,
        task_count=sum(counts.values()),
        completed_count=sum(count for state, count in counts.items() if state in COMPLETED_TASK_STATES),
        pending_reason=(pending_reason or PENDING_FEEDBACK) if job.state == J.JOB_STATE_PENDING else job.error,
    )
    status.resources.ParseFromString(job.resources)
    status.task_state_counts.update({task_state_name(state): count for state, count in counts.items()})
    status.submitted_at.CopyFrom(timestamp(job.submitted_ms))
    if job.started_ms is not None:
        status.started_at.CopyFrom(timestamp(job.started_ms))
    if job.finished_ms is not None:
        status.finished_at.CopyFrom(timestamp(job.finished_ms))
    return status


def task_status(job: JobRow, task: TaskRow, attempts: Sequence[AttemptRow], slot_reason: str,
                archives: Mapping[tuple[int, int], bytes] | None = None) -> job_pb2.TaskStatus:
    """A ``TaskStatus`` with its attempts (oldest first), each with its output archive record when
    ``archives`` (``(task index, attempt) → serialized TaskOutputArchive``) has one. A PENDING
    task's ``pending_reason`` is Iris's retry line when an attempt of it has ended
    (``iris.attempts.retry_reason``), else ``slot_reason`` (why its job waits for this controller's
    task slots, which Iris has no counterpart of; "" when it does not)."""
    last = attempts[-1].state if attempts else None
    retrying = retry_reason(task.state, max(task.attempt, 0), last)
    status = J.TaskStatus(
        task_id=task_id_for(job.job_id, task.idx), state=cast(J.TaskState, task.state), exit_code=task.exit_code or 0, error=task.error,
        current_attempt_id=max(task.attempt, 0), can_be_scheduled=task.state == J.TASK_STATE_PENDING,
        pending_reason=retrying or (slot_reason if task.state == J.TASK_STATE_PENDING else ""),
        status_message=job.status_message,
    )
    status.submitted_at.CopyFrom(timestamp(job.submitted_ms))
    if task.attempt >= 0:
        status.worker_id = WORKER_ID
    if task.started_ms is not None:
        status.started_at.CopyFrom(timestamp(task.started_ms))
    if task.finished_ms is not None:
        status.finished_at.CopyFrom(timestamp(task.finished_ms))
    for attempt in attempts:
        entry = status.attempts.add(
            attempt_id=attempt.attempt, worker_id=WORKER_ID, state=cast(J.TaskState, attempt.state),
            exit_code=attempt.exit_code or 0, error=attempt.error,
            is_worker_failure=bool(attempt.worker_failure), attempt_uid=attempt.uid,
        )
        if attempt.started_ms is not None:
            entry.started_at.CopyFrom(timestamp(attempt.started_ms))
        if attempt.finished_ms is not None:
            entry.finished_at.CopyFrom(timestamp(attempt.finished_ms))
        if (archive := (archives or {}).get((attempt.idx, attempt.attempt))) is not None:
            entry.output_archive.ParseFromString(archive)
    return status


def log_entry(row: LogRow) -> logging_pb2.LogEntry:
    """An ``iris.logging.LogEntry``; ``key`` is the attempt's task id, ``seq`` the cursor, ``level``
    Iris's for the line (``iris.loglines``)."""
    return logging_pb2.LogEntry(
        timestamp=timestamp(row.ts_ms), source=row.source, data=row.data, attempt_id=row.attempt,
        key=log_key(task_id_for(row.job_id, row.idx), row.attempt), seq=row.id,
        level=log_level(row.source, row.data),
    )
