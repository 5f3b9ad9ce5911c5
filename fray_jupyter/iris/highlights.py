"""Which log lines are the likely root cause of a failed task: Iris 0.2.227's rules
(``iris/cluster/log_highlights.py`` and ``_task_root_cause_highlights`` in its controller's
``tasks.py``), restated as pure functions over lines with the patterns as tables.

Rules:

* Only a task that ended FAILED or WORKER_FAILED has highlights (``ROOT_CAUSE_STATES``); they are
  picked from the newest ``ROOT_CAUSE_LOG_TAIL`` lines of the task's log, every attempt's, in order
  (so a retried task shows each attempt's traceback).
* A leading multi-GPU rank tag (``[rank2] ``) is ignored while matching and kept in the result.
* Noise never counts: a tqdm frame anywhere in the line (``45%|###  |`` or the bracketed
  ``[00:12<00:15, 3.21it/s]`` stats), an HTTP access-log line, CPython's ``Extension modules:``
  dump. A line equal to the one kept just before it is dropped too.
* Of what is left, the lines matching a failure pattern (``SIGNAL_PATTERNS``: tracebacks and
  their frames, ``…Error`` / ``…Exception`` words, fatal banners, OOM, NCCL/CUDA errors, gang
  siblings) are the highlights; when none matches, the de-noised lines are. Either way only the
  newest ``MAX_HIGHLIGHTS`` are kept, so the exception line of the last traceback is the last line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from fray_jupyter.iris.proto import job_pb2

J = job_pb2

ROOT_CAUSE_STATES: Final[frozenset[int]] = frozenset({J.TASK_STATE_FAILED, J.TASK_STATE_WORKER_FAILED})
"""Task states whose status carries ``root_cause_highlights``."""
ROOT_CAUSE_LOG_TAIL: Final[int] = 200
"""How many of the task's newest log lines the highlights are picked from."""
MAX_HIGHLIGHTS: Final[int] = 20
"""At most this many highlights, the newest."""

RANK_TAG: Final[re.Pattern[str]] = re.compile(r"^\[rank\d+\] ")
PROGRESS_BAR_PATTERNS: Final[tuple[re.Pattern[str], ...]] = (
    re.compile(r"\d+%\|[^|]*\|"),  # the percentage and bar of a frame with a total
    re.compile(r"\[\d{1,2}:\d{2}(?::\d{2})?[^\]]*,\s*[\d.?]+[^\s\]]*/[^\s\],]+"),  # [elapsed<eta, rate/unit]
)
NOISE_PATTERNS: Final[tuple[re.Pattern[str], ...]] = (
    re.compile(r'"(?:GET|POST|PUT|HEAD|DELETE) [^"]* HTTP/1\.\d"\s*\d{3}'),  # an HTTP access-log line
    re.compile(r"^Extension modules:"),  # CPython's module dump after a crash
)
SIGNAL_PATTERNS: Final[tuple[re.Pattern[str], ...]] = (
    re.compile(r"Traceback \(most recent call last\)"),
    re.compile(r'^\s*File "[^"]+", line \d+'),
    re.compile(r"Fatal Python error"),
    re.compile(r"\b\w*Error\b"),
    re.compile(r"\b\w*Exception\b"),
    re.compile(r"\bDEADLINE_EXCEEDED\b"),
    re.compile(r"\bRESOURCE_EXHAUSTED\b"),
    re.compile(r"\bOOMKilled\b"),
    re.compile(r"\bout of memory\b", re.IGNORECASE),
    re.compile(r"\bSegmentation fault\b"),
    re.compile(r"\bAborted\b"),
    re.compile(r"\bcore dumped\b"),
    re.compile(r"\bCUDA error\b"),
    re.compile(r"\bNCCL\b.*\berror\b", re.IGNORECASE),
    re.compile(r"\bCoscheduled sibling\b"),
    re.compile(r"detected fatal errors"),
)


def without_rank_tag(line: str) -> str:
    """The line as the child process wrote it: a leading ``[rank<n>] `` tag removed."""
    return RANK_TAG.sub("", line, count=1)


def is_progress_bar(line: str) -> bool:
    """Whether ``line`` holds a tqdm-style progress frame anywhere (a redraw can pack several)."""
    return any(pattern.search(line) for pattern in PROGRESS_BAR_PATTERNS)


def _is_noise(body: str) -> bool:
    return is_progress_bar(body) or any(pattern.search(body) for pattern in NOISE_PATTERNS)


def failure_highlights(lines: Sequence[str], max_lines: int = MAX_HIGHLIGHTS) -> list[str]:
    """The likely root-cause lines among ``lines`` (see the module rules): the failure-pattern
    lines, else the de-noised lines, the newest ``max_lines``; never empty for a non-empty input
    that is not all noise."""
    kept: list[tuple[str, str]] = []
    previous: str | None = None
    for line in lines:
        body = without_rank_tag(line)
        if _is_noise(body) or line == previous:
            continue
        kept.append((line, body))
        previous = line
    signals = [line for line, body in kept if any(pattern.search(body) for pattern in SIGNAL_PATTERNS)]
    chosen = signals or [line for line, _ in kept]
    return chosen[-max_lines:]


def root_cause_highlights(state: int, tail: Sequence[str]) -> list[str]:
    """``GetTaskStatusResponse.root_cause_highlights`` for a task in ``state`` whose newest
    ``ROOT_CAUSE_LOG_TAIL`` log lines are ``tail``: empty unless the task FAILED or WORKER_FAILED."""
    return failure_highlights(tail) if state in ROOT_CAUSE_STATES else []
