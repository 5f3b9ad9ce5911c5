"""The transition kernel (``controller.kernel.transitions``) as tables: a job's tasks in some states and
one event in, what it decides out (the job's and each task's state after, the attempts stopped, the
queue, the jobs below, the task events). The rules the controller process tests show end to end —
retry budgets, timeouts, gangs, lost workers, preemption counts, TerminateJob and CompleteJob, a job's
end and the jobs below — held here on rows in memory, in milliseconds."""

from __future__ import annotations

from functools import partial

import pytest

from fray_jupyter.controller.kernel import taskevents as E
from fray_jupyter.controller.kernel import transitions as T
from fray_jupyter.controller.kernel.exits import EXECUTION_TIMEOUT, Outcome
from fray_jupyter.controller.kernel.transitions import Event
from fray_jupyter.controller.kernel.trees import PARENT_JOB_TERMINATED, PARENT_TASK_RETRIED
from fray_jupyter.iris.proto import job_pb2 as J
from tests.kernel_jobs import JOB_ID, NOW, Seen, run, snapshot

P, A, R, S = J.TASK_STATE_PENDING, J.TASK_STATE_ASSIGNED, J.TASK_STATE_RUNNING, J.TASK_STATE_SUCCEEDED
F, K, W = J.TASK_STATE_FAILED, J.TASK_STATE_KILLED, J.TASK_STATE_WORKER_FAILED
U, X = J.TASK_STATE_UNSCHEDULABLE, J.TASK_STATE_COSCHED_FAILED
JP, JR, JS, JF = J.JOB_STATE_PENDING, J.JOB_STATE_RUNNING, J.JOB_STATE_SUCCEEDED, J.JOB_STATE_FAILED
JK, JW, JU = J.JOB_STATE_KILLED, J.JOB_STATE_WORKER_FAILED, J.JOB_STATE_UNSCHEDULABLE
PRESERVE, TERMINATE = J.JOB_PREEMPTION_POLICY_PRESERVE_CHILDREN, J.JOB_PREEMPTION_POLICY_TERMINATE_CHILDREN
ENDED, RETRY, SIB_END, SIB_BACK = E.TERMINATED, E.RETRY_SCHEDULED, E.SIBLING_TERMINATED, E.SIBLING_REQUEUED
FINAL, DONE, PARENT = E.JOB_FINALIZED, E.JOB_COMPLETED, E.PARENT_TERMINATED
BELOW, RETRIED = (PARENT_JOB_TERMINATED,), (PARENT_TASK_RETRIED,)


def ended(idx: int, state: int, *, timed_out: bool = False) -> Event:
    """The attempt of task ``idx`` ended by itself in ``state`` (a failure: exit code 3, or its timeout)."""
    if timed_out:
        outcome = Outcome(state, None, EXECUTION_TIMEOUT, timed_out=True)
    else:
        outcome = Outcome(state, 3, "Exit code: 3") if state == F else Outcome(state, 0)
    return partial(T.attempt_ended, idx=idx, attempt=0, outcome=outcome)


RUNNING: Event = partial(T.attempt_running, idx=0, attempt=0)
LOST: Event = partial(T.worker_lost, idx=0, reason="controller stopped while the task was running")
TERMINATED: Event = partial(T.terminate, reason="Terminated by user")
COMPLETED: Event = partial(T.complete, reason="Completed by user")
PARENT_ENDED: Event = partial(T.end_by_parent, reason=PARENT_JOB_TERMINATED)
NEVER_FITS: Event = partial(T.unschedulable, reason="coscheduled job needs 2 task slots at once")
UNRECORDED: Event = partial(T.attempt_unrecorded, idx=0, attempt=0, row_id=7, reason="disk full")

CASES = [
    pytest.param(snapshot([A]), RUNNING, Seen(JR, (R,)),
                 id="a started process makes its task and job RUNNING"),
    pytest.param(snapshot([R], exited=[0]), ended(0, S), Seen(JS, (S,), (), None, BELOW, (ENDED,)),
                 id="the last task succeeding ends the job SUCCEEDED and the jobs below"),
    pytest.param(snapshot([R, R], exited=[0]), ended(0, S), Seen(JR, (S, R), events=(ENDED,)),
                 id="one task of two succeeding leaves the job RUNNING"),
    pytest.param(snapshot([R], exited=[0], retries=1, budget=1), ended(0, F),
                 Seen(JR, (P,), (), (0,), RETRIED, (RETRY,)),
                 id="a failure within both budgets is retried, and ends the jobs below a one-task job"),
    pytest.param(snapshot([R], exited=[0], retries=1, budget=1, policy=PRESERVE), ended(0, F),
                 Seen(JR, (P,), (), (0,), (), (RETRY,)),
                 id="a retry under PRESERVE_CHILDREN leaves the jobs below"),
    pytest.param(snapshot([R], exited=[0]), ended(0, F), Seen(JF, (F,), (), None, BELOW, (ENDED,)),
                 id="a failure with no retries fails the task and the job"),
    pytest.param(snapshot([R, R], exited=[0], retries=3), ended(0, F),
                 Seen(JF, (K, K), (1,), None, (), (RETRY, FINAL, FINAL)),
                 id="a failure budget of 0 fails the job on the first failed attempt, retries or not"),
    pytest.param(snapshot([R], exited=[0], retries=3, budget=3), ended(0, F, timed_out=True),
                 Seen(JF, (F,), (), None, BELOW, (ENDED,)),
                 id="a task over its timeout fails at once, with retries left"),
    pytest.param(snapshot([R, R, R], exited=[0], coscheduled=True, retries=1, budget=1), ended(0, F),
                 Seen(JR, (P, P, P), (1, 2), (0, 1, 2), (), (SIB_BACK, SIB_BACK, RETRY)),
                 id="a gang member failing with retries left bounces the whole gang"),
    pytest.param(snapshot([R, R], exited=[0], coscheduled=True), ended(0, F),
                 Seen(JF, (F, X), (1,), None, (), (SIB_END, ENDED)),
                 id="a gang member failing for good fails its live siblings COSCHED_FAILED"),
    pytest.param(snapshot([R]), LOST, Seen(JW, (W,), (0,), None, BELOW, (ENDED,)),
                 id="a lost worker ends its task and job WORKER_FAILED"),
    pytest.param(snapshot([R, R, R], coscheduled=True), LOST,
                 Seen(JW, (W, X, X), (0, 1, 2), None, (), (ENDED, SIB_END, SIB_END)),
                 id="a lost gang member takes its siblings with it"),
    pytest.param(snapshot([R, R]), LOST, Seen(JR, (W, R), (0,), (), (), (ENDED,)),
                 id="a lost task of a plain job leaves its siblings running"),
    pytest.param(snapshot([R, P, S]), TERMINATED, Seen(JK, (K, K, S), (0,), None, BELOW, (FINAL, FINAL)),
                 id="TerminateJob kills every unfinished task and ends the whole tree"),
    pytest.param(snapshot([F], job_state=JF), TERMINATED, Seen(JF, (F,), (), None, BELOW),
                 id="TerminateJob on a finished job still ends the jobs below it"),
    pytest.param(snapshot([R, P]), COMPLETED, Seen(JS, (S, S), (0,), None, BELOW, (DONE, DONE)),
                 id="CompleteJob makes every unfinished task and the job SUCCEEDED"),
    pytest.param(snapshot([F], job_state=JF), COMPLETED, Seen(JF, (F,), (), None),
                 id="CompleteJob leaves a finished job as it is"),
    pytest.param(snapshot([R]), PARENT_ENDED, Seen(JK, (K,), (0,), None, BELOW, (PARENT,)),
                 id="a job above ending kills this one, and the jobs below it"),
    pytest.param(snapshot([R, R], policy=PRESERVE), PARENT_ENDED,
                 Seen(JK, (K, K), (0, 1), None, (), (PARENT, PARENT)),
                 id="a job above ending kills this one; under PRESERVE_CHILDREN its own children run on"),
    pytest.param(snapshot([S], job_state=JS), PARENT_ENDED, Seen(JS, (S,)),
                 id="a job above ending leaves a finished one"),
    pytest.param(snapshot([P, P], coscheduled=True), NEVER_FITS, Seen(JU, (U, U), (), None),
                 id="a job that can never start is UNSCHEDULABLE, with no task event"),
    pytest.param(snapshot([R, R], exited=[0]), UNRECORDED, Seen(JF, (F, K), (1,), None, (), (FINAL,)),
                 id="an attempt whose end cannot be recorded fails its task and job"),
    pytest.param(snapshot([R, S], exited=[0], policy=TERMINATE), ended(0, F),
                 Seen(JF, (F, S), (), None, BELOW, (ENDED,)),
                 id="under TERMINATE_CHILDREN any failed job ends the jobs below"),
    pytest.param(snapshot([R, S], exited=[0]), ended(0, F), Seen(JF, (F, S), (), None, (), (ENDED,)),
                 id="a failed job of several tasks (policy unset) preserves the jobs below"),
]


@pytest.mark.parametrize(("snap", "event", "expected"), CASES)
def test_one_event_decides(snap: T.Snapshot, event: Event, expected: Seen) -> None:
    assert run(snap, event)[0] == expected


def test_a_failure_is_charged_to_the_task_and_the_job() -> None:
    snap = snapshot([R, R], exited=[0], retries=1, budget=1)
    _, effects = run(snap, ended(0, F))
    assert (snap.tasks[0].failure_count, snap.job.failure_count) == (1, 1)
    failed = {"exit_code": 3, "error": "Exit code: 3"}
    assert effects.tasks[JOB_ID, 0] == {"state": P, "failure_count": 1, **failed}
    assert effects.attempts[JOB_ID, 0, 0] == {"state": F, **failed, "finished_ms": NOW}


def test_a_job_over_its_failure_budget_says_so_and_its_exit_code_is_0() -> None:
    snap = snapshot([R, R], exited=[0], retries=3)
    run(snap, ended(0, F))
    assert snap.job.error == ("Cumulative failed task attempts exceeded max_task_failures: "
                              "failures=1, limit=0; Exit code: 3")
    assert (snap.job.exit_code, snap.job.finished_ms) == (0, NOW)


@pytest.mark.parametrize(("state", "charged"), [(R, 1), (A, 0)])
def test_a_started_attempt_stopped_from_outside_is_a_preemption(state: int, charged: int) -> None:
    """Iris's rule (``iris.attempts``): a started attempt ended WORKER_FAILED or KILLED charges a
    preemption; one stopped before it started charges nothing."""
    for event in (LOST, TERMINATED):
        snap = snapshot([state])
        run(snap, event)
        assert (snap.tasks[0].preemption_count, snap.job.preemption_count) == (charged, charged)


def test_a_gang_bounced_for_a_retry_is_not_charged_a_preemption_and_its_stops_say_why() -> None:
    snap = snapshot([R, R], exited=[0], coscheduled=True, retries=1, budget=1)
    _, effects = run(snap, ended(0, F))
    assert [task.preemption_count for task in snap.tasks.values()] == [0, 0]
    bounced = f"Coscheduled sibling {JOB_ID}/0 bounced for atomic re-scheduling"
    assert [stop.reason for stop in effects.stops] == [bounced]
    assert effects.attempts[JOB_ID, 1, 0] == {"state": X, "error": bounced}  # its end time: when it exits


def test_a_job_starting_drops_its_scheduling_deadline() -> None:
    snap = snapshot([A])
    _, effects = run(snap, RUNNING)
    assert effects.started == {JOB_ID} and snap.job.started_ms == NOW and snap.tasks[0].started_ms == NOW


def test_a_stop_of_a_task_whose_process_is_gone_records_its_end_at_once() -> None:
    """A task decided from outside keeps its attempt's finish time for its process's exit, unless no
    process is left (a crash found at restart): then it is now."""
    lost = {"worker_failure": 1, "state": W, "error": "controller stopped while the task was running"}
    for exited, finished, stops in [((), {}, [0]), ((0,), {"finished_ms": NOW}, [])]:
        _, effects = run(snapshot([R], exited=exited), LOST)
        assert effects.attempts[JOB_ID, 0, 0] == {**lost, **finished}
        assert [stop.idx for stop in effects.stops] == stops


def test_task_events_are_iris_words_for_the_attempt_that_ended() -> None:
    _, effects = run(snapshot([R], exited=[0], retries=3, budget=3), ended(0, F, timed_out=True))
    (event,) = effects.events
    assert (event.attempt, event.ts_ms, event.severity) == (0, NOW, "Warning")
    assert event.message == "Execution timeout exceeded; controller resolved the task as FAILED."
