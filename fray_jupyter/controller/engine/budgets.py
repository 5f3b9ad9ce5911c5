"""Users' budgets and priority bands on the embedded controller, from its own records.

Iris's rules (``iris.budget``) applied to the store: per-user rows (``SetUserBudget``, kept in the
``user_budgets`` table), spend over the tasks that are active now, the band LaunchJob stores and the
band the scheduler gives each task. Rules of this controller:

* The default budget limit of a user without a row is ``default_limit``: unlimited (0) unless the
  controller was started with ``--budget-limit`` / ``$FRAY_CONTROLLER_BUDGET_LIMIT`` (a genuine Iris
  takes it from its cluster config, 1000 when that says nothing). The default max band is INTERACTIVE,
  as on Iris: a PRODUCTION or SYSTEM job needs ``SetUserBudget`` (``iris user budget set``) first.
* LaunchJob (``admit``): a value that is no band is INVALID_ARGUMENT; INHERIT is resolved (the
  parent job's stored band, else INTERACTIVE) and stored in the request; a band above the user's max
  band is PERMISSION_DENIED. Every caller the controller lets in may set budgets (as every loopback
  caller of a local Iris is an admin).
* Scheduling (``scheduling_order``): each pass gives every queued job its effective band from the
  spend of that moment and takes the jobs in Iris's order: bands highest first, inside a band users in
  turns, lowest spend first, each user's jobs oldest first (Iris takes turns task by task; here a job
  is one turn). The engine stamps the band on each task it places (``tasks.priority_band``, what
  ``GetSchedulerState`` reports for running tasks, as Iris does).
* ``GetSchedulerState``: pending tasks per (effective band, user, job), running tasks per (band placed
  at, user, job) with an empty worker and backend id (tasks run on this machine's slots, not workers);
  per user with a row or with spend: limit, spend, max band, the band INTERACTIVE work runs at, and the
  spend as a percentage of the limit (0 when unlimited).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Final, NamedTuple

from fray_jupyter.controller.kernel.state_rules import ACTIVE_TASK_STATES
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.runtime.runner import WORKER_ID
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.budget import (
    BANDS,
    DEFAULT_MAX_BAND,
    UNLIMITED,
    band_error,
    band_name,
    effective_band,
    max_band_refusal,
    resolve_band,
    scheduling_order,
    spend_by_user,
    task_value,
)
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.iris.states import job_user, parent_job_id

C = controller_pb2.Controller
J = job_pb2
LIMIT_ENV: Final[str] = "FRAY_CONTROLLER_BUDGET_LIMIT"
MAX_CACHED_JOBS: Final[int] = 100_000


class Terms(NamedTuple):
    """What the budget rules need of a stored job: its user, resolved band and one task's resource value."""

    user: str
    band: int
    task_value: int


def default_limit(option: int | None, environ: Mapping[str, str] = os.environ) -> int:
    """The default budget limit: ``option`` (``--budget-limit``), else ``$FRAY_CONTROLLER_BUDGET_LIMIT``,
    else unlimited (0). ``ValueError`` names a value that is not a whole number >= 0."""
    value: object = option if option is not None else environ.get(LIMIT_ENV, "").strip() or UNLIMITED
    try:
        limit = int(str(value))
    except ValueError:
        limit = -1
    if limit < 0:
        raise ValueError(f"budget limit {value!r} (--budget-limit or ${LIMIT_ENV}) must be a whole number >= 0 "
                         "(0: unlimited)")
    return limit


class Budgets:
    """The budget records and rules of one store (see the module docstring)."""

    def __init__(self, store: Store, default_limit: int = UNLIMITED, default_max_band: int = DEFAULT_MAX_BAND) -> None:
        self.store = store
        self.default_limit = default_limit
        self.default_max_band = default_max_band
        self._terms: dict[int, Terms] = {}

    # -- records ----------------------------------------------------------------------------------
    def budget(self, user: str) -> tuple[int, int]:
        """``(limit, max band)`` of ``user``: their row, else the defaults."""
        return self.store.user_budgets().get(user, (self.default_limit, self.default_max_band))

    def terms(self, job_id: str, row_id: int) -> Terms:
        """The stored job's ``Terms`` (row ids are never reused, so they are cached by row id)."""
        cached = self._terms.get(row_id)
        if cached is not None:
            return cached
        job = self.store.job(job_id)
        request = self.store.launch_request(job_id)
        if job is None or job.id != row_id or request is None:
            return Terms(job_user(job_id), J.PRIORITY_BAND_INTERACTIVE, 0)
        terms = Terms(job_user(job_id), resolve_band(request.priority_band),
                      task_value(J.ResourceSpecProto.FromString(job.resources)))
        if len(self._terms) >= MAX_CACHED_JOBS:
            self._terms.clear()
        self._terms[row_id] = terms
        return terms

    def spend(self) -> dict[str, int]:
        """Each user's spend now: the resource value of their active tasks, BATCH jobs left out."""
        active = ((job_id, self.terms(job_id, row_id), count)
                  for job_id, row_id, _, count in self.store.task_counts(ACTIVE_TASK_STATES))
        return spend_by_user((job_id, terms.band, terms.task_value, count) for job_id, terms, count in active)

    def effective_bands(self, jobs: Iterable[tuple[str, int]], spend: Mapping[str, int]) -> list[tuple[str, int]]:
        """``(user, effective band)`` of each ``(job id, row id)`` given, with the users' ``spend``."""
        rows, default = self.store.user_budgets(), self.default_limit
        bands = []
        for job_id, row_id in jobs:
            user, band, _ = self.terms(job_id, row_id)
            row = rows.get(user)
            bands.append((user, effective_band(band, spend.get(user, 0), row[0] if row else default)))
        return bands

    def scheduling_order(self, queued: Sequence[tuple[str, int]]) -> tuple[list[int], dict[str, int]]:
        """Iris's order (``iris.budget.scheduling_order``) of the queued ``(job id, row id)``, oldest
        first, a job taking one turn: their indices, and each job's effective band now."""
        spend = self.spend()
        bands = self.effective_bands(queued, spend)
        by_job = {job_id: band for (job_id, _), (_, band) in zip(queued, bands, strict=True)}
        return scheduling_order(bands, spend), by_job

    # -- LaunchJob --------------------------------------------------------------------------------
    def admit(self, request: C.LaunchJobRequest) -> None:
        """Apply LaunchJob's band rules (see the module docstring); the request keeps the resolved band."""
        if (error := band_error(request.priority_band)) is not None:
            raise RpcError(Code.INVALID_ARGUMENT, error)
        parent_id = parent_job_id(request.name)
        parent = self.store.job(parent_id) if parent_id else None
        inherited = self.terms(parent.job_id, parent.id).band if parent is not None else None
        band = resolve_band(request.priority_band, inherited)
        user = job_user(request.name)
        refusal = max_band_refusal(user, band, self.budget(user)[1])
        if refusal is not None:
            raise RpcError(Code.PERMISSION_DENIED, refusal)
        request.priority_band = band  # type: ignore[assignment]

    # -- the RPCs ---------------------------------------------------------------------------------
    def set_user_budget(self, request: C.SetUserBudgetRequest, now_ms: int) -> C.SetUserBudgetResponse:
        """Store one user's limit and max band (an unset max band is INTERACTIVE)."""
        if not request.user_id:
            raise RpcError(Code.INVALID_ARGUMENT, "user_id is required")
        max_band = request.max_band or J.PRIORITY_BAND_INTERACTIVE
        if max_band not in BANDS:
            names = ", ".join(band_name(band) for band in BANDS)
            raise RpcError(Code.INVALID_ARGUMENT, f"max_band {request.max_band} is not one of {names}")
        self.store.set_user_budget(request.user_id, request.budget_limit, max_band, now_ms)
        return C.SetUserBudgetResponse()

    def get_user_budget(self, request: C.GetUserBudgetRequest) -> C.GetUserBudgetResponse:
        """One user's limit, spend and max band (the defaults for a user without a row)."""
        if not request.user_id:
            raise RpcError(Code.INVALID_ARGUMENT, "user_id is required")
        limit, max_band = self.budget(request.user_id)
        return C.GetUserBudgetResponse(user_id=request.user_id, budget_limit=limit, max_band=max_band,  # type: ignore[arg-type]
                                       budget_spent=self.spend().get(request.user_id, 0))

    def list_user_budgets(self, request: C.ListUserBudgetsRequest) -> C.ListUserBudgetsResponse:
        """Every user with a budget row, with their spend."""
        del request
        spend = self.spend()
        return C.ListUserBudgetsResponse(users=[
            C.GetUserBudgetResponse(user_id=user, budget_limit=limit, max_band=max_band,  # type: ignore[arg-type]
                                    budget_spent=spend.get(user, 0))
            for user, (limit, max_band) in self.store.user_budgets().items()])

    def get_scheduler_state(self, request: C.GetSchedulerStateRequest) -> C.GetSchedulerStateResponse:
        """Pending and running tasks per band, user and job, and every user's budget standing. Running
        tasks name ``WORKER_ID``, the worker their ``TaskStatus`` names (this machine runs them all)."""
        del request
        spend, rows = self.spend(), self.store.user_budgets()
        pending = self.store.task_counts([J.TASK_STATE_PENDING])
        bands = self.effective_bands(((job_id, row_id) for job_id, row_id, _, _ in pending), spend)
        response = C.GetSchedulerStateResponse()
        for (job_id, _, _, count), (user, band) in zip(pending, bands, strict=True):
            response.pending_buckets.add(band=band, user_id=user, job_id=job_id, count=count)
        for job_id, _, band, count in self.store.task_counts([J.TASK_STATE_RUNNING]):
            response.running_buckets.add(band=band, user_id=job_user(job_id), job_id=job_id, count=count,
                                         worker_id=WORKER_ID)
        response.total_pending = sum(bucket.count for bucket in response.pending_buckets)
        response.total_running = sum(bucket.count for bucket in response.running_buckets)
        standing = {**{user: (self.default_limit, self.default_max_band) for user in spend}, **rows}
        for user, (limit, max_band) in standing.items():
            spent = spend.get(user, 0)
            response.user_budgets.add(
                user_id=user, budget_limit=limit, budget_spent=spent, max_band=max_band,
                effective_band=effective_band(J.PRIORITY_BAND_INTERACTIVE, spent, limit),
                utilization_percent=spent / limit * 100.0 if limit > 0 else 0.0)
        return response
