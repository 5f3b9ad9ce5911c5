"""The order ``scripts/test`` hands its workers their units of work (``tests/work_units.py``)."""

from __future__ import annotations

from collections import OrderedDict

from tests.work_units import reorder


def test_the_differential_suite_goes_first_and_each_part_keeps_its_order() -> None:
    units = ["tests/test_hostile_rpc.py", "tests/differential/test_actors.py", "tests/test_magics.py",
             "tests/differential/test_logs.py", "tests/conformance/test_matrix.py"]
    queue = OrderedDict((unit, {f"{unit}::test": False}) for unit in units)
    reorder(queue)
    assert list(queue) == ["tests/differential/test_actors.py", "tests/differential/test_logs.py",
                           "tests/test_hostile_rpc.py", "tests/test_magics.py", "tests/conformance/test_matrix.py"]
    assert queue["tests/test_magics.py"] == {"tests/test_magics.py::test": False}
