"""Iris's budget rules as ``iris.budget`` states them (their agreement with Iris's own code is in
``tests/conformance/test_budget.py``), and the picture the preview shows from a controller's answers."""

from __future__ import annotations

import pytest

from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, plan
from fray_jupyter.iris import budget as b
from fray_jupyter.iris.proto import controller_pb2, job_pb2

C = controller_pb2.Controller
J = job_pb2
INTERACTIVE, BATCH, PRODUCTION = J.PRIORITY_BAND_INTERACTIVE, J.PRIORITY_BAND_BATCH, J.PRIORITY_BAND_PRODUCTION


V5P_64 = ResourceConfig.with_tpu("v5p-64")


def request(resources: ResourceConfig = V5P_64, **job: object) -> C.LaunchJobRequest:
    return plan(JobRequest(name="train", entrypoint=Entrypoint.from_binary("true", []), resources=resources,
                           **job), user="alice").request  # type: ignore[arg-type]


def answer(spent: int, limit: int, max_band: int = INTERACTIVE) -> C.GetUserBudgetResponse:
    return C.GetUserBudgetResponse(user_id="alice", budget_spent=spent, budget_limit=limit, max_band=max_band)  # type: ignore[arg-type]


def pending(*buckets: tuple[int, str, int], spend: dict[str, int] | None = None) -> C.GetSchedulerStateResponse:
    return C.GetSchedulerStateResponse(
        pending_buckets=[C.PendingTaskBucket(band=band, user_id=user, job_id=f"/{user}/j{band}", count=count)  # type: ignore[arg-type]
                         for band, user, count in buckets],
        user_budgets=[C.SchedulerUserBudget(user_id=u, budget_spent=s) for u, s in (spend or {}).items()])


def test_resource_value_rounds_ram_and_cores_down() -> None:
    assert b.resource_value(1_999, 2 * b.GIB - 1, 0) == 1 + 5
    assert b.resource_value(104_000, 224 * b.GIB, 4) == 4_744
    assert b.accelerators(J.DeviceConfig(gpu=J.GpuDevice(variant="H100"))) == 1


def test_bands_by_name_and_rank() -> None:
    assert [b.band_name(band) for band in b.BANDS] == ["system", "production", "interactive", "batch"]
    assert b.band_value("Batch") == b.band_value("PRIORITY_BAND_BATCH") == b.band_value(3) == BATCH
    with pytest.raises(ValueError, match="'urgent' must be one of system, production, interactive, batch"):
        b.band_value("urgent")
    with pytest.raises(ValueError):
        b.band_rank(J.PRIORITY_BAND_INHERIT)
    with pytest.raises(ValueError, match=r"band 0 \(inherit\) has no scheduling rank: it must be one of system, "):
        b.band_rank(J.PRIORITY_BAND_INHERIT)
    assert b.band_error(5) is not None and b.band_error(J.PRIORITY_BAND_INHERIT) is None


def test_max_band_caps_what_a_user_submits() -> None:
    assert b.max_band_refusal("alice", BATCH, INTERACTIVE) is None
    assert b.max_band_refusal("alice", PRODUCTION, PRODUCTION) is None
    refusal = b.max_band_refusal("alice", PRODUCTION, INTERACTIVE)
    assert refusal is not None and "--priority interactive" in refusal


def test_over_the_limit_interactive_drops_to_batch_admin_bands_never() -> None:
    assert b.effective_band(INTERACTIVE, 1001, 1000) == BATCH
    assert b.effective_band(INTERACTIVE, 1000, 1000) == INTERACTIVE  # over means strictly more
    assert b.effective_band(INTERACTIVE, 10**9, b.UNLIMITED) == INTERACTIVE
    assert b.effective_band(PRODUCTION, 10**9, 1) == PRODUCTION


def test_spend_leaves_out_jobs_submitted_at_batch() -> None:
    assert b.spend_by_user([("/alice/a", INTERACTIVE, 10, 3), ("/alice/b", BATCH, 99, 9),
                            ("/bob/c/d", PRODUCTION, 7, 1)]) == {"alice": 30, "bob": 7}


def test_queued_ahead_counts_higher_bands_and_the_round_robin_in_its_own() -> None:
    state = pending((PRODUCTION, "carol", 4), (INTERACTIVE, "bob", 3), (INTERACTIVE, "alice", 1),
                    (BATCH, "dave", 9), spend={"bob": 100, "alice": 50})
    queue = b.queue_position(state, "alice", INTERACTIVE)
    # carol's 4 first; then in turn: alice's own task, then (alice spent less than bob) bob's first
    assert (queue.higher, queue.in_band, queue.ahead) == (4, 4, 4 + 1 + 1)
    assert b.queue_position(state, "alice", BATCH).ahead == 8 + 1  # every higher task; dave spent less: his first


def test_the_picture_of_a_v5p_64_job() -> None:
    picture = b.budget_picture(request(), answer(spent=40_000, limit=75_000), pending())
    assert (picture.job_spend, picture.effective_band, picture.over_after) == (37_952, INTERACTIVE, True)
    budget_line, band_line = picture.lines
    assert budget_line.startswith("budget: this job spends 37,952 (8 task(s) × 4,744: 1000 × 4 accelerator(s) + "
                                  "224 GiB + 5 × 104 core(s)); alice has spent 40,000 of 75,000; once it runs, 77,952")
    assert band_line == "band: interactive; 0 task(s) queued ahead of it (0 pending at interactive)"


def test_over_budget_the_picture_says_batch_and_why() -> None:
    state = pending((BATCH, "bob", 2), spend={"alice": 2_000})
    picture = b.budget_picture(request(), answer(spent=2_000, limit=1_000), state)
    assert picture.effective_band == BATCH and not picture.over_after
    assert "alice has spent 2,000 of 1,000, over the limit" in picture.lines[0]
    assert picture.lines[1].startswith("band: batch — asked interactive, but alice is over budget")
    assert picture.lines[1].endswith("1 task(s) queued ahead of it (2 pending at batch)")  # bob spent less: his first
    assert picture.as_dict()["effective_band"] == "batch" and picture.as_dict()["queued_ahead"] == 1


def test_batch_jobs_spend_nothing_and_unknown_answers_say_why() -> None:
    picture = b.budget_picture(request(priority="batch"), budget_note="this controller does not answer GetUserBudget")
    assert picture.job_spend == 0 and picture.effective_band is None
    unknown = ("budget: this job spends nothing (batch work is not counted against a budget); alice's budget is "
               "unknown (this controller does not answer GetUserBudget)")
    assert picture.lines == (unknown, "band: batch as asked (not checked against a budget)")


def test_a_band_above_the_max_is_pictured_as_the_refusal() -> None:
    picture = b.budget_picture(request(priority="production"), answer(0, 0), pending())
    assert picture.refusal is not None and picture.queue is None and picture.effective_band is None
    assert picture.lines[1].startswith("band: refused — alice may submit work up to the interactive band")
    unlimited = b.budget_picture(request(priority="production"), answer(5, 0, PRODUCTION), pending())
    assert unlimited.lines[0].endswith("alice has spent 5 (no limit)") and unlimited.effective_band == PRODUCTION
