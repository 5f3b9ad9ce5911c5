"""The order in which ``pytest -n N --dist loadscope`` (``scripts/test``) hands its workers their units
of work (a test module each, run whole by one worker): the differential suite's modules first, then
every other module that starts a process, then the quick tier's; each part as xdist orders it (most
tests first).

Rule: the differential suite's modules (``tests/differential``) compare against a genuine Iris local
cluster (the twin) whose scheduler takes 4-11% of a core even at rest, and they are the suite's
longest modules, mostly waiting on it. Their twin and embedded controller are package-scoped
(``tests/differential/conftest.py``): a worker starts them as it takes its first differential
module and stops them when it goes on to another. Handed out first, the suite's modules spread over
every worker at the start, and each worker's twin stops once the suite is done rather than idling
under the rest of the run. The quick tier's modules (``tests/quick_tier.py``: they start no process)
go last: xdist's own order (most tests first) handed them out early and left the modules with few,
slow tests for the end, where one could run on alone; short modules at the end fill the gaps
instead, so the workers finish together."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Final

from xdist.scheduler import LoadScopeScheduling
from xdist.workermanage import WorkerController

from tests.quick_tier import TESTS, is_quick

DIFFERENTIAL: Final[str] = "tests/differential/"


def turn(unit: str) -> int:
    """When the unit of work ``unit`` (a node id's scope: the module's path from the repository's root,
    then ``::`` and a class or a part of a test id) is handed out: 0 for the differential suite's
    modules, 1 for another module that starts a process, 2 for the quick tier's."""
    module = unit.split("::", 1)[0]
    if module.startswith(DIFFERENTIAL):
        return 0
    return 2 if is_quick(TESTS.parent / module) else 1


def reorder(queue: OrderedDict[str, Any]) -> None:
    """Order ``queue`` by ``turn``, the units of each turn keeping their order."""
    for unit in sorted(queue, key=turn):
        queue.move_to_end(unit)


class SlowModulesFirst(LoadScopeScheduling):
    """xdist's load-scope scheduling, its queue ``reorder``-ed before the first unit is handed out."""

    _ordered = False

    def _assign_work_unit(self, node: WorkerController) -> None:
        if not self._ordered:
            reorder(self.workqueue)
            self._ordered = True
        super()._assign_work_unit(node)
