"""``client.liveness``: a running task is silent once neither a log line, a status report nor its
attempt's start came within the threshold, which ``$FRAY_SILENCE_AFTER`` sets."""

from __future__ import annotations

import pytest

from fray_jupyter.client.liveness import DEFAULT_SILENCE_S, SILENCE_ENV, silence_after_ms, silent_ms
from fray_jupyter.iris.proto import job_pb2 as J

MINUTE = 60_000


def _running(started: int) -> J.TaskStatus:
    task = J.TaskStatus(task_id="/u/j/0", state=J.TASK_STATE_RUNNING, current_attempt_id=1)
    task.attempts.add(attempt_id=0).started_at.epoch_ms = 1
    task.attempts.add(attempt_id=1).started_at.epoch_ms = started
    return task


def test_silence_counts_from_the_newest_sign_of_life() -> None:
    task, now = _running(started=0 * MINUTE + 1), 20 * MINUTE
    assert silent_ms(task, now, after_ms=10 * MINUTE) == 20 * MINUTE - 1
    assert silent_ms(task, now, last_line_ms=8 * MINUTE, after_ms=10 * MINUTE) == 12 * MINUTE
    assert silent_ms(task, now, last_line_ms=8 * MINUTE, last_report_ms=15 * MINUTE, after_ms=10 * MINUTE) is None
    assert silent_ms(_running(started=12 * MINUTE), now, after_ms=10 * MINUTE) is None  # a fresh retry
    ended = _running(started=1)
    ended.state = J.TASK_STATE_SUCCEEDED
    assert silent_ms(ended, now, after_ms=MINUTE) is None
    assert silent_ms(J.TaskStatus(state=J.TASK_STATE_RUNNING), now, after_ms=MINUTE) is None  # no time known


def test_the_threshold_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SILENCE_ENV, raising=False)
    assert silence_after_ms() == DEFAULT_SILENCE_S * 1000
    monkeypatch.setenv(SILENCE_ENV, "1.5")
    assert silence_after_ms() == 1500
    assert silent_ms(_running(started=1000), 2600) == 1600
    for bad in ("soon", "0", "-3", "inf", "nan"):
        monkeypatch.setenv(SILENCE_ENV, bad)
        with pytest.raises(ValueError, match=rf"^\$FRAY_SILENCE_AFTER must be a positive number of seconds, got '{bad}'$"):
            silence_after_ms()
