""""Will it fit?" in ``%%fray``: the verdict ``--dry-run`` shows, and the gate before submitting.

Rules: a gang no slice can hold (``Plan.errors``) is ``never`` without asking anyone. Otherwise the
controller is asked through ``client.fit`` (cached ~10 s); ``--dry-run`` never starts one: a cell for
the embedded controller when none runs yet gets the verdict a started one would give, read from the
profile it would apply (as ``fray-jupyter plan --check``), saying so; any other controller that does
not answer leaves the verdict unknown. Before a submission, a ``never`` verdict refuses the cell with Iris's reason
unless ``--force``; a controller that cannot answer (an old one without the capacity RPCs, a blip)
never blocks a submission.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fray_jupyter.magics.parsers import usage

if TYPE_CHECKING:
    from fray_jupyter.client.client import FrayClient
    from fray_jupyter.client.fit import Fit
    from fray_jupyter.iris.budget import BudgetPicture
    from fray_jupyter.planning import Plan


def verdict(plan: Plan, client: FrayClient | None) -> Fit | None:
    """The fit verdict, or None when no controller answers (``client`` None: none to ask)."""
    from fray_jupyter.client.errors import FrayError
    from fray_jupyter.client.fit import Fit, fit

    if plan.errors:
        return Fit("never", plan.errors[0])
    if client is None:
        return None
    try:
        return fit(plan, client)
    except FrayError:
        return None


def describe(result: Fit | None, source: str = "") -> str:
    """One line for the dry-run output (``source``: where the verdict came from, when not asked of the
    controller)."""
    if result is None:
        return "fit: unknown — no controller answered"
    candidates = f" · {', '.join(str(c) for c in result.candidates[:3])}" if result.candidates else ""
    return result.line + candidates + (f" ({source})" if source else "")


def dry_run(plan: Plan, client: FrayClient | None, *, embedded: bool) -> tuple[str, BudgetPicture]:
    """``--dry-run``'s fit line and budget picture: asked of ``client``; with none and the cell for the
    embedded controller (``embedded``: none runs yet), read from the profile it would apply."""
    from fray_jupyter.client.budget import NOT_RUNNING, budget
    from fray_jupyter.controller.engine.cluster import read_embedded_fit

    if client is None and embedded and not plan.errors:
        result, source = read_embedded_fit(plan)
        return describe(result, source), budget(plan, None, why=NOT_RUNNING)
    return describe(verdict(plan, client)), budget(plan, client)


def check_before_submit(plan: Plan, client: FrayClient, *, force: bool) -> None:
    """Refuse (``UsageError``) a job the controller's cluster can never place, unless ``force``."""
    if force:
        return
    result = verdict(plan, client)
    if result is not None and result.verdict == "never":
        raise usage(f"{plan.job_id} would never run on {client.url}: {result.reason} "
                    "(--force submits it anyway; it would stay PENDING or be refused)")
