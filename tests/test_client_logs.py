"""logs: both log sources come back as the same LogEntry rows, with task keys and a cursor."""

from __future__ import annotations

from fray_jupyter.client.logs import (
    LogQuery,
    fetch_logs_body,
    from_fetch_logs,
    from_task_logs,
    log_line,
    log_text,
    task_logs_request,
)
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.proto.logging_pb2 import LOG_LEVEL_ERROR, LogEntry


def test_log_line_prefixes_the_task_and_a_retry_attempt() -> None:
    assert log_line(LogEntry(key="/alice/train/3:0", data="loss 0.1")) == "[3] loss 0.1"
    assert log_line(LogEntry(key="/alice/train/3:2", data="again")) == "[3:2] again"
    assert log_line(LogEntry(key="/alice/train/3", attempt_id=1, data="x")) == "[3:1] x"


def test_a_saved_log_is_one_prefixed_line_per_row() -> None:
    rows = [LogEntry(key="/alice/train/0:0", data="step 1"), LogEntry(key="/alice/train/eval/1:1", data="done")]
    assert log_text(rows) == "[0] step 1\n[1:1] done\n"
    assert log_text(rows, "/alice/train") == "[0] step 1\n[eval/1:1] done\n"  # a row below the job: its path
    assert log_text([]) == ""


def test_fetch_logs_rows_map_to_log_entries_of_the_job_only() -> None:
    payload = {"entries": [
        {"timestamp": {"epochMs": "5"}, "source": "stderr", "data": "oops", "level": "LOG_LEVEL_ERROR",
         "key": "/u/j/1:2", "seq": "7", "newField": 1},
        {"source": "stdout", "data": "child", "key": "/u/j/child/0:0", "seq": "8"},
    ], "cursor": "8"}
    page = from_fetch_logs("/u/j", payload, LogQuery(cursor=3))
    assert page.cursor == 8
    [entry] = page.entries
    assert (entry.data, entry.source, entry.key, entry.attempt_id, entry.seq) == ("oops", "stderr", "/u/j/1:2", 2, 7)
    assert entry.level == LOG_LEVEL_ERROR and entry.timestamp.epoch_ms == 5


def test_an_empty_fetch_keeps_the_callers_cursor() -> None:
    assert from_fetch_logs("/u/j", {"cursor": "0"}, LogQuery(cursor=42)).cursor == 42
    assert from_fetch_logs("/u/j", {}, LogQuery(cursor=42)) == ((), 42)


def test_fetch_logs_body_selects_the_jobs_keys_by_prefix() -> None:
    body = fetch_logs_body("/u/j", LogQuery(cursor=9, tail=True, max_lines=3, substring="x"))
    assert body == {"source": "/u/j/", "matchScope": "MATCH_SCOPE_PREFIX", "cursor": "9", "tail": True,
                    "maxLines": 3, "substring": "x"}
    bounded = fetch_logs_body("/u/j", LogQuery(min_level="WARNING", before=12))
    assert (bounded["minLevel"], bounded["untilCursor"]) == ("WARNING", "12")


def test_task_logs_batches_flatten_and_get_keys() -> None:
    request = task_logs_request("/u/j", LogQuery(cursor=4, max_lines=10, min_level="error"))
    assert (request.id, request.cursor, request.max_total_lines, request.attempt_id, request.min_level) == (
        "/u/j", 4, 10, -1, "error")
    response = Controller.GetTaskLogsResponse(cursor=6, task_logs=[
        Controller.TaskLogBatch(task_id="/u/j/0", logs=[LogEntry(data="a", attempt_id=1),
                                                         LogEntry(data="b", key="/u/j/0:1")]),
        Controller.TaskLogBatch(task_id="/u/j/1", logs=[LogEntry(data="c")]),
    ])
    page = from_task_logs(response, LogQuery(cursor=4))
    assert [(e.data, e.key) for e in page.entries] == [("a", "/u/j/0:1"), ("b", "/u/j/0:1"), ("c", "/u/j/1:0")]
    assert page.cursor == 6
    assert from_task_logs(Controller.GetTaskLogsResponse(), LogQuery(cursor=4)).cursor == 4
