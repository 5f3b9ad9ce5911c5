"""The order ``scripts/test`` hands its workers their units of work (``tests/work_units.py``)."""

from __future__ import annotations

from collections import OrderedDict

from tests.work_units import reorder, turn


def test_the_differential_suite_goes_first_the_quick_tier_last_and_each_part_keeps_its_order() -> None:
    units = ["tests/conformance/test_attempts.py", "tests/test_hostile_rpc.py", "tests/differential/test_actors.py",
             "tests/test_magics.py", "tests/conformance/test_budget.py", "tests/differential/test_logs.py"]
    queue = OrderedDict((unit, {f"{unit}::test": False}) for unit in units)
    reorder(queue)
    assert list(queue) == ["tests/differential/test_actors.py", "tests/differential/test_logs.py",
                           "tests/test_hostile_rpc.py", "tests/test_magics.py",
                           "tests/conformance/test_attempts.py", "tests/conformance/test_budget.py"]
    assert queue["tests/test_magics.py"] == {"tests/test_magics.py::test": False}


def test_a_module_that_starts_no_process_is_handed_out_last() -> None:
    assert [turn(unit) for unit in ("tests/differential/test_actors.py", "tests/test_cli.py",
                                    "tests/conformance/test_attempts.py")] == [0, 1, 2]


def test_a_unit_below_a_module_takes_the_modules_turn() -> None:
    """xdist's scope of a node id ends at its last ``::``, which may be a class or inside a test's id."""
    assert turn("tests/conformance/test_attempts.py::TestSome") == 2
    assert turn("tests/test_cli.py::test_plan[--controller 'http:/[") == 1
