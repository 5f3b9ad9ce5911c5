"""The transport-free core: one method per ``iris.cluster.ControllerService`` RPC.

With a ``Cluster`` (the controller process always has one: the built-in profile unless
``--cluster-config`` names another), LaunchJob refuses what Iris would refuse on that cluster and
ListWorkers / GetAutoscalerStatus describe it (see ``controller.engine.cluster``).

Each method takes the request message and returns the response message (our generated
classes), or raises ``RpcError`` with a Connect/gRPC code. Semantics follow Iris:

* LaunchJob and ``existing_job_policy`` when the name is taken: ERROR → ALREADY_EXISTS;
  KEEP → the existing job if it is unfinished, else it is replaced; RECREATE → the existing
  job is killed (if unfinished) and replaced; UNSPECIFIED → a finished job is replaced, an
  unfinished one is ALREADY_EXISTS. Replacing deletes the old job's rows and logs, and those of
  every job below it (its whole tree, as Iris's delete cascades), and inserts the new job in one
  transaction (a crash leaves either the old tree or the new job, whole); the old tree's
  processes still stopping are then the engine's to finish (``Engine.forget``), and the
  replacement gets a new row id, so nothing of the old run reaches it.
* A request may name a bundle by ``bundle_id`` alone (no ``bundle_blob``), as a task's child does
  with its parent's: it must be one this controller holds (the sha256 of a zip it was sent), else
  INVALID_ARGUMENT.
* Child jobs (``/<user>/<parent>/<child>…``, as a task submits them): the parent must exist
  and be unfinished, else FAILED_PRECONDITION with Iris's words ("parent job … is absent from the
  database", "… has terminated (state=…)"), checked before the cluster profile and the existing
  name, as Iris orders its checks. A child's name cannot be an integer (``validation``).
* ListJobs: paging, scopes, filters and sort orders as Iris's (see ``job_query``). Each row has
  ``has_children``; as in Iris 0.2.227 a listed row leaves ``parent_job_id`` empty, GetJobStatus
  fills it.
* TerminateJob kills the job's unfinished tasks and every unfinished job below it, finished or
  not (Iris's ``cancel_job`` walks the whole subtree); the job itself ends "Terminated by user",
  the ones below "Parent job terminated".
* CompleteJob: every unfinished task becomes SUCCEEDED (its processes are stopped), then the
  job; a finished job is left as it is.
* LaunchJob and bands: a ``priority_band`` that is no band is INVALID_ARGUMENT, INHERIT is stored
  resolved, a band above the user's max band is PERMISSION_DENIED (``engine.budgets.Budgets.admit``).
* ListUsers, SetUserBudget, GetUserBudget, ListUserBudgets, GetSchedulerState: from the controller's
  own records, by Iris's rules (``users``, ``engine.budgets``).
* FetchLogs (finelog's log service, as a real controller proxies it): see ``logservice``.
* GetTaskLogs: ``id`` is a job id (all tasks; with ``include_children`` those of every job below
  it too) or a task id (``/<user>/<job>/<index>``, optionally ``:<attempt>``). Lines come back
  grouped per task, in capture order. The
  response ``cursor`` is the resume point: passing it back returns only lines captured
  after the ones already seen. ``tail`` returns the newest ``max_total_lines`` (0 → 10,000);
  ``truncated`` says the cap cut lines off (without ``tail`` the cursor then points just
  after the last line returned, so paging continues). ``substring`` and ``min_level`` filter as
  FetchLogs does (``logservice``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable
from pathlib import Path
from typing import Final, cast

from fray_jupyter.controller.api import checkpoint, job_query, messages, users, validation
from fray_jupyter.controller.api.inspector import Inspector
from fray_jupyter.controller.api.logservice import LogService
from fray_jupyter.controller.api.taskstatus import TaskStatusText
from fray_jupyter.controller.engine.attempt_lifecycle import now_ms
from fray_jupyter.controller.engine.cluster import Cluster
from fray_jupyter.controller.engine.engine import Engine
from fray_jupyter.controller.kernel.rows import JobRow, TaskRow
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.store.store import Descendant, Store
from fray_jupyter.iris.highlights import ROOT_CAUSE_LOG_TAIL, ROOT_CAUSE_STATES, root_cause_highlights
from fray_jupyter.iris.loglines import min_level_value
from fray_jupyter.iris.proto import controller_pb2, finelog_logging_pb2, finelog_stats_pb2, job_pb2
from fray_jupyter.iris.redaction import redact_env
from fray_jupyter.iris.states import TERMINAL_JOB_STATES, parent_job_id, task_id_for

C = controller_pb2.Controller
J = job_pb2
_DIGEST: Final[re.Pattern[str]] = re.compile(r"[0-9a-f]{64}")
DEFAULT_LOG_LINES: Final[int] = 10_000
MAX_LOG_LINES: Final[int] = 100_000


class ControllerService:
    """The RPC methods, over a store and an engine that share one event loop."""

    def __init__(self, store: Store, engine: Engine, bundle_dir: Path, cluster: Cluster | None = None) -> None:
        self.store = store
        self.engine = engine
        self.bundle_dir = bundle_dir
        self.cluster = cluster
        self.log_service = LogService(store)
        self.status_text = TaskStatusText(store, engine.stats)
        self.inspector = Inspector(store, lambda: engine.running, engine.stats.record_profile)

    # -- jobs -----------------------------------------------------------------------------------
    def launch_job(self, request: C.LaunchJobRequest) -> C.LaunchJobResponse:
        """Admit, store and queue a job (see the module rules for a child and an existing name)."""
        validation.validate_launch(request)
        self.engine.budgets.admit(request)
        job_id = request.name
        parent = parent_job_id(job_id)
        if parent:
            self._check_parent(parent)
        if self.cluster is not None:
            self.cluster.check_launch(request)
        existing = self.store.job(job_id)
        if existing is not None and self._keep_existing(existing, request.existing_job_policy):
            return C.LaunchJobResponse(job_id=job_id)
        stored = C.LaunchJobRequest()
        stored.CopyFrom(request)
        stored.ClearField("bundle_blob")
        bundle_path = ""
        if request.bundle_blob:
            digest = hashlib.sha256(request.bundle_blob).hexdigest()
            stored.bundle_id = stored.bundle_id or digest
            bundle_path = str(self._save_bundle(digest, request.bundle_blob))
        elif request.bundle_id:
            bundle_path = str(self._held_bundle(request.bundle_id))
        job = JobRow(
            id=0, job_id=job_id, name=job_id.lower(), user=validation.job_id_user(job_id), state=J.JOB_STATE_PENDING,
            submitted_ms=now_ms(), started_ms=None, finished_ms=None, error="", exit_code=None,
            status_message=messages.emulation_note(request.resources), replicas=request.replicas,
            coscheduled=int(request.HasField("coscheduling")), max_retries_failure=request.max_retries_failure,
            max_task_failures=request.max_task_failures, timeout_ms=request.timeout.milliseconds or None,
            scheduling_timeout_ms=request.scheduling_timeout.milliseconds or None, failure_count=0,
            preemption_count=0, request=stored.SerializeToString(),
            resources=request.resources.SerializeToString(), bundle_path=bundle_path, parent_job_id=parent,
        )
        replaced: list[str] = []
        with self.store.transaction():
            if existing is not None:
                replaced, _ = self.store.delete_tree(job_id)
            self.store.insert_job(job)
        for old in replaced:
            self.engine.forget(old)
        self.engine.submit(job)
        return C.LaunchJobResponse(job_id=job_id)

    def _check_parent(self, parent: str) -> None:
        """A child may only be launched under an unfinished parent (Iris's words when not)."""
        row = self.store.job(parent)
        if row is None:
            raise RpcError(Code.FAILED_PRECONDITION, f"Cannot submit job: parent job {parent} is absent from the database")
        if row.state in TERMINAL_JOB_STATES:
            raise RpcError(Code.FAILED_PRECONDITION, f"Cannot submit job: parent job {parent} has terminated "
                                                     f"(state={J.JobState.Name(row.state)})")

    def _keep_existing(self, existing: JobRow, policy: int) -> bool:
        """Apply ``existing_job_policy`` to a taken name: True to answer with the existing job,
        False to replace it, or raise ALREADY_EXISTS."""
        finished = existing.state in TERMINAL_JOB_STATES
        state = J.JobState.Name(existing.state)
        if policy == J.EXISTING_JOB_POLICY_ERROR:
            raise RpcError(Code.ALREADY_EXISTS, f"Job {existing.job_id} already exists (state={state})")
        if policy == J.EXISTING_JOB_POLICY_KEEP:
            return not finished
        if policy == J.EXISTING_JOB_POLICY_RECREATE:
            return False
        if not finished:
            raise RpcError(Code.ALREADY_EXISTS, f"Job {existing.job_id} already exists and is still running")
        return False

    def _held_bundle(self, bundle_id: str) -> Path:
        """The bundle a request names by id alone, as a task's child does (Iris's in-task client
        sends the task's ``IRIS_BUNDLE_ID``); INVALID_ARGUMENT when this controller holds none by
        that id."""
        path = self.bundle_dir / f"{bundle_id}.zip"
        if not _DIGEST.fullmatch(bundle_id) or not path.is_file():
            raise RpcError(Code.INVALID_ARGUMENT, f"bundle_id {bundle_id[:80]!r} names no bundle this controller "
                                                  "holds; send the workspace as bundle_blob")
        return path

    def _save_bundle(self, digest: str, blob: bytes) -> Path:
        path = self.bundle_dir / f"{digest}.zip"
        if not path.exists():
            self.bundle_dir.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(".tmp")
            temporary.write_bytes(blob)
            temporary.replace(path)
        return path

    def get_job_status(self, request: C.GetJobStatusRequest) -> C.GetJobStatusResponse:
        """The job's status and the request it was launched with, as Iris answers it: without file
        payloads, its environment redacted (every secret's value, credential-looking env vars:
        ``iris.redaction``), so whoever may read a job's status never reads its secrets."""
        job = self._job(request.job_id)
        counts = self.store.task_state_counts([job.job_id])[job.job_id]
        launched = self.store.launch_request(job.job_id)
        if launched is None:  # the row was read just above, in this same turn of the event loop
            raise RpcError(Code.NOT_FOUND, f"Job {job.job_id} not found")
        launched.entrypoint.ClearField("workdir_files")
        environment = launched.environment
        env_vars, secrets = redact_env(environment.env_vars, environment.secrets)
        environment.env_vars.clear()
        environment.env_vars.update(env_vars)
        environment.secrets.clear()
        environment.secrets.update(secrets)
        status = messages.job_status(job, counts, self.engine.pending_reason(job.job_id),
                                  has_children=bool(self.store.parents_among([job.job_id])),
                                  parent_job_id=job.parent_job_id)
        return C.GetJobStatusResponse(job=status, request=launched)

    def get_job_state(self, request: C.GetJobStateRequest) -> C.GetJobStateResponse:
        """States of the known ids among ``job_ids`` (unknown ids are left out)."""
        states = cast(dict[str, J.JobState], self.store.job_states(list(request.job_ids)))
        return C.GetJobStateResponse(states=states)

    def terminate_job(self, request: C.TerminateJobRequest) -> J.Empty:
        """Kill the job's unfinished tasks and every unfinished job below it (module rules); a
        finished job with nothing unfinished below it is left as it is."""
        job = self._job(request.job_id)
        self.engine.terminate(job.job_id, "Terminated by user")
        return J.Empty()

    def complete_job(self, request: C.CompleteJobRequest) -> J.Empty:
        """Mark the job and its unfinished tasks SUCCEEDED; a finished job is left as it is."""
        job = self._job(request.job_id)
        if job.state not in TERMINAL_JOB_STATES:
            self.engine.complete(job.job_id, "Completed by user")
        return J.Empty()

    def list_jobs(self, request: C.ListJobsRequest) -> C.ListJobsResponse:
        """One page of jobs matching ``request.query`` (see ``job_query``)."""
        page = job_query.jobs_query(request.query)
        if page is None:
            return C.ListJobsResponse()
        rows, total = self.store.query_jobs(page)
        ids = [row.job_id for row in rows]
        counts, parents = self.store.task_state_counts(ids), self.store.parents_among(ids)
        ledger = self.engine.slot_ledger()  # once per page, not per row: it reads every running and queued job
        jobs = [messages.job_status(row, counts[row.job_id], self.engine.pending_reason(row.job_id, ledger),
                                 has_children=row.job_id in parents) for row in rows]
        return C.ListJobsResponse(jobs=jobs, total_count=total, has_more=page.offset + page.limit < total)

    # -- tasks ----------------------------------------------------------------------------------
    def list_tasks(self, request: C.ListTasksRequest) -> C.ListTasksResponse:
        """Every task of the job, in index order, with its attempts."""
        job = self._job(request.job_id)
        attempts = self.store.attempts(job.job_id)
        archives = self.store.output_archives(job.job_id)
        reason = self.engine.slot_reason(job.job_id)
        return C.ListTasksResponse(tasks=[
            messages.task_status(job, task, [a for a in attempts if a.idx == task.idx], reason, archives)
            for task in self.store.tasks(job.job_id)
        ])

    def get_task_status(self, request: C.GetTaskStatusRequest) -> C.GetTaskStatusResponse:
        """One task's status, the job's per-task resources and, for a failed task, the likely
        root-cause lines of its log."""
        job, idx, _ = self._resolve(request.task_id, allow_job=False)
        assert idx is not None
        task = self.store.task(job.job_id, idx)
        assert task is not None
        status = messages.task_status(job, task, self.store.attempts(job.job_id, idx),
                                   self.engine.slot_reason(job.job_id), self.store.output_archives(job.job_id, idx))
        response = C.GetTaskStatusResponse(task=status, root_cause_highlights=self._root_cause(task))
        response.job_resources.ParseFromString(job.resources)
        return response

    def _root_cause(self, task: TaskRow) -> list[str]:
        """Iris's likely root-cause lines of a FAILED / WORKER_FAILED task, from the newest lines of
        its log, every attempt's (``iris.highlights``); empty in any other state."""
        if task.state not in ROOT_CAUSE_STATES:
            return []
        tail = self.store.read_logs(task.job_id, idx=task.idx, after_id=0, since_ms=0, substring="", attempt=None,
                                    limit=ROOT_CAUSE_LOG_TAIL, newest=True)
        return root_cause_highlights(task.state, [row.data for row in tail])

    def get_task_logs(self, request: C.GetTaskLogsRequest) -> C.GetTaskLogsResponse:
        """Captured lines of a job (with ``include_children``, of its whole tree) or task (see the
        module rules for cursor and tail)."""
        job, idx, attempt = self._resolve(request.id, allow_job=True)
        if request.HasField("attempt_id") and request.attempt_id >= 0:
            attempt = request.attempt_id
        jobs: list[JobRow | Descendant] = [job]
        if request.include_children and idx is None:
            jobs += self.store.descendants(job.job_id)
        ids = [one.job_id for one in jobs]
        limit = min(request.max_total_lines or DEFAULT_LOG_LINES, MAX_LOG_LINES)
        newest_id = self.store.last_log_id(ids)
        rows = self.store.read_logs(
            ids, idx=idx, after_id=max(request.cursor, 0), since_ms=request.since_ms,
            substring=request.substring, attempt=attempt, limit=limit + 1, newest=request.tail,
            min_level=min_level_value(request.min_level),
        )
        truncated = len(rows) > limit
        if truncated:
            rows = rows[1:] if request.tail else rows[:limit]
        cursor = rows[-1].id if truncated and not request.tail else max(newest_id, request.cursor)
        batches = {(one.job_id, index): C.TaskLogBatch(task_id=task_id_for(one.job_id, index), worker_id="")
                   for one in jobs for index in ([idx] if idx is not None else range(one.replicas))}
        for row in rows:
            batches[row.job_id, row.idx].logs.append(messages.log_entry(row))
        return C.GetTaskLogsResponse(task_logs=list(batches.values()), truncated=truncated, cursor=cursor)

    # -- capacity -------------------------------------------------------------------------------
    def list_workers(self, request: C.ListWorkersRequest) -> C.ListWorkersResponse:
        """The cluster profile's ready workers (none without a profile)."""
        return self.cluster.list_workers(request) if self.cluster is not None else C.ListWorkersResponse()

    def get_autoscaler_status(self, request: C.GetAutoscalerStatusRequest) -> C.GetAutoscalerStatusResponse:
        """The cluster profile's scale groups (UNIMPLEMENTED without a profile, as Iris without an autoscaler)."""
        if self.cluster is None:
            raise RpcError(Code.UNIMPLEMENTED, "this controller has no cluster profile (no autoscaler)")
        return self.cluster.autoscaler_status(request)

    def begin_checkpoint(self, request: C.BeginCheckpointRequest) -> C.BeginCheckpointResponse:
        """A snapshot of the store under ``<state dir>/controller-state`` and its counts (``checkpoint``)."""
        return checkpoint.begin_checkpoint(self.store, self.cluster)
    # -- users, budgets, the scheduler's queues (``engine.budgets``, ``users``) -----------------------
    def list_users(self, request: C.ListUsersRequest) -> C.ListUsersResponse:
        """Every user with a job or a budget row, with their unfinished work (``users``)."""
        del request
        return users.list_users(self.store)

    def set_user_budget(self, request: C.SetUserBudgetRequest) -> C.SetUserBudgetResponse:
        """Store one user's budget limit and max band."""
        return self.engine.budgets.set_user_budget(request, now_ms())

    def get_user_budget(self, request: C.GetUserBudgetRequest) -> C.GetUserBudgetResponse:
        """One user's limit, spend and max band."""
        return self.engine.budgets.get_user_budget(request)

    def list_user_budgets(self, request: C.ListUserBudgetsRequest) -> C.ListUserBudgetsResponse:
        """Every user with a budget row, with their spend."""
        return self.engine.budgets.list_user_budgets(request)

    def get_scheduler_state(self, request: C.GetSchedulerStateRequest) -> C.GetSchedulerStateResponse:
        """Pending and running tasks per band, user and job, and users' budget standing."""
        return self.engine.budgets.get_scheduler_state(request)

    def fetch_logs(self, request: finelog_logging_pb2.FetchLogsRequest) -> finelog_logging_pb2.FetchLogsResponse:
        """finelog's FetchLogs over the controller's log store (see ``logservice``)."""
        return self.log_service.fetch_logs(request)

    # -- endpoints (see ``engine.endpoint_registry``) ------------------------------------------
    def register_endpoint(self, request: C.RegisterEndpointRequest) -> C.RegisterEndpointResponse:
        """Register or renew a task's endpoint under a lease."""
        return self.engine.endpoints.register_endpoint(request)

    def unregister_endpoint(self, request: C.UnregisterEndpointRequest) -> J.Empty:
        """Forget an endpoint (idempotent)."""
        return self.engine.endpoints.unregister_endpoint(request)

    def list_endpoints(self, request: C.ListEndpointsRequest) -> C.ListEndpointsResponse:
        """Live task endpoints; under ``/system/`` the log server, where a task's Iris client sends its
        status text (``taskstatus``)."""
        if request.prefix.startswith("/system/"):
            return self.status_text.list_endpoints(request, self.engine.controller_url)
        return self.engine.endpoints.list_endpoints(request)

    # -- task status text (see ``taskstatus``) --------------------------------------------------

    def register_table(self, request: finelog_stats_pb2.RegisterTableRequest) -> finelog_stats_pb2.RegisterTableResponse:
        """finelog's RegisterTable, for ``iris.task_status`` only."""
        return self.status_text.register_table(request)

    def write_rows(self, request: finelog_stats_pb2.WriteRowsRequest) -> finelog_stats_pb2.WriteRowsResponse:
        """finelog's WriteRows: status text rows of this controller's tasks."""
        return self.status_text.write_rows(request)

    def query(self, request: finelog_stats_pb2.QueryRequest) -> finelog_stats_pb2.QueryResponse:
        """finelog's Query, over the ``iris.task_status`` table."""
        return self.status_text.query(request)

    # -- looking inside a running task (``inspector``) ------------------------------------------
    def profile_task(self, request: J.ProfileTaskRequest) -> Awaitable[J.ProfileTaskResponse]:
        """ProfileTask: a task attempt's or the controller's profile (awaited by the transport)."""
        return self.inspector.profile_task(request)

    def exec_in_container(self, request: C.ExecInContainerRequest) -> Awaitable[C.ExecInContainerResponse]:
        """ExecInContainer: a command in a running task (awaited by the transport)."""
        return self.inspector.exec_in_container(request)

    def get_process_status(self, request: J.GetProcessStatusRequest) -> J.GetProcessStatusResponse:
        """GetProcessStatus of the controller process."""
        return self.inspector.get_process_status(request)

    # -- lookups --------------------------------------------------------------------------------
    def _job(self, job_id: str) -> JobRow:
        job = self.store.job(job_id) if job_id else None
        if job is None:
            raise RpcError(Code.NOT_FOUND, f"Job {job_id} not found" if job_id else "job_id is required")
        return job

    def _resolve(self, some_id: str, *, allow_job: bool) -> tuple[JobRow, int | None, int | None]:
        """A job id (when allowed) or a task id ``<job id>/<index>[:<attempt>]`` →
        (job, task index or None, attempt or None); NOT_FOUND when nothing matches."""
        if allow_job and (job := self.store.job(some_id)) is not None:
            return job, None, None
        head, _, tail = some_id.rpartition("/")
        index_text, _, attempt_text = tail.partition(":")
        job = self.store.job(head) if head and index_text.isdigit() else None
        if job is None or int(index_text) >= job.replicas or (attempt_text and not attempt_text.isdigit()):
            kind = "Job or task" if allow_job else "Task"
            raise RpcError(Code.NOT_FOUND, f"{kind} {some_id} not found")
        return job, int(index_text), int(attempt_text) if attempt_text else None
