"""Why a job waits or failed, on the embedded controller and on the genuine Iris scheduler (the twin),
compared as the user reads it:

* every corpus job that neither can ever place (and a GPU gang one node larger than the warm pool),
  sent to both with the twin at rest (only its warm
  slices up, as the cluster was before anything ran): the same ``JobStatus.pending_reason``, word for
  word (Iris's ``Scheduler: …`` and ``Autoscaler: …`` parts), and no task-level reason (Iris gives a
  task one only while it is retried);
* a task that prints a progress bar and a traceback and fails twice (one retry): the same
  ``root_cause_highlights`` (both attempts' tracebacks, the exception line last), the same attempts,
  the same failure count;
* a running two-task job cancelled: both tasks' started attempts count as preemptions on both;
* a task that reports its status text with Iris's own ``report_task_status_text``: read back the
  same through ``FrayClient.status_texts`` (Iris's dashboard query) from both.

What differs is listed in ``differences.py`` (``REASON_DIFFERENCES``, ``EMBEDDED_ONLY_REASONS``); the
suite fails on a difference not listed there and on a listed one that no longer occurs. The module
runs after the corpus (its file sorts last) and waits for the twin to be at rest first.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.status_text import StatusText
from fray_jupyter.cluster.profile import load_profile
from fray_jupyter.controller.kernel import scheduler
from fray_jupyter.iris.placement import launch_refusal
from fray_jupyter.iris.placement_workers import pending_reason
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.iris.states import is_job_finished
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from tests.controller_harness import launch_request
from tests.differential.conftest import on_both, wait_at_rest
from tests.differential.corpus import CORPUS, Case, plan_of
from tests.differential.differences import EMBEDDED_ONLY_REASONS, REASON_DIFFERENCES
from tests.twin import settle
from tests.waiting import until

C = controller_pb2.Controller
J = job_pb2
USER = "why"
FAILING = ("echo starting; printf 'Loading:  45%%|####5     | 450/1000 [00:12<00:15,  3.21it/s]\\n' >&2; "
           "printf 'Traceback (most recent call last):\\n  File \"train.py\", line 3, in <module>\\n' >&2; "
           "echo \"ValueError: bad shape on attempt ${IRIS_TASK_ID##*:}\" >&2; exit 1")
REPORT = """
import time
from iris.client.client import get_iris_ctx
from iris.cluster.client.job_info import get_job_info
info = get_job_info()
get_iris_ctx().client.report_task_status_text(info.task_id, info.attempt_id, "**step 3/10**\\n\\n[W&B](https://wandb.ai/r)",
                                              "step 3/10 · loss 2.0")
time.sleep(120)
"""


def _held(case: Case) -> bool:
    request = plan(JobRequest(name=case.name, entrypoint=Entrypoint.from_binary("true", []), resources=case.resources),
                   user=USER).request
    return launch_refusal(request, load_profile()) is None and pending_reason(request, load_profile()) is not None


WARM_GANG = Case("h100x8-gang5", ResourceConfig.with_gpu("H100", count=8, replicas=5))
"""A leafgroup gang one node larger than the warm GPU pool: warm workers match, too few share a leafgroup."""
HELD: tuple[Case, ...] = tuple(case for case in (*CORPUS, WARM_GANG) if _held(case))
"""The corpus jobs (and ``WARM_GANG``) LaunchJob accepts and no group can ever place (the embedded
controller's own rules)."""


@pytest.fixture(scope="module")
def held(twin: FrayClient, embedded: FrayClient, tmp_path_factory: pytest.TempPathFactory,
         ) -> Iterator[dict[str, tuple[J.JobStatus, J.JobStatus, list[J.TaskStatus], list[J.TaskStatus]]]]:
    """Each held corpus job's status and tasks on (twin, embedded), its pending reason settled."""
    wait_at_rest(twin)
    workspace = tmp_path_factory.mktemp("held")
    found = {}
    submitted = {client.url: {case.name: client.submit(plan_of(case, workspace)) for case in HELD}
                 for client in (twin, embedded)}
    settled = on_both(lambda client, _side: settle(client, submitted[client.url].values()), twin, embedded)
    for side, verdicts in zip(("twin", "embedded"), settled, strict=True):
        undecided = {job_id: found for job_id, found in verdicts.items() if found.verdict == "undecided"}
        assert not undecided, f"{side}: no verdict for {undecided}"
    for case in HELD:
        on_twin, on_embedded = submitted[twin.url][case.name], submitted[embedded.url][case.name]
        found[case.name] = (twin.status(on_twin), embedded.status(on_embedded), list(twin.tasks(on_twin)),
                            list(embedded.tasks(on_embedded)))
    yield found
    for client in (twin, embedded):
        for job_id in submitted[client.url].values():
            client.terminate(job_id)


def test_the_corpus_has_jobs_held_for_ever() -> None:
    assert len(HELD) >= 5 and WARM_GANG in HELD


@pytest.mark.parametrize("case", HELD, ids=[case.name for case in HELD])
def test_a_job_held_for_ever_says_what_iris_says(held: dict[str, tuple[J.JobStatus, J.JobStatus, list[J.TaskStatus],
                                                                      list[J.TaskStatus]]], case: Case) -> None:
    twin, embedded, twin_tasks, embedded_tasks = held[case.name]
    assert twin.state == embedded.state == J.JOB_STATE_PENDING
    documented = REASON_DIFFERENCES.get(case.name)
    same = twin.pending_reason == embedded.pending_reason
    assert same or documented, f"twin {twin.pending_reason!r}\nembedded {embedded.pending_reason!r}"
    assert not (same and documented), f"differences.py lists {case.name}, whose reasons now agree: remove it"
    assert [t.pending_reason for t in twin_tasks] == [t.pending_reason for t in embedded_tasks] == [""] * len(twin_tasks)


def test_the_reasons_kept_as_the_embedded_controller_s_own_are_still_its_own() -> None:
    """Each ``EMBEDDED_ONLY_REASONS`` phrase is in what its scheduler says of a job waiting for slots."""
    said = [scheduler.pending_reason(scheduler.QueuedJob("/a/j", 1, False, [0]), 0, 8, 2, holding=0),
            scheduler.pending_reason(scheduler.QueuedJob("/a/g", 2, True, [0, 1]), 4, 8, 1, holding=2),
            scheduler.room_reason(scheduler.QueuedJob("/a/n", 3, False, [0], slotless=True), 256, 256)]
    assert all(any(phrase in text for text in said) for phrase in EMBEDDED_ONLY_REASONS), said


def _run(client: FrayClient, name: str, command: str, **fields: Any) -> str:
    return client.submit(launch_request(name, command, user=USER, **fields))


def _all_running(client: FrayClient, job_id: str) -> None:
    """Until every task of the job runs."""
    until(lambda: {t.state for t in client.tasks(job_id)} == {J.TASK_STATE_RUNNING},
          f"{client.url}: every task of {job_id} running", feed=client)


def _finished(client: FrayClient, job_id: str) -> J.JobStatus:
    client.wait(job_id, timeout=180)
    return client.status(job_id)


def test_a_failed_task_s_root_cause_attempts_and_counts_are_iris_s(twin: FrayClient, embedded: FrayClient) -> None:
    seen = []
    for client in (twin, embedded):
        job_id = _run(client, "fails-twice", FAILING, max_retries_failure=1, max_task_failures=1)
        status = _finished(client, job_id)
        task = client.task(f"{job_id}/0")
        seen.append((status.state, status.failure_count, status.preemption_count,
                     [(a.attempt_id, a.state, a.exit_code) for a in task.task.attempts],
                     list(task.root_cause_highlights)))
    on_twin, on_embedded = seen
    assert on_twin == on_embedded
    assert on_twin[4][-1] == "ValueError: bad shape on attempt 1" and on_twin[1] == 2


def test_a_cancelled_running_task_is_a_preemption_on_both(twin: FrayClient, embedded: FrayClient) -> None:
    seen = []
    for client in (twin, embedded):
        job_id = _run(client, "cancelled", "sleep 120", replicas=2)
        _all_running(client, job_id)
        client.terminate(job_id)
        status = _finished(client, job_id)
        seen.append((status.state, status.failure_count, status.preemption_count,
                     sorted(a.state for t in client.tasks(job_id) for a in t.attempts)))
    assert seen[0] == seen[1] == (J.JOB_STATE_KILLED, 0, 2, [J.TASK_STATE_KILLED] * 2), seen


def _status_text(client: FrayClient, job_id: str) -> StatusText:
    """The status text the job's task 0 reported, once it has (failing at once if the job ends first)."""
    since = client.status(job_id).submitted_at.epoch_ms

    def reported() -> StatusText | None:
        texts = client.status_texts([f"{job_id}/0"], since_ms=since)
        assert texts or not is_job_finished(client.status(job_id).state), [e.data for e in client.logs(job_id).entries]
        return texts.get(f"{job_id}/0")

    return until(reported, f"{client.url}: {job_id}/0's status text", feed=client)


def test_status_text_reported_with_iris_s_own_call_reads_the_same(twin: FrayClient, embedded: FrayClient) -> None:
    seen = []
    command = f"exec {shlex.quote(sys.executable)} -c {shlex.quote(REPORT)}"
    for client in (twin, embedded):
        job_id = _run(client, "reports", command)
        text = _status_text(client, job_id)
        client.terminate(job_id)
        seen.append(text)
    assert seen[0] == seen[1] and "https://wandb.ai/r" in seen[0].detail_md
