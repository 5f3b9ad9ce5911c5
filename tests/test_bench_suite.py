"""``bench/run``'s table of benches: the default run fits its budget, ``--full`` only adds time."""

from __future__ import annotations

from bench.suite import BENCHES, DEFAULT_BUDGET_S


def test_the_default_runs_limits_add_up_to_its_budget() -> None:
    total = sum(bench.limit for bench in BENCHES)
    assert total <= DEFAULT_BUDGET_S, (
        f"the default run's limits add up to {total:.0f} s, over its {DEFAULT_BUDGET_S:.0f} s budget: "
        "give a new bench shorter windows or fewer repeats in its default arguments (keep the long ones for --full)")


def test_a_full_run_gives_each_bench_at_least_the_default_runs_time() -> None:
    assert [bench.script for bench in BENCHES if bench.full_limit < bench.limit] == []
