"""The units of work ``scripts/test`` hands its workers (``tests/work_units.py``)."""

from __future__ import annotations

from pathlib import Path

from tests.work_units import DIFFERENTIAL, SECOND_UNIT, work_unit

ROOT = Path(__file__).resolve().parents[1]
SUITE = sorted(path.name for path in (ROOT / DIFFERENTIAL).glob("test_*.py"))


def test_a_module_outside_the_differential_suite_is_its_own_unit() -> None:
    assert work_unit("tests/test_magics.py::test_one[a-b]") == "tests/test_magics.py"
    assert work_unit("tests/conformance/test_matrix.py::test_row") == "tests/conformance/test_matrix.py"


def test_the_differential_suite_is_two_units_each_holding_whole_modules() -> None:
    units = {name: work_unit(f"{DIFFERENTIAL}{name}::test_x") for name in SUITE}
    assert len(set(units.values())) == 2
    assert {work_unit(f"{DIFFERENTIAL}{name}::test_y[p]") for name in SUITE} == set(units.values())
    assert {name for name, unit in units.items() if unit == units["test_actors.py"]} == SECOND_UNIT


def test_every_module_the_second_unit_names_exists() -> None:
    assert SECOND_UNIT <= set(SUITE)
