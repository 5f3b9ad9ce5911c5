"""The order in which ``pytest -n N --dist loadscope`` (``scripts/test``) hands its workers their units
of work (a test module each, run whole by one worker): the differential suite's modules first, then
the rest as xdist orders them (most tests first).

Rule: the differential suite's modules (``tests/differential``) compare against a genuine Iris local
cluster (the twin) whose scheduler takes 4-11% of a core even at rest, and they are the suite's
longest modules, mostly waiting on it. Their twin and embedded controller are package-scoped
(``tests/differential/conftest.py``): a worker starts them as it takes its first differential
module and stops them when it goes on to another. Handed out first, the suite's modules spread over
every worker at the start, each worker's twin stops once the suite is done rather than idling under
the rest of the run, and no long module is left to run alone at the end."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Final

from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

DIFFERENTIAL: Final[str] = "tests/differential/"


def handed_out_first(unit: str) -> bool:
    """Whether the unit of work ``unit`` (a module's path) goes before every other."""
    return unit.startswith(DIFFERENTIAL)


def reorder(queue: OrderedDict[str, Any]) -> None:
    """Move the units ``handed_out_first`` to the front of ``queue``, each part keeping its order."""
    for unit in [unit for unit in queue if not handed_out_first(unit)]:
        queue.move_to_end(unit)


class DifferentialFirst(LoadScopeScheduling):
    """xdist's load-scope scheduling, its queue ``reorder``-ed before the first unit is handed out."""

    _ordered = False

    def _assign_work_unit(self, node: WorkerController) -> None:
        if not self._ordered:
            reorder(self.workqueue)
            self._ordered = True
        super()._assign_work_unit(node)
