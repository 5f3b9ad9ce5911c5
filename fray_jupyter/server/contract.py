"""The JSON the server extension answers, once: each REST body as a ``TypedDict``.

Rules: ``serialize`` and the handlers build their answers as these types (``mypy --strict`` checks
every key and value), and ``labextension/src/types.ts`` declares the same shapes as ``I<Name>``
interfaces, field for field (``tests/test_server_contract.py`` fails when they disagree). Times are
epoch milliseconds or null; every string that came from a job is data.

They are ``TypedDict``, not pydantic models: the extension only re-shapes Iris messages it already
trusts, and importing the server must not load pydantic (``tests/test_import_budget.py``).
"""

from __future__ import annotations

from typing import TypedDict


class Job(TypedDict):
    """One job as the list and the detail view show it: ``replicas`` is its task count, ``name`` its id's
    last component; ``parent_job_id`` ("" for a root) and ``has_children`` as the controller says them."""

    job_id: str
    parent_job_id: str
    has_children: bool
    name: str
    user: str
    state: str
    terminal: bool
    replicas: int
    completed: int
    task_state_counts: dict[str, int]
    failure_count: int
    preemption_count: int
    pending_reason: str
    status_message: str
    error: str
    exit_code: int
    submitted_ms: int | None
    started_ms: int | None
    finished_ms: int | None
    device: str
    cpu_millicores: int
    memory_bytes: int
    disk_bytes: int


class Attempt(TypedDict):
    """One attempt of a task (each retry is one): how it ended, and when; ``worker_failure``: its
    worker was lost rather than the task failing."""

    attempt_id: int
    state: str
    exit_code: int
    error: str
    worker_failure: bool
    started_ms: int | None
    finished_ms: int | None


class Task(TypedDict):
    """One task of a job, by index, with its current attempt, every attempt (``history``, oldest
    first), what they charged (``failure_count``, ``preemption_count``: Iris's rule over the attempts),
    for a failed task the likely root-cause log lines (``root_cause``, the exception line last), and
    the status text it reported (markdown: ``status_text`` in full, ``status_summary`` one line;
    "" when none) beside the controller's own ``status_message``."""

    task_id: str
    index: int | None
    state: str
    attempt: int
    attempts: int
    exit_code: int
    error: str
    pending_reason: str
    worker_id: str
    started_ms: int | None
    finished_ms: int | None
    history: list[Attempt]
    failure_count: int
    preemption_count: int
    root_cause: list[str]
    status_text: str
    status_summary: str
    status_message: str


class RetryLimits(TypedDict):
    """What the job allows: failed attempts over the whole job, and per task failures and
    preemptions before it stops retrying."""

    max_task_failures: int
    max_retries_failure: int
    max_retries_preemption: int


class LogLine(TypedDict):
    """One log line: which task and attempt wrote it, its cursor (``seq``), time, stream, text, and
    its level (Iris's name in lower case, ``""`` when unknown)."""

    task_id: str
    attempt: int
    seq: int
    time_ms: int | None
    source: str
    data: str
    level: str


class JobPage(TypedDict):
    """``GET /fray/jobs``: one page, the matches before paging, whether more follow."""

    jobs: list[Job]
    total: int
    has_more: bool


class JobDetail(TypedDict):
    """``GET /fray/jobs/<id>``: the job, its tasks and its retry limits."""

    job: Job
    tasks: list[Task]
    limits: RetryLimits


class TaskDetail(TypedDict):
    """``GET /fray/jobs/<id>/tasks/<index>``: one task (its root cause whatever the number of failed
    tasks) and the job's retry limits."""

    task: Task
    limits: RetryLimits


class CancelResult(TypedDict):
    """``POST /fray/jobs/<id>/cancel``: the job after the cancel."""

    job: Job


class LogPage(TypedDict):
    """``GET /fray/jobs/<id>/logs``: lines after the cursor, and the cursor for the next call."""

    entries: list[LogLine]
    cursor: int


class ControllerStatus(TypedDict):
    """``GET /fray/status``: the controller's URL, whether it answers, why not, the user, the cluster
    and the origin of its Iris dashboard."""

    url: str
    reachable: bool
    error: str | None
    user: str | None
    cluster: str | None
    """The named Marin cluster the server is on; None: the embedded controller (or a URL)."""
    dashboard_url: str | None
    """The origin of that cluster's own Iris dashboard (a job's page is ``<origin>/#/job/<id>``,
    the id percent-encoded whole); None off a named cluster."""


class UserSummary(TypedDict):
    """One user with work on the controller (Iris's ``ListUsers``): how many of their jobs are in
    each unfinished state and how many of those jobs' tasks in each state, by state name."""

    user: str
    job_state_counts: dict[str, int]
    task_state_counts: dict[str, int]


class UserList(TypedDict):
    """``GET /fray/users``: every user with work (or a budget) on the controller, the busiest first."""

    users: list[UserSummary]


class ClusterChoice(TypedDict):
    """A named cluster the user can switch to; ``logged_in``: the credential store has a record."""

    name: str
    logged_in: bool


class ClusterList(TypedDict):
    """``GET``/``POST /fray/clusters``: the cluster the server is on (None: the embedded controller),
    the one line saying what to install for named clusters (None when they work), the choices."""

    current: str | None
    available: str | None
    clusters: list[ClusterChoice]


class PushEvent(TypedDict):
    """One event of the ``GET /fray/events`` stream (``server.watch``): ``kind`` "hello" (with how
    the server learns of changes: ``source`` "feed", "poll" or ""), "changed" (``jobIds``; empty:
    re-read everything) or "error" (``message``)."""

    kind: str
    source: str
    jobIds: list[str]
    message: str


class OutputFile(TypedDict):
    """One entry a task wrote under ``$IRIS_OUTPUT_DIR``: path inside it, bytes, "file"/"dir"/"link"."""

    name: str
    size: int
    kind: str


class TaskOutputs(TypedDict):
    """What a task's current attempt wrote: the archive's URI, why there are no files ("" when
    there are), and the files."""

    task_id: str
    attempt: int
    uri: str
    note: str
    files: list[OutputFile]


class JobOutputs(TypedDict):
    """``GET /fray/jobs/<id>/outputs``: each task's outputs, by index."""

    tasks: list[TaskOutputs]


class Endpoint(TypedDict):
    """One endpoint a task registered (an actor, XProf): its name, address, task, and ``link`` through
    the cluster's proxy (``iris.wire.proxy_link``; "" where there is none, as on the embedded controller)."""

    name: str
    address: str
    task_id: str
    link: str


class JobEndpoints(TypedDict):
    """``GET /fray/jobs/<id>/endpoints``: the endpoints registered under the job (its children's
    too), by name; empty where the controller keeps no endpoint registry."""

    endpoints: list[Endpoint]


class ApiError(TypedDict):
    """Any refused request: a message for the person and a stable ``code``."""

    message: str
    code: str


class SessionRow(TypedDict):
    """One session (``session.facts``): its job, name, state and slice (``device``); its hosts, how
    many are ready, whether one runs a cell, how long it has been idle and when it releases the
    slice (ms; null while a cell runs, or never), and all of that as the one ``line`` ``%fray jobs``
    shows."""

    job_id: str
    name: str
    state: str
    device: str
    hosts: int
    ready: int
    running: bool
    idle_ms: int | None
    releases_in_ms: int | None
    line: str


class SessionList(TypedDict):
    """``GET /fray/sessions``: the sessions with a host ready, by job id."""

    sessions: list[SessionRow]


class UsageSample(TypedDict):
    """One ``iris.task`` sample for a sparkline: when (epoch ms), CPU (millicores), memory (MiB)."""

    ts: int
    cpu: int
    mem: int


class TaskUsage(TypedDict):
    """``GET /fray/jobs/<id>/usage``, one task (``server.usage``): its newest sample (``now_*``,
    null before the first), its peak memory, what its job requested per task, its recent samples
    oldest first, the over-request ``warning`` ("" when none), the ready words of its numbers
    (``memory_text``; ``cpu_text`` and ``requested_cpu_text`` in cores), when it last reported status text and last wrote a log line,
    and ``quiet_since_ms``: its newest sign of life while it runs (null when not running)."""

    task_id: str
    index: int | None
    state: str
    now_cpu_millicores: int | None
    now_memory_mb: int | None
    peak_memory_mb: int
    requested_cpu_millicores: int
    requested_memory_mb: int
    samples: list[UsageSample]
    warning: str
    memory_text: str
    cpu_text: str
    requested_cpu_text: str
    status_ms: int | None
    last_output_ms: int | None
    quiet_since_ms: int | None


class UsageTotals(TypedDict):
    """A job tree's totals (``client.usage.tree_totals``) and the one line that says them
    (``views.usage.totals_words``)."""

    cpu_hours: float
    wall_hours: float
    peak_memory_mb: int
    tasks: int
    text: str


class JobUsage(TypedDict):
    """``GET /fray/jobs/<id>/usage``: each task's usage, by index, the tree's totals, and why there is
    none when the controller's stats could not be read ("" when they could), and how long a running
    task may be quiet before it is said to be silent (``client.liveness``)."""

    job_id: str
    tasks: list[TaskUsage]
    totals: UsageTotals
    note: str
    silence_after_ms: int


class TimelineEntry(TypedDict):
    """One entry of a task's timeline: an ``iris.task_event`` row (``kind`` "event") or a state
    change the controller's ``TaskStatus`` attempts record (``kind`` "state": submitted, running,
    exited), with its time (epoch ms), type (Normal/Warning), reason, message and source."""

    kind: str
    task_id: str
    attempt_id: int
    ts_ms: int
    type: str
    reason: str
    message: str
    source: str


class JobEvents(TypedDict):
    """``GET /fray/jobs/<id>/events``: the job's task timeline, newest first."""

    events: list[TimelineEntry]


class ProfileCapture(TypedDict):
    """A task's profile capture (``server.captures``): ``origin`` "server" (this Jupyter server made it)
    or "controller" (its ``iris.profile``; ``size`` 0: not known); ``note`` why it holds no profile."""

    capture_id: str
    task_index: int
    attempt: int | None
    kind: str
    format: str
    seconds: int
    captured_ms: int
    size: int
    origin: str
    trigger: str
    note: str


class ProfileHistory(TypedDict):
    """``GET /fray/jobs/<id>/profiles``: the job's captures, newest first; why the controller's are not listed."""

    captures: list[ProfileCapture]
    note: str


class ThreadDump(TypedDict):
    """``GET /fray/jobs/<id>/profiles/<capture>?view=lines``: a thread dump's lines, each one's kind
    (``server.threads``: "own", "library", "thread" …), and how many are the task's own frames."""

    lines: list[str]
    kinds: list[str]
    own_frames: int


class ResubmitResult(TypedDict):
    """``POST /fray/jobs/<id>/resubmit``: the new job's id and the new job."""

    job_id: str
    job: Job


class CapacityResource(TypedDict):
    """A group's accelerator, ``CPU`` or ``memory``: held, asked for by running tasks, left, in words."""

    name: str
    total: float
    used: float
    free: float
    total_text: str
    used_text: str
    free_text: str


class CapacityGroup(TypedDict):
    """A scale group (``server.capacity``; "" for workers of no known group), its availability status
    in words with its tone and reason, and its resources."""

    name: str
    device: str
    workers: int
    healthy: int
    slices: str
    status: str
    tone: str
    reason: str
    demand: int
    resources: list[CapacityResource]


class CapacityWorker(TypedDict):
    """A worker: its health in words and tone, tasks on it, the largest share of a resource in use
    (``load``, 0…1), and what it holds, uses and has free in one ``line``."""

    worker_id: str
    group: str
    status: str
    tone: str
    tasks: int
    load: float
    line: str
    message: str


class CapacityPending(TypedDict):
    """A job with tasks waiting, how many, and the controller's reason."""

    job_id: str
    tasks: int
    reason: str


class Capacity(TypedDict):
    """``GET /fray/capacity``: groups, workers, the jobs that wait and why; what could not be read."""

    groups: list[CapacityGroup]
    workers: list[CapacityWorker]
    pending: list[CapacityPending]
    running_tasks: int
    pending_tasks: int
    note: str
