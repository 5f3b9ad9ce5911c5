"""Iris's rules for one captured line of task output — how output is cut into lines, and each line's
level (what ``min_level`` filters on, in the controller and on the wire): restated from marin-iris 0.2.227
(``iris.cluster.log_keys.classify_log_level``, rigging's ``parse_log_level``), checked against
them in ``tests/conformance/test_loglines.py``.

* Capture: output is cut into lines at ``\\n``, ``\\r\\n`` and a lone ``\\r`` (Python's universal
  newlines, which a genuine worker's text-mode pipes apply), and each line loses its trailing
  whitespace; an empty line is kept. So every carriage-return redraw of a tqdm bar is a line of
  its own (the embedded controller's runner cuts output the same way).
* Level: lines of the ``error`` stream (failures Iris writes itself) are ERROR. Otherwise, after a
  leading multi-GPU rank tag (``[rank3] ``), a glog-style prefix wins: ``I``, ``W``, ``E``, ``D`` or
  ``C`` followed by a digit (``I20260102 12:34:56 ...``). Without one, a tqdm frame on stderr is
  INFO, other stderr lines ERROR, stdout lines INFO, any other stream UNKNOWN (which passes every
  level filter).
* A tqdm frame and a rank tag are what ``iris.highlights`` says they are (Iris's own patterns,
  shared with the root-cause rules).
"""

from __future__ import annotations

from typing import Final, TypeAlias

from fray_jupyter.iris.highlights import is_progress_bar, without_rank_tag
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


def log_level(source: str, data: str) -> Level:
    """The ``LogLevel`` Iris gives a captured line of ``source`` (see the module rules)."""
    if source == INJECTED_ERROR_SOURCE:
        return L.LOG_LEVEL_ERROR
    body = without_rank_tag(data)
    if len(body) > 1 and body[0] in _PREFIX_LEVELS and body[1].isdigit():
        return _PREFIX_LEVELS[body[0]]
    if source == "stderr" and is_progress_bar(body):
        return L.LOG_LEVEL_INFO
    return _STREAM_LEVELS.get(source, L.LOG_LEVEL_UNKNOWN)


def min_level_value(name: str) -> Level | None:
    """The ``LogLevel`` a ``min_level`` filter names (any case, blanks ignored); None for an empty
    name or one that is no level (Iris then filters nothing)."""
    return LEVELS.get(name.strip().upper())


def passes_min_level(level: Level, minimum: Level | None) -> bool:
    """Whether a line of ``level`` passes a ``min_level`` filter of ``minimum``: UNKNOWN always does."""
    return minimum is None or level == L.LOG_LEVEL_UNKNOWN or level >= minimum

