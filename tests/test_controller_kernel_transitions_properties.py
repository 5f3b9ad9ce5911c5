"""The transition kernel's invariants over generated lifetimes of a job: hypothesis drives the engine's
part in miniature (place queued tasks, start and end their attempts, lose a worker, TerminateJob,
CompleteJob, a job above ending, a job that can never start) through ``decide`` and checks, after
every event, what must always hold — that the effects are the whole change, that a finished task or
job never changes, that a job's state is what its tasks say, that the failure and preemption counts
add up and stay within the budgets, and that a gang never keeps a member running past a failure."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from hypothesis import event as note
from hypothesis import given, settings
from hypothesis import strategies as st

from fray_jupyter.controller.kernel import transitions as T
from fray_jupyter.controller.kernel.exits import EXECUTION_TIMEOUT, Outcome
from fray_jupyter.controller.kernel.rows import JobRow, TaskRow
from fray_jupyter.controller.kernel.state_rules import ACTIVE_TASK_STATES, derive_job_state
from fray_jupyter.controller.kernel.transitions import Effects, Event, Snapshot
from fray_jupyter.controller.kernel.trees import PARENT_JOB_TERMINATED, ends_descendants
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.states import TERMINAL_JOB_STATES, TERMINAL_TASK_STATES
from tests.kernel_jobs import JOB_ID, NOW, job_row, task_row

POLICIES = [J.JOB_PREEMPTION_POLICY_UNSPECIFIED, J.JOB_PREEMPTION_POLICY_PRESERVE_CHILDREN,
            J.JOB_PREEMPTION_POLICY_TERMINATE_CHILDREN]


@dataclass
class Lifetime:
    """One job as the engine holds it: ``job`` and ``tasks`` as the store has them (written only from
    the effects), the tasks whose attempt has a process (``live``), those of them already decided from
    outside (``settled``: stopped, their end only recorded) and the queued tasks."""

    job: JobRow
    tasks: dict[int, TaskRow]
    policy: int
    live: set[int] = field(default_factory=set)
    settled: set[int] = field(default_factory=set)
    queued: set[int] = field(default_factory=set)
    now: int = NOW

    def decide(self, event: Event) -> tuple[Snapshot, Effects]:
        """Run ``event`` on a snapshot of the job as stored, then carry its effects out here."""
        self.now += 1
        snap = Snapshot(self.job, dict(self.tasks), frozenset(self.live), self.policy, self.now)
        effects = T.decide(snap, event)
        self.job = dataclasses.replace(self.job, **effects.jobs.get(JOB_ID, {}))
        for (_, idx), values in effects.tasks.items():
            self.tasks[idx] = dataclasses.replace(self.tasks[idx], **values)
        self.settled |= {stop.idx for stop in effects.stops}
        queued = effects.queue.get(JOB_ID, [])
        self.queued = set() if queued is None else self.queued | set(queued)
        return snap, effects

    def copy(self) -> Lifetime:
        """The job as it stands (rows are replaced, never changed in place, so the dict is copied alone)."""
        return dataclasses.replace(self, tasks=dict(self.tasks), live=set(self.live),
                                   settled=set(self.settled), queued=set(self.queued))

    def place(self, indices: list[int]) -> None:
        """The engine starts attempts of queued tasks (``attempt_lifecycle.Attempts.start``): ASSIGNED."""
        for idx in indices:
            task = self.tasks[idx]
            self.tasks[idx] = dataclasses.replace(task, state=J.TASK_STATE_ASSIGNED, attempt=task.attempt + 1)
        self.live |= set(indices)
        self.queued -= set(indices)

    def exit(self, idx: int) -> None:
        """The attempt of task ``idx`` has no process any more."""
        self.live.discard(idx)
        self.settled.discard(idx)


def possible(life: Lifetime) -> list[str]:
    """What can happen to the job now: the engine's own steps, weighted above the verbs that end the
    job and first (hypothesis leans to small numbers, and ``step`` picks by one)."""
    deciding = [idx for idx in life.live - life.settled if life.tasks[idx].state in ACTIVE_TASK_STATES]
    actions = []
    if life.queued and not (life.job.coscheduled and life.live):  # a gang starts whole, its last attempt gone
        actions += ["place"] * 6
    if any(life.tasks[idx].state == J.TASK_STATE_ASSIGNED for idx in deciding):
        actions += ["start"] * 6
    if life.live:
        actions += ["end"] * 8 + ["unrecorded"]
    if deciding:
        actions += ["lose"] * 2
    if life.queued:
        actions += ["never_fits"]
    return [*actions, "terminate", "complete", "parent"]


OUTCOMES = [Outcome(J.TASK_STATE_SUCCEEDED, 0), Outcome(J.TASK_STATE_FAILED, 3, "Exit code: 3"),
            Outcome(J.TASK_STATE_FAILED, None, EXECUTION_TIMEOUT, timed_out=True)]


def step(life: Lifetime, choice: int) -> tuple[str, Event | None]:
    """Do what ``choice`` picks of what can happen to the job now (the engine's part of it), and
    return the event the kernel is then asked about (None: nothing for the kernel, e.g. tasks placed
    or a settled attempt's end)."""
    actions = possible(life)
    action, pick = actions[choice % len(actions)], random.Random(choice).choice
    deciding = sorted(idx for idx in life.live - life.settled if life.tasks[idx].state in ACTIVE_TASK_STATES)
    if action == "place":
        queued = sorted(life.queued)
        life.place(queued if life.job.coscheduled else queued[:1 + choice % len(queued)])
        return action, None
    if action == "start":
        idx = pick([idx for idx in deciding if life.tasks[idx].state == J.TASK_STATE_ASSIGNED])
        return action, partial(T.attempt_running, idx=idx, attempt=life.tasks[idx].attempt)
    if action in ("end", "unrecorded"):
        idx = pick(sorted(life.live))
        settled, attempt = idx in life.settled, life.tasks[idx].attempt
        life.exit(idx)
        if settled:
            return action, None  # decided already: the engine only records its end
        if action == "unrecorded":
            return action, partial(T.attempt_unrecorded, idx=idx, attempt=attempt, row_id=life.job.id,
                                   reason="disk full")
        return action, partial(T.attempt_ended, idx=idx, attempt=attempt, outcome=pick(OUTCOMES))
    if action == "lose":
        return action, partial(T.worker_lost, idx=pick(deciding), reason="lost")
    verbs = {"never_fits": partial(T.unschedulable, reason="never fits"),
             "terminate": partial(T.terminate, reason="Terminated by user"),
             "complete": partial(T.complete, reason="Completed by user"),
             "parent": partial(T.end_by_parent, reason=PARENT_JOB_TERMINATED)}
    return action, verbs[action]


def check(life: Lifetime, before: Lifetime, action: str, event: Event, snap: Snapshot,
          effects: Effects) -> None:
    """Every invariant of one event (``before`` is the job as the event found it)."""
    job, tasks = life.job, life.tasks
    # the effects are the whole change: the store written from them is the snapshot the event left
    assert job == snap.job and tasks == snap.tasks
    # what has finished stays finished, as it finished
    if before.job.state in TERMINAL_JOB_STATES:
        assert job.state == before.job.state
    for idx, task in before.tasks.items():
        if task.state in TERMINAL_TASK_STATES:
            assert tasks[idx] == task
    for task in tasks.values():
        assert task.state not in TERMINAL_TASK_STATES or task.finished_ms is not None
        assert task.attempt == before.tasks[task.idx].attempt  # a transition never starts an attempt
    # a finished job has no unfinished task and nothing queued; an unfinished one is what its tasks say
    counts = Counter(task.state for task in tasks.values())
    if job.state in TERMINAL_JOB_STATES:
        assert set(counts) <= TERMINAL_TASK_STATES and not life.queued
    else:
        assert derive_job_state(job.state, counts, job.failure_count, job.max_task_failures,
                                job.started_ms is not None) == job.state
    # the counts add up, and stay within the budgets
    assert job.failure_count == sum(task.failure_count for task in tasks.values())
    assert job.preemption_count == sum(task.preemption_count for task in tasks.values())
    assert all(task.failure_count <= job.max_retries_failure + 1 for task in tasks.values())
    assert job.failure_count <= job.max_task_failures or job.state == J.JOB_STATE_FAILED
    # stops name live attempts, whose tasks are no longer active; what is queued is PENDING
    assert {stop.idx for stop in effects.stops} <= before.live
    assert all(tasks[stop.idx].state not in ACTIVE_TASK_STATES for stop in effects.stops)
    assert all(tasks[idx].state == J.TASK_STATE_PENDING for idx in life.queued)
    # a gang keeps no member running past a failure or a lost worker
    if job.coscheduled and isinstance(event, partial) and event.func in (T.attempt_ended, T.worker_lost):
        outcome: Any = event.keywords.get("outcome")
        if outcome is None or outcome.state == J.TASK_STATE_FAILED:
            assert not counts.keys() & ACTIVE_TASK_STATES
    # the jobs below end only when the job's end (or a verb that ends its tree) says so
    ended_now = job.state in TERMINAL_JOB_STATES and before.job.state not in TERMINAL_JOB_STATES
    if ended_now and job.state == J.JOB_STATE_SUCCEEDED:
        assert (JOB_ID, PARENT_JOB_TERMINATED) in effects.end_below
    if (JOB_ID, PARENT_JOB_TERMINATED) in effects.end_below and action not in ("terminate", "complete"):
        assert ended_now and ends_descendants(job.state, life.policy, job.replicas)
    # each task event is about a task of the job, in its current attempt, at the time of the event
    assert all(e.job_id == JOB_ID and e.attempt == tasks[e.idx].attempt and e.ts_ms == snap.now
               for e in effects.events)


@settings(max_examples=150, deadline=None, database=None)
@given(replicas=st.integers(1, 4), coscheduled=st.booleans(), retries=st.integers(0, 2),
       budget=st.integers(0, 3), policy=st.sampled_from(POLICIES),
       choices=st.lists(st.integers(0, 2**16), min_size=12, max_size=40))
def test_every_lifetime_of_a_job_keeps_the_invariants(replicas: int, coscheduled: bool, retries: int,
                                                      budget: int, policy: int, choices: list[int]) -> None:
    """``choices`` pick, one by one, what happens next (``step``); ``note``s name what happened, for
    ``--hypothesis-show-statistics``."""
    job = job_row(replicas, coscheduled=coscheduled, retries=retries, budget=budget)
    life = Lifetime(job, {idx: task_row(idx) for idx in range(replicas)}, policy, queued=set(range(replicas)))
    for choice in choices:
        before = life.copy()
        action, event = step(life, choice)
        if event is not None:
            note(f"{action}: {getattr(event, 'func', event).__name__}")
            snap, effects = life.decide(event)
            check(life, before, action, event, snap, effects)
            if life.job.state in TERMINAL_JOB_STATES and before.job.state not in TERMINAL_JOB_STATES:
                note(f"the job ended by {action}: {J.JobState.Name(life.job.state)}")
    snap, effects = life.decide(partial(T.terminate, reason="Terminated by user"))
    assert life.job.state in TERMINAL_JOB_STATES and not life.queued  # TerminateJob always ends a job
    assert (JOB_ID, PARENT_JOB_TERMINATED) in effects.end_below
