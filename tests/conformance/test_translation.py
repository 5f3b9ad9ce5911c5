"""fray-jupyter's LaunchJobRequest equals what Marin's real Fray -> Iris client sends, for every
worked example of the reference and thousands of generated jobs, up to the differences listed in
``differences.py``; and both reject the same inputs (save the stricter checks listed here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import fray.types as real_types
import pytest
from google.protobuf import text_format
from hypothesis import HealthCheck, given, settings
from rigging.timing import Duration

import fray_jupyter.resources as our_types
from fray_jupyter.planning import plan
from tests.conformance.differences import LaunchJobRequest, normalize
from tests.conformance.oracle import Oracle, canonical_bytes
from tests.conformance.specs import WORKED_EXAMPLES, Spec, any_spec, build

USER = "alice"

# Inputs Marin's client sends (silently wrong or rejected later by the controller) that
# fray-jupyter refuses up front with a message. Nothing else may differ in what is refused.
STRICTER: dict[str, tuple[Spec, str]] = {
    "zero GPUs": (Spec("gpu", gpu_count=0), "a GPU job with count 0 reaches the scheduler asking for no GPU"),
    "zero slices": (Spec("tpu", tpu_types=("v5p-8",), slice_count=0), "Fray sends replicas 1 for 0 slices"),
    "bare region string": (Spec("cpu", resource_kwargs={"regions": "us-central1"}),
                           "Fray splits a bare string into one-letter regions"),
    "zero cpu": (Spec("cpu", resource_kwargs={"cpu": 0}), "a task asking for 0 millicores"),
    "digit-only name": (Spec("cpu", name="12345"), "Iris reads /<user>/12345 as a task index"),
    "spaced GPU model": (Spec("gpu", gpu="H 100"), "no worker has a variant with a space"),
    "empty ram": (Spec("cpu", resource_kwargs={"ram": ""}), "Iris reads an empty size as 0 bytes"),
    "65 GPUs per replica": (Spec("gpu", gpu_count=65), "no node has more than 64 GPUs (cap: MAX_GPUS_PER_REPLICA)"),
    "100,001 replicas": (Spec("cpu", resource_kwargs={"replicas": 100_001}), "cap: MAX_REPLICAS"),
}


def _outcome(make: Callable[[], Any]) -> tuple[str, Any]:
    try:
        return "ok", make()
    except ValueError as error:
        return "error", error


def _ours(spec: Spec) -> tuple[str, Any]:
    return _outcome(lambda: plan(build(our_types, spec), user=USER).request)


def _theirs(spec: Spec, oracle: Oracle) -> tuple[str, Any]:
    def capture() -> LaunchJobRequest:
        job = build(real_types, spec, Duration.from_seconds)
        return LaunchJobRequest.FromString(oracle.capture(job, user=USER))

    return _outcome(capture)


def assert_same_request(spec: Spec, oracle: Oracle) -> None:
    """Both succeed with equal requests (after the listed differences), or both refuse."""
    (our_kind, ours), (their_kind, theirs) = _ours(spec), _theirs(spec, oracle)
    assert (our_kind, their_kind) != ("error", "ok"), f"fray-jupyter refused what Marin accepts: {ours}\n{spec}"
    assert (our_kind, their_kind) != ("ok", "error"), f"Marin refused ({theirs}) what fray-jupyter accepted\n{spec}"
    if our_kind == "error":
        return
    default_setup = spec.env is None or spec.env.get("setup_scripts") is None
    expected = normalize(theirs, default_setup=default_setup)
    if canonical_bytes(ours.SerializeToString()) != canonical_bytes(expected.SerializeToString()):
        pytest.fail(f"requests differ for {spec}\n--- fray-jupyter\n{text_format.MessageToString(ours)}"
                    f"--- Marin (normalized)\n{text_format.MessageToString(expected)}")


@pytest.mark.parametrize("spec", WORKED_EXAMPLES.values(), ids=WORKED_EXAMPLES.keys())
def test_worked_example_matches_marin(spec: Spec, real_client: Oracle) -> None:
    assert_same_request(spec, real_client)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=any_spec)
def test_generated_jobs_match_marin(spec: Spec, real_client: Oracle) -> None:
    assert_same_request(spec, real_client)


@pytest.mark.parametrize(("spec", "reason"), STRICTER.values(), ids=STRICTER.keys())
def test_stricter_checks_are_deliberate(spec: Spec, reason: str, real_client: Oracle) -> None:
    """Each listed input is accepted by Marin's client and refused by ours with a message."""
    (our_kind, error), (their_kind, _) = _ours(spec), _theirs(spec, real_client)
    assert (our_kind, their_kind) == ("error", "ok"), reason
    assert str(error)


@pytest.mark.parametrize("spec", list(WORKED_EXAMPLES.values())[:10])
def test_marin_objects_plan_like_ours(spec: Spec) -> None:
    """Interop: Marin's fray.types.JobRequest passed to plan() gives the same request as ours."""
    (kind, theirs), (our_kind, ours) = _outcome(
        lambda: plan(build(real_types, spec, Duration.from_seconds), user=USER).request), _ours(spec)
    assert kind == our_kind
    if kind == "ok":
        assert theirs == ours
