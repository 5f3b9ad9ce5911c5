"""``bench/run``'s table of benches: the default run's limits stay under their cap, ``--full`` only adds time."""

from __future__ import annotations

from bench.suite import BENCHES, DEFAULT_GOAL_S, LIMITS_CAP_S


def test_the_default_runs_limits_add_up_to_at_most_their_cap() -> None:
    total = sum(bench.limit for bench in BENCHES)
    assert total <= LIMITS_CAP_S, (
        f"the default run's limits add up to {total:.0f} s, over their {LIMITS_CAP_S:.0f} s cap: give a new bench "
        f"shorter windows or fewer repeats in its default arguments (the run's goal is {DEFAULT_GOAL_S:.0f} s; "
        "the long ones belong to --full)")


def test_a_full_run_gives_each_bench_at_least_the_default_runs_time() -> None:
    assert [bench.script for bench in BENCHES if bench.full_limit < bench.limit] == []
