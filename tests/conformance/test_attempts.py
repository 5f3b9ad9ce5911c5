"""``iris.attempts`` reads a task's attempts as Iris's controller does (the oracles: its
``attempt_counts.counts_from_attempts`` and the pending reason ``tasks.task_to_proto`` writes), over
random attempt histories."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st
from iris.cluster.controller import attempt_counts as iris_counts
from iris.cluster.controller import tasks as iris_tasks
from iris.cluster.controller.task_state import AttemptDetailRow
from iris.cluster.types import JobName
from rigging.timing import Timestamp

from fray_jupyter.iris.attempts import attempt_counts, retry_reason
from fray_jupyter.iris.proto import job_pb2

J = job_pb2
TASK_STATES = [state for state in J.TaskState.values() if state != J.TASK_STATE_UNSPECIFIED]
TASK_ID = "/alice/train/0"


@dataclass(frozen=True)
class Attempt:
    state: int
    started_ms: int | None

    def ours(self, attempt_id: int) -> J.TaskAttempt:
        attempt = J.TaskAttempt(attempt_id=attempt_id, state=self.state)  # type: ignore[arg-type]
        if self.started_ms is not None:
            attempt.started_at.epoch_ms = self.started_ms
        return attempt

    def theirs(self, attempt_id: int) -> AttemptDetailRow:
        return AttemptDetailRow(
            task_id=JobName.from_wire(TASK_ID), attempt_id=attempt_id, worker_id=None, state=self.state,
            started_at_ms=None if self.started_ms is None else Timestamp.from_ms(self.started_ms),
            finished_at_ms=None, exit_code=None, error=None, attempt_uid="u", pod_name=None, pod_uid=None,
            node_name=None, terminal_reason=None, output_archive_json=None)


ATTEMPTS = st.lists(st.builds(Attempt, st.sampled_from(TASK_STATES), st.one_of(st.none(), st.integers(1, 10**12))),
                    max_size=6)


@settings(max_examples=300, deadline=None)
@given(ATTEMPTS)
def test_failure_and_preemption_counts_are_iris_s(attempts: list[Attempt]) -> None:
    theirs = iris_counts.counts_from_attempts([a.theirs(i) for i, a in enumerate(attempts)])
    ours = attempt_counts([a.ours(i) for i, a in enumerate(attempts)])
    assert (ours.failures, ours.preemptions) == (theirs.failure_count, theirs.preemption_count)


def _iris_pending_reason(state: int, attempts: list[Attempt]) -> str:
    rows = tuple(a.theirs(i) for i, a in enumerate(attempts))
    task = iris_tasks.TaskWithAttempts(
        task_id=JobName.from_wire(TASK_ID), job_id=JobName.from_wire("/alice/train"), state=state,
        current_attempt_id=len(attempts) - 1, max_retries_failure=3, max_retries_preemption=100,
        submitted_at_ms=Timestamp.from_ms(1), priority_band=0, error=None, exit_code=None, started_at_ms=None,
        finished_at_ms=None, current_worker_id=None, current_worker_address=None, container_id=None,
        status_message=None, backend_id="", cluster="", peer_worker_label="", attempts=rows)
    return str(iris_tasks.task_to_proto(task).pending_reason)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(TASK_STATES), ATTEMPTS)
def test_a_retrying_task_says_what_iris_says(state: int, attempts: list[Attempt]) -> None:
    last = attempts[-1].state if attempts else None
    assert retry_reason(state, max(len(attempts) - 1, 0), last) == _iris_pending_reason(state, attempts)


def test_the_retry_line() -> None:
    assert retry_reason(J.TASK_STATE_PENDING, 0, J.TASK_STATE_FAILED) == "Retrying (attempt 1, last: task_state_failed)"
    assert retry_reason(J.TASK_STATE_PENDING, 0, None) == ""
    assert retry_reason(J.TASK_STATE_RUNNING, 1, J.TASK_STATE_FAILED) == ""
