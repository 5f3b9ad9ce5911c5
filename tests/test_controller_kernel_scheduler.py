"""Placement (``kernel.scheduler``: first come, first served, with backfill; gangs all or nothing; tasks
asking for no CPU in no slot, all within ``--max-tasks``), the lending rule for child jobs, and reasons:
as tables, and as properties of every placement of a generated queue."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fray_jupyter.controller.kernel.scheduler import (
    DEFAULT_MAX_TASKS,
    MAX_TASKS_ENV,
    QueuedJob,
    SlotLedger,
    default_slots,
    max_tasks_setting,
    pending_reason,
    place,
    room_reason,
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


def _placed(queue: list[QueuedJob], free: int, room: int) -> list[tuple[str, list[int]]]:
    return [(job.job_id, indices) for job, indices in place(queue, SlotLedger(free, []), {}, room)]


def test_cpu_less_tasks_start_without_slots_within_the_room_left() -> None:
    queue = [QueuedJob("/a/slot", 1, False, [0, 1, 2]), QueuedJob("/a/free", 2, False, [0, 1, 2, 3, 4], slotless=True)]
    assert _placed(queue, free=0, room=10) == [("/a/free", [0, 1, 2, 3, 4])]
    assert _placed(queue, free=2, room=4) == [("/a/slot", [0, 1]), ("/a/free", [0, 1])]
    gang = QueuedJob("/a/gang", 3, True, [0, 1, 2], slotless=True)
    assert _placed([gang], free=0, room=2) == [] and _placed([gang], free=0, room=3) == [("/a/gang", [0, 1, 2])]


def test_reasons_name_the_bound() -> None:
    waiting = QueuedJob("/a/free", 1, False, [0], slotless=True)
    assert room_reason(waiting, running=3, max_tasks=4) == ""
    assert room_reason(waiting, running=4, max_tasks=4).startswith(
        "waiting for room to start 1 task process(es): 4 of at most 4 running; ")
    assert "--max-tasks 9 (or more)" in str(unschedulable_reason(9, True, 8, slotless=True))
    assert unschedulable_reason(9, True, 9, slotless=True) is None


def test_the_bound_comes_from_the_flag_then_the_environment() -> None:
    assert max_tasks_setting(None, {}, 8) == DEFAULT_MAX_TASKS and max_tasks_setting(None, {}, 999) == 999
    assert max_tasks_setting(None, {MAX_TASKS_ENV: "40"}, 8) == 40 and max_tasks_setting(12, {MAX_TASKS_ENV: "40"}, 8) == 12
    with pytest.raises(ValueError, match=r"^--max-tasks must be at least the task slots \(8: --slots\), got 4$"):
        max_tasks_setting(4, {}, 8)
    with pytest.raises(ValueError, match=rf"^\${MAX_TASKS_ENV} must be a whole number of task processes, got 'many'$"):
        max_tasks_setting(None, {MAX_TASKS_ENV: "many"}, 8)


QUEUED = st.builds(lambda index, gang, pending, held, slotless: QueuedJob(
    f"/u/job{index}", index, gang, sorted(pending), "never fits" if held else "", slotless),
    st.integers(0, 1000), st.booleans(), st.sets(st.integers(0, 5), max_size=6), st.booleans(), st.booleans())
QUEUES = st.lists(QUEUED, max_size=6, unique_by=lambda job: job.job_id)


@given(queue=QUEUES, free=st.integers(0, 8), room=st.one_of(st.none(), st.integers(0, 12)),
       holding=st.dictionaries(st.sampled_from([f"/u/job{index}" for index in range(10)]), st.integers(1, 2)))
def test_every_placement_keeps_to_the_slots_the_room_and_the_gangs(queue: list[QueuedJob], free: int,
                                                                     room: int | None,
                                                                     holding: dict[str, int]) -> None:
    """Whatever is queued (separate trees: no lending), each job in queue order gets what fits when its
    turn comes, from its pending tasks in index order: a plain job as many as the free slots (none for
    tasks asking for no CPU) and the room allow, a gang all or nothing and never while a task of its
    last attempt holds a slot, a held job nothing. So no more starts than the slots and the room, and
    backfill leaves nothing behind that fitted."""
    pending = {job.job_id: list(job.pending) for job in queue}
    started = {job.job_id: indices for job, indices in place(queue, SlotLedger(free, []), holding, room)}
    assert list(started) == [job.job_id for job in queue if job.job_id in started]  # in queue order
    slots, left = free, sum(map(len, pending.values())) if room is None else room
    for job in queue:
        chosen, waiting = started.get(job.job_id, []), pending[job.job_id]
        fits = min(left, left if job.slotless else slots)
        if job.hold or (job.gang and holding.get(job.job_id)):
            expected: list[int] = []
        elif job.gang:
            expected = waiting if len(waiting) <= fits else []
        else:
            expected = waiting[:fits]
        assert chosen == expected, (job, fits)
        left -= len(chosen)
        slots -= 0 if job.slotless else len(chosen)
    assert slots >= 0 and left >= 0
