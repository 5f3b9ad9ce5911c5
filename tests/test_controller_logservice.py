"""finelog's FetchLogs over the controller's log store (``controller.api.logservice``): key scopes,
cursors, tail and caps, filters and levels, on a real store with lines of two jobs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.controller.api.logservice import DEFAULT_MAX_LINES, LogService
from fray_jupyter.controller.kernel.rows import JobRow
from fray_jupyter.controller.rpc_error import RpcError
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.proto import finelog_logging_pb2

F = finelog_logging_pb2
JOB = "/alice/train"
OTHER = "/alice/train-2"  # shares a text prefix with JOB, never its keys


def _job(job_id: str, replicas: int) -> JobRow:
    return JobRow(id=0, job_id=job_id, name=job_id, user="alice", state=1, submitted_ms=0, started_ms=None,
                  finished_ms=None, error="", exit_code=None, status_message="", replicas=replicas, coscheduled=0,
                  max_retries_failure=0, max_task_failures=0, timeout_ms=None, scheduling_timeout_ms=None,
                  failure_count=0, preemption_count=0, request=b"", resources=b"", bundle_path="")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[LogService]:
    """seq 1-4: JOB task 0 attempt 0 (stdout, stdout, stderr, glog W on stderr); 5: OTHER;
    6-7: JOB task 1 attempt 0 and task 0 attempt 1; 8: JOB task 10 attempt 0."""
    store = Store(tmp_path / "store.sqlite3")
    with store.transaction():
        store.insert_job(_job(JOB, 11))
        store.insert_job(_job(OTHER, 1))
    store.append_logs([
        (JOB, 0, 0, 1000, "stdout", "step 1"),
        (JOB, 0, 0, 2000, "stdout", "step 2"),
        (JOB, 0, 0, 3000, "stderr", "Traceback: boom"),
        (JOB, 0, 0, 4000, "stderr", "W20260101 12:00:00 careful"),
        (OTHER, 0, 0, 5000, "stdout", "other job"),
        (JOB, 1, 0, 6000, "stdout", "task one"),
        (JOB, 0, 1, 7000, "stdout", "retry"),
        (JOB, 10, 0, 8000, "build", "task ten"),
    ])
    yield LogService(store)
    store.close()


def fetch(service: LogService, source: str, scope: int = F.MATCH_SCOPE_PREFIX, **fields: object) -> F.FetchLogsResponse:
    return service.fetch_logs(F.FetchLogsRequest(source=source, match_scope=scope, **fields))  # type: ignore[arg-type]


def seqs(response: F.FetchLogsResponse) -> list[int]:
    return [entry.seq for entry in response.entries]


def test_scopes_select_keys_literally(service: LogService) -> None:
    assert seqs(fetch(service, f"{JOB}/")) == [1, 2, 3, 4, 6, 7, 8]
    assert seqs(fetch(service, f"{JOB}/0:")) == [1, 2, 3, 4, 7]  # every attempt of task 0, not task 10
    assert seqs(fetch(service, f"{JOB}/1")) == [6, 8]  # a literal prefix: task 10 too
    assert seqs(fetch(service, f"{JOB}/0:1", F.MATCH_SCOPE_EXACT)) == [7]
    assert seqs(fetch(service, f"{JOB}/0", F.MATCH_SCOPE_EXACT)) == []
    assert seqs(fetch(service, "/alice/")) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert seqs(fetch(service, "/alice/train")) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert seqs(fetch(service, "/bob/")) == []
    assert seqs(fetch(service, r".*train/1\d?:0", F.MATCH_SCOPE_REGEX)) == [6, 8]
    assert seqs(fetch(service, r"train/1\d?:0", F.MATCH_SCOPE_REGEX)) == []  # anchored at the key's start
    assert seqs(fetch(service, r"/alice/train/1", F.MATCH_SCOPE_REGEX)) == [6, 8]
    assert seqs(fetch(service, ".*train-2.*", F.MATCH_SCOPE_UNSPECIFIED)) == [5]  # UNSPECIFIED is a regex
    assert seqs(fetch(service, "/alice/train_2/")) == []  # '_' is not a wildcard


def test_entries_carry_key_attempt_level_time_and_seq(service: LogService) -> None:
    exact = fetch(service, f"{JOB}/0:1", F.MATCH_SCOPE_EXACT).entries
    assert [(e.key, e.attempt_id, e.data) for e in exact] == [("", 1, "retry")]  # finelog: no key for EXACT
    entries = fetch(service, f"{JOB}/0:").entries
    assert [(e.key, e.attempt_id, e.source, e.data) for e in entries][-1] == (f"{JOB}/0:1", 1, "stdout", "retry")
    assert [e.level for e in entries] == [F.LOG_LEVEL_INFO, F.LOG_LEVEL_INFO, F.LOG_LEVEL_ERROR,
                                          F.LOG_LEVEL_WARNING, F.LOG_LEVEL_INFO]
    assert entries[0].timestamp.epoch_ms == 1000


def test_cursor_tail_and_caps(service: LogService) -> None:
    first = fetch(service, f"{JOB}/", max_lines=2)
    assert seqs(first) == [1, 2] and first.cursor == 2
    rest = fetch(service, f"{JOB}/", cursor=first.cursor)
    assert seqs(rest) == [3, 4, 6, 7, 8] and rest.cursor == 8
    caught_up = fetch(service, f"{JOB}/", cursor=rest.cursor)
    assert seqs(caught_up) == [] and caught_up.cursor == 8  # nothing new: the same cursor comes back
    tail = fetch(service, f"{JOB}/", tail=True, max_lines=2)
    assert seqs(tail) == [7, 8] and tail.cursor == 8  # the newest lines, in seq order
    assert seqs(fetch(service, f"{JOB}/", cursor=2, until_cursor=7)) == [3, 4, 6]
    assert seqs(fetch(service, f"{JOB}/", until_cursor=4, tail=True, max_lines=1)) == [3]
    assert DEFAULT_MAX_LINES == 1000


def test_filters(service: LogService) -> None:
    assert seqs(fetch(service, f"{JOB}/", since_ms=3000)) == [4, 6, 7, 8]
    assert seqs(fetch(service, f"{JOB}/", substring="step")) == [1, 2]
    assert seqs(fetch(service, f"{JOB}/", substring="STEP")) == []
    assert seqs(fetch(service, f"{JOB}/", regex=r"^t.*e")) == [6, 8]
    assert seqs(fetch(service, f"{JOB}/", min_level="warning")) == [3, 4, 8]  # "build" is UNKNOWN: always passes
    assert seqs(fetch(service, f"{JOB}/", min_level="ERROR")) == [3, 8]
    assert seqs(fetch(service, f"{JOB}/", cluster="elsewhere")) == []
    assert seqs(fetch(service, f"{JOB}/", min_level="LOUD")) == [1, 2, 3, 4, 6, 7, 8]  # not a level: no filter


@pytest.mark.parametrize(("fields", "scope"), [({"regex": "("}, F.MATCH_SCOPE_PREFIX), ({}, F.MATCH_SCOPE_REGEX)])
def test_bad_regular_expressions_are_invalid_argument(service: LogService, fields: dict[str, str],
                                                      scope: int) -> None:
    with pytest.raises(RpcError) as refused:
        fetch(service, "(" if scope == F.MATCH_SCOPE_REGEX else f"{JOB}/", scope, **fields)
    assert refused.value.code.connect_name == "invalid_argument" and "regular expression" in refused.value.message

