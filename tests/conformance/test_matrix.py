"""The conformance matrix: fray-jupyter against Marin's real client and Iris's routing for the followed
release and two older ones (``tests/marin_envs.RELEASES``), each in its own cached environment. Every
difference must be a row of ``fray_jupyter.iris.marin_versions.DIFFERENCES`` that applies to that
release and job, and every such row must show (``version_matrix``)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from fray_jupyter.iris.marin_versions import FOLLOWED
from tests.conformance.differences import LaunchJobRequest
from tests.conformance.matrix_probe import CASES, placement_requests
from tests.conformance.version_matrix import compare, compare_placement, unreconciled_rows
from tests.marin_envs import RELEASES, marin_python, run_in

_ANSWERS: dict[str, dict[str, Any]] = {}


def answers(release: str) -> dict[str, Any]:
    """What ``matrix_probe`` prints with ``release`` installed (run once per session and release)."""
    if release not in _ANSWERS:
        python = marin_python(release)
        done = run_in(python, "-m", "tests.conformance.matrix_probe")
        assert done.returncode == 0, f"the oracle failed on Marin {release}: {done.stderr[-3000:]}"
        _ANSWERS[release] = json.loads(done.stdout.strip().splitlines()[-1])
        assert _ANSWERS[release]["version"] == RELEASES[release]
    return _ANSWERS[release]


def test_every_listed_difference_is_checked_by_the_matrix() -> None:
    assert unreconciled_rows() == []


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("release", sorted(RELEASES))
def test_requests_differ_exactly_by_the_listed_differences(release: str, case: str) -> None:
    seen = compare(CASES[case], answers(release)["requests"][case], release)
    assert not seen.leftover, f"Marin {release}, {case}: a difference no row lists\n{seen.leftover}"
    assert seen.rows == seen.expected, (f"Marin {release}, {case}: listed {sorted(seen.expected)}, "
                                        f"seen {sorted(seen.rows)}")


@pytest.mark.parametrize("case", sorted(placement_requests()))
@pytest.mark.parametrize("release", sorted(RELEASES))
def test_placement_differs_exactly_by_the_listed_differences(release: str, case: str) -> None:
    seen = compare_placement(case, answers(release)["placement"][case], release)
    assert not seen.leftover, f"Marin {release}, {case}: {seen.leftover}"
    assert seen.rows == seen.expected


def test_a_planted_unlisted_difference_fails() -> None:
    """An extra variable in Marin's request, which no row lists, is left over."""
    kind, body = answers(FOLLOWED)["requests"]["3 v5p-8"]
    planted = LaunchJobRequest.FromString(base64.b64decode(body))
    planted.environment.env_vars["PLANTED"] = "1"
    seen = compare(CASES["3 v5p-8"], [kind, base64.b64encode(planted.SerializeToString()).decode()], FOLLOWED)
    assert "PLANTED" in seen.leftover


def test_a_listed_difference_that_stops_showing_fails() -> None:
    """The followed release's answer read as 0.2.200's: the NCCL and revision-date rows apply but do not show."""
    seen = compare(CASES["gpu extra adds NCCL"], answers(FOLLOWED)["requests"]["gpu extra adds NCCL"], "0.2.200")
    assert seen.expected == {"nccl_debug", "client_revision_date"} and not seen.rows
