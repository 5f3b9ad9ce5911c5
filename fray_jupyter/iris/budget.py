"""What Iris 0.2.227 charges a job against its user's budget, and at which priority band it really runs.

Pure functions over the wire (a ``LaunchJobRequest``, ``GetUserBudget`` and ``GetSchedulerState``
answers): the embedded controller applies them to its own records and the preview (picker,
``%%fray --dry-run``, ``fray-jupyter plan --check``) to a controller's answers, so the two cannot
disagree. Rules, read from Iris's controller (``budget.py``, ``ops/job.py``, ``jobs.py``,
``backend_status.py``, ``scheduling/policy.py``) and measured on a genuine local cluster:

* **Bands**, highest first: SYSTEM, PRODUCTION, INTERACTIVE, BATCH (SYSTEM and PRODUCTION are the
  admin bands). LaunchJob resolves INHERIT once and stores the result: a child job takes its parent's
  band, a root job INTERACTIVE. Any other value is INVALID_ARGUMENT.
* **Max band**: a job whose band outranks its user's ``max_band`` (INTERACTIVE for a user without a
  budget row) is refused PERMISSION_DENIED. Without an auth provider (a local Iris, the embedded
  controller) this holds for the admin bands too.
* **Resource value** of one task: 1000 per accelerator + RAM in GiB + 5 per CPU core, each of the last
  two rounded down. Accelerators are the device's count: a TPU task has its VM's chips (a v5p-64 task
  has 4, its job 8 tasks), a GPU task its GPUs (a GPU device that names no count counts 1), CPU none.
* **Spend** of a user: resource value × tasks, summed over the *active* tasks (assigned, building,
  running) of their jobs, leaving out jobs submitted at BATCH. A job the scheduler moved down to BATCH
  still counts. The user of a job is the first part of its id (``/<user>/...``).
* **Effective band**: while a user's spend is over their limit (spend > limit, limit > 0; 0 means
  unlimited; a user without a budget row has the controller's default), their INTERACTIVE work runs
  at BATCH; SYSTEM and PRODUCTION never drop. It is decided at every scheduling pass from the tasks
  already active, so a job's own tasks count only once they have started.
* **Order**: pending tasks are taken band by band, highest first; inside a band, users take turns
  (round robin), the user with the lowest spend first, each user's tasks oldest first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Final

from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.iris.states import job_user

C = controller_pb2.Controller
J = job_pb2
BANDS: Final[tuple[int, ...]] = (J.PRIORITY_BAND_SYSTEM, J.PRIORITY_BAND_PRODUCTION, J.PRIORITY_BAND_INTERACTIVE,
                                 J.PRIORITY_BAND_BATCH)
"""The real bands in scheduling order (highest first)."""
ADMIN_BANDS: Final[frozenset[int]] = frozenset({J.PRIORITY_BAND_SYSTEM, J.PRIORITY_BAND_PRODUCTION})
SUBMITTABLE_BANDS: Final[frozenset[int]] = frozenset({J.PRIORITY_BAND_INHERIT, *BANDS})
DEFAULT_MAX_BAND: Final[int] = J.PRIORITY_BAND_INTERACTIVE
UNLIMITED: Final[int] = 0
ACCELERATOR_VALUE: Final[int] = 1000
CORE_VALUE: Final[int] = 5
GIB: Final[int] = 1024**3


def band_rank(band: int) -> int:
    """Scheduling rank of a real band (0 runs first); ``ValueError`` for INHERIT or an unknown value."""
    try:
        return BANDS.index(band)
    except ValueError:
        raise ValueError(f"priority band {band} ({band_name(band)}) has no scheduling rank: it must be one of "
                         f"{', '.join(band_name(value) for value in BANDS)}") from None


def band_name(band: int) -> str:
    """``PRIORITY_BAND_INTERACTIVE`` → ``"interactive"`` (an unknown value: its number)."""
    try:
        return str(J.PriorityBand.Name(band)).removeprefix("PRIORITY_BAND_").lower()
    except ValueError:
        return str(band)


def band_value(band: int | str) -> int:
    """A real band from its number or name (``"batch"``, ``"PRIORITY_BAND_BATCH"``, any case);
    ``ValueError`` naming the allowed names otherwise."""
    if isinstance(band, int) and band in BANDS:
        return band
    text = str(band).strip().lower().removeprefix("priority_band_")
    for value in BANDS:
        if text in (band_name(value), str(value)):
            return value
    raise ValueError(f"priority band {band!r} must be one of {', '.join(band_name(value) for value in BANDS)}")


def band_error(band: int) -> str | None:
    """Why LaunchJob refuses this ``priority_band`` value (INVALID_ARGUMENT), or None when it is one."""
    if band in SUBMITTABLE_BANDS:
        return None
    allowed = ", ".join(f"{value} ({band_name(value)})" for value in sorted(SUBMITTABLE_BANDS))
    return f"priority_band {band} is not a priority band; use one of {allowed}"


def resolve_band(requested: int, inherited: int | None = None) -> int:
    """The band LaunchJob stores: ``requested`` unless it is INHERIT, else the parent's band
    (``inherited``; None or INHERIT for a root job), else INTERACTIVE."""
    if requested != J.PRIORITY_BAND_INHERIT:
        return requested
    return inherited or J.PRIORITY_BAND_INTERACTIVE


def max_band_refusal(user: str, band: int, max_band: int) -> str | None:
    """Why LaunchJob refuses a job at ``band`` (resolved) from ``user`` whose ``max_band`` is given
    (PERMISSION_DENIED), or None when the band is allowed."""
    if band_rank(band) >= band_rank(max_band):
        return None
    return (f"{user} may submit work up to the {band_name(max_band)} band (their max band), not {band_name(band)}: "
            f"resubmit with --priority {band_name(max_band)} (or batch), or have {user}'s max band raised "
            f"(SetUserBudget, `iris user budget set`)")


def accelerators(device: J.DeviceConfig) -> int:
    """Accelerators one task holds: a TPU's chips, a GPU device's count (1 when it names none), CPU 0."""
    kind = device.WhichOneof("device")
    if kind == "gpu":
        return device.gpu.count or 1
    if kind == "tpu":
        return device.tpu.count
    return 0


def resource_value(cpu_millicores: int, memory_bytes: int, accelerator_count: int) -> int:
    """Iris's resource value: 1000 per accelerator + whole GiB of RAM + 5 per whole CPU core."""
    return ACCELERATOR_VALUE * accelerator_count + memory_bytes // GIB + CORE_VALUE * (cpu_millicores // 1000)


def task_value(resources: J.ResourceSpecProto) -> int:
    """The resource value of one task with these resources."""
    return resource_value(resources.cpu_millicores, resources.memory_bytes, accelerators(resources.device))


def counts_toward_budget(band: int) -> bool:
    """Whether a job submitted at ``band`` (resolved) counts in its user's spend: all but BATCH."""
    return band != J.PRIORITY_BAND_BATCH


def over_budget(spent: int, limit: int) -> bool:
    """Whether ``spent`` is over ``limit`` (``UNLIMITED``, or any limit <= 0, never is)."""
    return limit > 0 and spent > limit


def effective_band(band: int, spent: int, limit: int) -> int:
    """The band a task asked at ``band`` (resolved) runs at when its user has ``spent`` of ``limit``."""
    if band in ADMIN_BANDS or not over_budget(spent, limit):
        return band
    return J.PRIORITY_BAND_BATCH


def scheduling_order(pending: Sequence[tuple[str, int]], spend: Mapping[str, int]) -> list[int]:
    """Iris's order of pending work given oldest first as ``(user, effective band)`` items: their
    indices, bands highest first; inside a band users take turns, the lowest ``spend`` first (on a tie,
    the user whose work in that band came first), each user's own items oldest first."""
    turns: dict[tuple[int, str], int] = {}
    first: dict[tuple[int, str], int] = {}
    keys = []
    for index, (user, band) in enumerate(pending):
        turn = turns.get((band, user), 0)
        turns[(band, user)] = turn + 1
        keys.append((band_rank(band), turn, spend.get(user, 0), first.setdefault((band, user), index), index))
    return [key[-1] for key in sorted(keys)]


def queued_ahead(pending: Mapping[str, int], spend: Mapping[str, int], user: str) -> int:
    """How many of a band's pending tasks (``pending``: user → count) Iris's round robin takes before
    the first task of a new job of ``user``, with users' current ``spend`` (absent: 0). Each user's
    tasks go oldest first, so the new job waits behind all of ``user``'s own; in each turn the users
    who spent less go first. A user who spent as much as ``user`` is counted as going first (their
    order depends on which task is older)."""
    own = pending.get(user, 0)
    mine = spend.get(user, 0)
    ahead = own
    for other, count in pending.items():
        if other == user:
            continue
        ahead += min(count, own) + (1 if count > own and spend.get(other, 0) <= mine else 0)
    return ahead


@dataclass(frozen=True)
class Queue:
    """Where a new job's first task would wait: ``ahead`` tasks are taken before it (every pending
    task of a higher band, and those the round robin takes first in its own band), ``in_band`` tasks
    are pending in its band, ``higher`` in the bands above it."""

    band: int
    ahead: int
    in_band: int
    higher: int


def queue_position(state: C.GetSchedulerStateResponse, user: str, band: int) -> Queue:
    """The ``Queue`` of a new job of ``user`` running at ``band`` (effective), from a scheduler state."""
    rank = band_rank(band)
    in_band: dict[str, int] = {}
    higher = 0
    for bucket in state.pending_buckets:
        if bucket.band not in BANDS:
            continue
        if band_rank(bucket.band) < rank:
            higher += bucket.count
        elif bucket.band == band:
            in_band[bucket.user_id] = in_band.get(bucket.user_id, 0) + bucket.count
    spend = {row.user_id: row.budget_spent for row in state.user_budgets}
    return Queue(band, higher + queued_ahead(in_band, spend, user), sum(in_band.values()), higher)


# -- the preview's picture -------------------------------------------------------------------------
@dataclass(frozen=True)
class BudgetPicture:
    """What a job costs its user's budget and where it will run, from a request and (when the
    controller answers them) its ``GetUserBudget`` and ``GetSchedulerState`` answers.

    ``spent``/``limit``/``max_band`` are None when the budget is unknown (the controller does not
    answer ``GetUserBudget``: an older Iris); then ``effective_band`` is None too. ``queue`` is None
    when the scheduler state is unknown or the job would be refused."""

    user: str
    band: int
    replicas: int
    task_value: int
    task_terms: str
    spent: int | None = None
    limit: int | None = None
    max_band: int | None = None
    refusal: str | None = None
    queue: Queue | None = None
    budget_note: str = ""
    queue_note: str = ""

    @property
    def job_spend(self) -> int:
        """What the job adds to its user's spend while its tasks run (0 for a BATCH job)."""
        return self.task_value * self.replicas if counts_toward_budget(self.band) else 0

    @property
    def known(self) -> bool:
        """Whether the controller told the user's budget."""
        return self.spent is not None and self.limit is not None

    @property
    def effective_band(self) -> int | None:
        """The band it would start at now (None: the budget is unknown, or LaunchJob would refuse it)."""
        if not self.known or self.refusal is not None:
            return None
        assert self.spent is not None and self.limit is not None
        return effective_band(self.band, self.spent, self.limit)

    @property
    def over_after(self) -> bool:
        """Whether this job's running tasks put a user now within the limit over it (so what of theirs
        has not started yet then runs at BATCH)."""
        if not self.known or not self.job_spend or self.band in ADMIN_BANDS:
            return False
        spent, limit = self.spent or 0, self.limit or 0
        return not over_budget(spent, limit) and over_budget(spent + self.job_spend, limit)

    def as_dict(self) -> dict[str, object]:
        """The picture as plain data, bands by name (what ``plan --check --json`` prints as ``"budget"``)."""
        effective, queue = self.effective_band, self.queue
        return {
            "user": self.user, "band": band_name(self.band),
            "effective_band": band_name(effective) if effective is not None else None,
            "job_spend": self.job_spend, "task_value": self.task_value, "replicas": self.replicas,
            "spent": self.spent, "limit": self.limit,
            "max_band": band_name(self.max_band) if self.max_band is not None else None, "refusal": self.refusal,
            "queued_ahead": queue.ahead if queue else None, "queued_in_band": queue.in_band if queue else None,
            "lines": list(self.lines),
        }

    @property
    def lines(self) -> tuple[str, str]:
        """Two lines for a terminal or a widget: ``budget: …`` (spend, and the user's spent/limit) and
        ``band: …`` (where it runs and why, and the tasks queued ahead of it)."""
        return self._budget_line(), self._band_line()

    def _budget_line(self) -> str:
        if self.job_spend:
            cost = (f"this job spends {self.job_spend:,} ({self.replicas} task(s) × {self.task_value:,}: "
                    f"{self.task_terms})")
        else:
            cost = "this job spends nothing (batch work is not counted against a budget)"
        if not self.known:
            return f"budget: {cost}; {self.user}'s budget is unknown ({self.budget_note or 'not asked'})"
        assert self.spent is not None and self.limit is not None
        if self.limit <= 0:
            return f"budget: {cost}; {self.user} has spent {self.spent:,} (no limit)"
        over = ", over the limit" if over_budget(self.spent, self.limit) else ""
        line = f"budget: {cost}; {self.user} has spent {self.spent:,} of {self.limit:,}{over}"
        if self.over_after:
            line += (f"; once it runs, {self.spent + self.job_spend:,}: over the limit, so {self.user}'s "
                     "interactive work that has not started yet runs at batch")
        return line

    def _band_line(self) -> str:
        asked = band_name(self.band)
        if self.refusal is not None:
            return f"band: refused — {self.refusal}"
        band = self.effective_band
        if band is None:
            return f"band: {asked} as asked (not checked against a budget)"
        if band != self.band:
            why = (f"{band_name(band)} — asked {asked}, but {self.user} is over budget, so it runs at "
                   f"{band_name(band)}, where higher bands may preempt it")
        elif self.band in ADMIN_BANDS and over_budget(self.spent or 0, self.limit or 0):
            why = f"{asked} (over budget, but the {asked} band never drops)"
        else:
            why = asked
        if self.queue is None:
            return f"band: {why}; queue unknown ({self.queue_note or 'not asked'})"
        queue = self.queue
        higher = f", {queue.higher:,} of them in higher bands" if queue.higher else ""
        return (f"band: {why}; {queue.ahead:,} task(s) queued ahead of it{higher} "
                f"({queue.in_band:,} pending at {band_name(band)})")


def _terms(resources: J.ResourceSpecProto) -> str:
    chips = accelerators(resources.device)
    parts = [f"{ACCELERATOR_VALUE} × {chips} accelerator(s)"] if chips else []
    parts.append(f"{resources.memory_bytes // GIB} GiB")
    parts.append(f"{CORE_VALUE} × {resources.cpu_millicores // 1000} core(s)")
    return " + ".join(parts)


def budget_picture(request: C.LaunchJobRequest, budget: C.GetUserBudgetResponse | None = None,
                   state: C.GetSchedulerStateResponse | None = None, *, inherited: int | None = None,
                   budget_note: str = "", queue_note: str = "") -> BudgetPicture:
    """The ``BudgetPicture`` of ``request`` (its band resolved as LaunchJob resolves it, ``inherited``
    being a child's parent band) against the controller's answers; a missing answer leaves its part
    unknown, with ``budget_note`` / ``queue_note`` saying why."""
    user = job_user(request.name)
    band = resolve_band(request.priority_band, inherited)
    picture = BudgetPicture(user=user, band=band, replicas=max(request.replicas, 1),
                            task_value=task_value(request.resources), task_terms=_terms(request.resources),
                            budget_note=budget_note, queue_note=queue_note)
    if (error := band_error(request.priority_band)) is not None:
        return replace(picture, refusal=error)
    if budget is None:
        return picture
    max_band = budget.max_band or DEFAULT_MAX_BAND
    refusal = max_band_refusal(user, band, max_band) if max_band in BANDS else None
    picture = replace(picture, spent=budget.budget_spent, limit=budget.budget_limit, max_band=max_band,
                       refusal=refusal)
    effective = picture.effective_band
    if state is None or effective is None:
        return picture
    return replace(picture, queue=queue_position(state, user, effective))


def spend_by_user(active: Iterable[tuple[str, int, int, int]]) -> dict[str, int]:
    """Users' spend from ``(job id, resolved band, task value, active tasks)`` per job (Iris's rule)."""
    spend: dict[str, int] = {}
    for job_id, band, value, count in active:
        if counts_toward_budget(band):
            user = job_user(job_id)
            spend[user] = spend.get(user, 0) + value * count
    return spend
