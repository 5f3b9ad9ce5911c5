"""Iris's rules for one captured line of task output, for the controller (levels, filters) and the
views (which lines are progress-bar redraws): restated from marin-iris 0.2.227
(``iris.cluster.log_keys.classify_log_level``, ``iris.cluster.log_highlights``, rigging's
``parse_log_level``), checked against them in ``tests/conformance/test_loglines.py``.

* Capture: output is cut into lines at ``\\n``, ``\\r\\n`` and a lone ``\\r`` (Python's universal
  newlines, which a genuine worker's text-mode pipes apply), and each line loses its trailing
  whitespace; an empty line is kept. So every carriage-return redraw of a tqdm bar is a line of
  its own (the embedded controller's runner cuts output the same way).
* Level: lines of the ``error`` stream (failures Iris writes itself) are ERROR. Otherwise, after a
  leading multi-GPU rank tag (``[rank3] ``), a glog-style prefix wins: ``I``, ``W``, ``E``, ``D`` or
  ``C`` followed by a digit (``I20260102 12:34:56 ...``). Without one, a tqdm frame on stderr is
  INFO, other stderr lines ERROR, stdout lines INFO, any other stream UNKNOWN (which passes every
  level filter).
* A tqdm frame is a line holding ``NN%|...|`` or the bracketed clock-and-rate
  ``[00:12<00:15, 3.21it/s]`` / ``[00:12, 1.20s/it]`` anywhere in it.
"""

from __future__ import annotations

import re
from typing import Final, TypeAlias

from fray_jupyter.iris.proto import logging_pb2

L = logging_pb2
Level: TypeAlias = logging_pb2.LogLevel
LEVELS: Final[dict[str, Level]] = {
    "DEBUG": L.LOG_LEVEL_DEBUG, "INFO": L.LOG_LEVEL_INFO, "WARNING": L.LOG_LEVEL_WARNING,
    "ERROR": L.LOG_LEVEL_ERROR, "CRITICAL": L.LOG_LEVEL_CRITICAL,
}
"""Level names as Iris spells them (``min_level`` takes these, in any case) → ``LogLevel``."""
LEVEL_NAMES: Final[dict[Level, str]] = {level: name for name, level in LEVELS.items()}
_PREFIX_LEVELS: Final[dict[str, Level]] = {name[0]: level for name, level in LEVELS.items()}
_STREAM_LEVELS: Final[dict[str, Level]] = {"stdout": L.LOG_LEVEL_INFO, "stderr": L.LOG_LEVEL_ERROR}
INJECTED_ERROR_SOURCE: Final[str] = "error"
"""The stream of failure lines Iris writes into a task's log itself (always ERROR)."""
RANK_TAG: Final[re.Pattern[str]] = re.compile(r"^\[rank\d+\] ")
PROGRESS_BAR: Final[tuple[re.Pattern[str], ...]] = (
    re.compile(r"\d+%\|[^|]*\|"),
    re.compile(r"\[\d{1,2}:\d{2}(?::\d{2})?[^\]]*,\s*[\d.?]+[^\s\]]*/[^\s\],]+"),
)
"""A tqdm frame with a total (``45%|####5     |``) and the stats every frame carries."""


def strip_rank_tag(line: str) -> str:
    """The line without a leading multi-GPU rank tag (``[rank2] ``)."""
    return RANK_TAG.sub("", line, count=1)


def is_progress_bar_line(line: str) -> bool:
    """Whether ``line`` holds a tqdm frame anywhere in it (see the module rules)."""
    return any(pattern.search(line) for pattern in PROGRESS_BAR)


def log_level(source: str, data: str) -> Level:
    """The ``LogLevel`` Iris gives a captured line of ``source`` (see the module rules)."""
    if source == INJECTED_ERROR_SOURCE:
        return L.LOG_LEVEL_ERROR
    body = strip_rank_tag(data)
    if len(body) > 1 and body[0] in _PREFIX_LEVELS and body[1].isdigit():
        return _PREFIX_LEVELS[body[0]]
    if source == "stderr" and is_progress_bar_line(body):
        return L.LOG_LEVEL_INFO
    return _STREAM_LEVELS.get(source, L.LOG_LEVEL_UNKNOWN)


def min_level_value(name: str) -> Level | None:
    """The ``LogLevel`` a ``min_level`` filter names (any case, blanks ignored); None for an empty
    name or one that is no level (Iris then filters nothing)."""
    return LEVELS.get(name.strip().upper())


def passes_min_level(level: Level, minimum: Level | None) -> bool:
    """Whether a line of ``level`` passes a ``min_level`` filter of ``minimum``: UNKNOWN always does."""
    return minimum is None or level == L.LOG_LEVEL_UNKNOWN or level >= minimum

