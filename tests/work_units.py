"""How ``pytest -n N --dist loadscope`` (``scripts/test``) cuts the suite into units of work, each run
whole by one worker: a test module is a unit, except the differential suite's, which share two.

Rule: the differential suite's modules (``tests/differential``) all compare against a genuine Iris
local cluster (the twin), whose scheduler costs about 4% of a core even at rest. Its fixtures are
package-scoped (``tests/differential/conftest.py``): they start when a worker begins the suite and
stop when it leaves it. Were each module a unit, every worker would start its own twin and keep it
until the suite's last module on that worker. As two units, two twins run, each only while its unit
does. The units are balanced by the modules' wall time (``$FRAY_TEST_TIMES``, about 230 s each on 2
cores): the modules in ``SECOND_UNIT`` form one, every other module of the suite the other, so a new
module joins the first unless it is listed."""

from __future__ import annotations

from typing import Final

from xdist.scheduler import LoadScopeScheduling

DIFFERENTIAL: Final[str] = "tests/differential/"
SECOND_UNIT: Final[frozenset[str]] = frozenset({
    "test_actors.py", "test_inspect.py", "test_logs.py", "test_notebooks.py", "test_resubmit.py", "test_usage_limits.py",
    "test_waits_and_failures.py",
})


def work_unit(nodeid: str) -> str:
    """The unit of work of the test ``nodeid``: its module, or one of the differential suite's two."""
    module = nodeid.split("::", 1)[0]
    if not module.startswith(DIFFERENTIAL):
        return module
    return f"{DIFFERENTIAL}({'second' if module.removeprefix(DIFFERENTIAL) in SECOND_UNIT else 'first'} unit)"


class ModuleUnits(LoadScopeScheduling):
    """xdist's load-scope scheduling with ``work_unit`` as the scope."""

    def _split_scope(self, nodeid: str) -> str:
        return work_unit(nodeid)
