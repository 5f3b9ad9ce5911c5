"""Placement (first come, first served, with backfill; gangs all or nothing), the lending rule
for child jobs, and reasons."""

from __future__ import annotations

from fray_jupyter.controller.kernel.scheduler import (
    QueuedJob,
    SlotLedger,
    default_slots,
    pending_reason,
    place,
    unschedulable_reason,
)


def _started(queue: list[QueuedJob], free: int, holding: dict[str, int] | None = None) -> list[tuple[str, list[int]]]:
    return [(job.job_id, indices) for job, indices in place(queue, SlotLedger(free, []), holding or {})]


def test_plain_jobs_fill_free_slots_in_order() -> None:
    queue = [QueuedJob("/a/one", 1, False, [0, 1, 2]), QueuedJob("/a/two", 2, False, [0])]
    assert _started(queue, 2) == [("/a/one", [0, 1])]
    assert _started(queue, 5) == [("/a/one", [0, 1, 2]), ("/a/two", [0])]
    assert _started(queue, 0) == []


def test_a_gang_starts_whole_or_is_skipped_for_backfill() -> None:
    queue = [QueuedJob("/a/gang", 1, True, [0, 1, 2, 3]), QueuedJob("/a/small", 2, False, [0])]
    assert _started(queue, 3) == [("/a/small", [0])]
    assert _started(queue, 5) == [("/a/gang", [0, 1, 2, 3]), ("/a/small", [0])]


def test_a_gang_waits_until_its_previous_attempt_released_every_slot() -> None:
    queue = [QueuedJob("/a/gang", 1, True, [0, 1])]
    assert _started(queue, 8, {"/a/gang": 1}) == []
    assert "previous gang attempt" in pending_reason(queue[0], 8, 8, 1, holding=1)


def test_only_a_gang_larger_than_the_controller_is_unschedulable() -> None:
    reason = unschedulable_reason(16, True, 8)
    assert reason is not None and "--slots 16" in reason and "has 8" in reason
    assert unschedulable_reason(16, False, 8) is None
    assert unschedulable_reason(8, True, 8) is None


def test_pending_reason_says_what_it_waits_for() -> None:
    reason = pending_reason(QueuedJob("/a/gang", 1, True, [0, 1, 2, 3]), 1, 4, 3, holding=0)
    assert "4 free task slots at once" in reason and "1 of 4 slots free" in reason and "--slots" in reason


def test_default_slots_fit_an_eight_vm_slice() -> None:
    assert default_slots() >= 8


def test_a_held_job_never_starts_and_others_run_past_it() -> None:
    """A job the target cluster can never place (``hold``) keeps its tasks pending; the queue flows past it."""
    queue = [QueuedJob("/a/held", 1, True, [0, 1], hold="coschedule_mismatch"), QueuedJob("/a/ok", 2, False, [0])]
    assert _started(queue, 8) == [("/a/ok", [0])]


def test_a_waiting_task_lends_its_slot_to_the_jobs_below_its_job_only() -> None:
    """One slot, held by a coordinator whose step is unfinished: the step (or any job below the
    coordinator) may take it; another tree may not."""
    ledger = SlotLedger(1, [("/a/coord", True)])
    assert ledger.available("/a/coord/step") == 1 and ledger.available("/a/coord/step/sub") == 1
    assert ledger.available("/a/other") == 0 and ledger.available("/a/coord") == 0
    queue = [QueuedJob("/a/other", 1, False, [0]), QueuedJob("/a/coord/step", 2, False, [0, 1])]
    assert [(job.job_id, tasks) for job, tasks in place(queue, ledger, {})] == [("/a/coord/step", [0])]
    assert ledger.exhausted


def test_a_lent_slot_passes_down_a_tree_nearest_lender_first() -> None:
    """Coordinator and step both wait (3-deep tree, 1 slot): the step runs in the slot its parent
    lent and lends it on; a task that does not lend uses it up."""
    waiting = SlotLedger(1, [("/a/c/s", True), ("/a/c", True)])
    assert waiting.available("/a/c/s/sub") == 1 and waiting.available("/a/c/t") == 0
    busy = SlotLedger(1, [("/a/c", True), ("/a/c/s", False)])
    assert busy.available("/a/c/t") == 0 and busy.exhausted
    two = SlotLedger(3, [("/a/c", True), ("/b/x", False)])
    assert (two.available("/a/c/s"), two.available("/b/y")) == (2, 1)
    two.take("/a/c/s", 2)  # its parent's slot first, then the free one
    assert (two.free, two.lent["/a/c"]) == (0, 0)


def test_a_gang_below_a_lender_counts_the_lent_slots() -> None:
    gang = QueuedJob("/a/c/gang", 1, True, [0, 1])
    assert _started([gang], 1) == []
    assert [(job.job_id, tasks) for job, tasks in place([gang], SlotLedger(2, [("/a/c", True)]), {})] == [
        ("/a/c/gang", [0, 1])]


def test_the_lenders_are_the_ancestors_of_every_unfinished_job() -> None:
    """A queued grandchild makes its parent and the root lend; a replaced job's task still stopping
    holds its slot and lends nothing; a job whose children all finished lends nothing."""
    ledger = SlotLedger.of(2, [("/a/c", True), ("/a/c/s", True), ("/b/done", True)], ["/a/c/s/sub"])
    assert ledger.lenders == {"/a/c", "/a/c/s"} and ledger.available("/a/c/s/sub") == 1
    assert ledger.available("/b/done/next") == 0  # /b/done holds the other slot and lends nothing
    stopping = SlotLedger.of(1, [("/a/c", False)], ["/a/c/s"])
    assert stopping.available("/a/c/s") == 0
