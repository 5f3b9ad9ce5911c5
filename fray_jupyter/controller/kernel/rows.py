"""A job, its tasks and their attempts as plain rows: what the store reads and writes, and what the
kernel's rules (``transitions``) decide over. Values only: no I/O, no behaviour."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class JobRow:
    """One job as stored. ``request`` is the serialized LaunchJobRequest without its bundle, given
    to ``insert_job``; a row read back has None there (reads leave the blob out: ``launch_request``
    reads it)."""

    id: int
    job_id: str
    name: str
    user: str
    state: int
    submitted_ms: int
    started_ms: int | None
    finished_ms: int | None
    error: str
    exit_code: int | None
    status_message: str
    replicas: int
    coscheduled: int
    max_retries_failure: int
    max_task_failures: int
    timeout_ms: int | None
    scheduling_timeout_ms: int | None
    failure_count: int
    preemption_count: int
    request: bytes | None
    resources: bytes
    bundle_path: str
    cleaned_ms: int | None = None
    parent_job_id: str = ""
    """The job this one is a child of ("" for a root job)."""


@dataclass
class TaskRow:
    """One task (replica) of a job; ``attempt`` is the current attempt id (-1: none yet)."""

    job_id: str
    idx: int
    state: int
    attempt: int
    failure_count: int
    preemption_count: int
    exit_code: int | None
    error: str
    started_ms: int | None
    finished_ms: int | None


@dataclass
class AttemptRow:
    """One run of a task; ``pid``/``pgid``/``proc_start`` identify its live process group."""

    job_id: str
    idx: int
    attempt: int
    uid: str
    state: int
    exit_code: int | None
    error: str
    started_ms: int | None
    finished_ms: int | None
    pid: int | None
    pgid: int | None
    proc_start: str
    workdir: str
    worker_failure: int
