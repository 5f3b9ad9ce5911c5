"""Iris's rules for a captured line (``iris.loglines``): its level and the ``min_level`` filter. The same rules run by Iris itself on a corpus: ``tests/conformance/test_loglines.py``."""

from __future__ import annotations

from fray_jupyter.iris.loglines import log_level, min_level_value, passes_min_level
from fray_jupyter.iris.proto import logging_pb2

L = logging_pb2


def test_a_glog_prefix_wins_then_the_stream_decides() -> None:
    assert log_level("stdout", "hello") == L.LOG_LEVEL_INFO
    assert log_level("stderr", "hello") == L.LOG_LEVEL_ERROR
    assert log_level("stderr", "I20260101 fine") == L.LOG_LEVEL_INFO
    assert log_level("stdout", "E0101 broken") == L.LOG_LEVEL_ERROR
    assert log_level("stdout", "W1 careful") == L.LOG_LEVEL_WARNING
    assert log_level("stdout", "Everything") == L.LOG_LEVEL_INFO  # a letter then a non-digit is no prefix
    assert log_level("build", "x") == L.LOG_LEVEL_UNKNOWN


def test_a_rank_tag_does_not_hide_the_prefix_and_iris_own_failures_are_errors() -> None:
    assert log_level("stderr", "[rank3] I0101 step") == L.LOG_LEVEL_INFO
    assert log_level("stdout", "[rank3] W0101 hot") == L.LOG_LEVEL_WARNING
    assert log_level("error", "I0101 whatever it says") == L.LOG_LEVEL_ERROR


def test_a_tqdm_frame_on_stderr_is_info() -> None:
    for frame in ("Loading:  45%|####5     | 450/1000 [00:12<00:15,  3.21it/s]", "450it [00:12,  3.21it/s]",
                  "step [1:02:03, 1.20s/it]"):
        assert log_level("stderr", frame) == L.LOG_LEVEL_INFO
    assert log_level("stderr", "loss 45% lower | good") == L.LOG_LEVEL_ERROR


def test_min_level_names_and_what_passes() -> None:
    assert min_level_value(" warning ") == L.LOG_LEVEL_WARNING == min_level_value("WARNING")
    assert min_level_value("") is None and min_level_value("LOUD") is None
    warning = min_level_value("warning")
    assert passes_min_level(L.LOG_LEVEL_ERROR, warning) and not passes_min_level(L.LOG_LEVEL_INFO, warning)
    assert passes_min_level(L.LOG_LEVEL_UNKNOWN, warning) and passes_min_level(L.LOG_LEVEL_DEBUG, None)
