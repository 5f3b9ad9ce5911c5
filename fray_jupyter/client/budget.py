"""What a job will cost its user's budget and at which band it will run, before it is submitted.

``budget(plan, client)`` asks the controller ``GetUserBudget`` (the plan's user) and
``GetSchedulerState`` (cached ``CACHE_SECONDS`` per controller and user) and hands the answers to
``iris.budget.budget_picture``, the one pure function the picker, ``%%fray --dry-run`` and
``fray-jupyter plan --check`` all show. It never raises: a controller that does not answer them (an
older Iris answers UNIMPLEMENTED) or cannot be reached leaves that part of the picture unknown, with
one line saying why; with no controller at all (``client`` None) only the job's own spend is shown.
"""

from __future__ import annotations

from typing import Final, Protocol

from fray_jupyter.client.cache import CACHE_SECONDS, Expiring
from fray_jupyter.client.errors import FrayError
from fray_jupyter.client.fit import PlanLike
from fray_jupyter.iris.budget import BudgetPicture, budget_picture
from fray_jupyter.iris.proto import controller_pb2
from fray_jupyter.iris.states import job_user

C = controller_pb2.Controller
NO_CONTROLLER: Final[str] = "no controller answered"
NOT_RUNNING: Final[str] = "no controller is running"


class BudgetSource(Protocol):
    """A controller client that answers the budget RPCs (a ``FrayClient``)."""

    @property
    def url(self) -> str: ...

    def user_budget(self, user: str) -> C.GetUserBudgetResponse: ...

    def scheduler_state(self) -> C.GetSchedulerStateResponse: ...


Answer = tuple[C.GetUserBudgetResponse | None, str, C.GetSchedulerStateResponse | None, str]


def _why(error: FrayError, method: str) -> str:
    if error.code == "unimplemented":
        return f"this controller does not answer {method}"
    return f"{method} failed: {' '.join(str(error).split())}"


def _ask(client: BudgetSource, user: str) -> Answer:
    """Both answers, each with why it is missing ("" when it is not)."""
    budget: C.GetUserBudgetResponse | None = None
    state: C.GetSchedulerStateResponse | None = None
    budget_note = state_note = ""
    try:
        budget = client.user_budget(user)
    except FrayError as error:
        budget_note = _why(error, "GetUserBudget")
    try:
        state = client.scheduler_state()
    except FrayError as error:
        state_note = _why(error, "GetSchedulerState")
    return budget, budget_note, state, state_note


CACHE: Final[Expiring[tuple[str, str], Answer]] = Expiring()
"""Per (controller URL, user), the two answers (``client.cache``)."""


def budget(plan: PlanLike, client: BudgetSource | None, *, max_age: float = CACHE_SECONDS,
           why: str = NO_CONTROLLER) -> BudgetPicture:
    """The ``BudgetPicture`` of ``plan`` against the controller behind ``client`` (None: no controller,
    for the reason ``why``), its answers at most ``max_age`` seconds old (see the module docstring)."""
    request = plan.request
    if client is None:
        return budget_picture(request, budget_note=why, queue_note=why)
    user = job_user(request.name)
    answer, budget_note, state, state_note = CACHE.get((client.url, user), max_age, lambda: _ask(client, user))
    return budget_picture(request, answer, state, budget_note=budget_note, queue_note=state_note)
