"""The one display vocabulary: how every surface shows a state, a duration, a size, a count and a
job's or task's retries — the status panel, the snapshot, ``%fray jobs``/``status``, session lines,
the controller's own report, and the sidebar, which receives this module's tables as a generated
TypeScript module (``labextension/src/vocabulary.ts``, written by ``scripts/vocabulary_ts`` at
build time; ``tests/test_vocabulary.py`` checks it is current). Standard library only: the
generator reads this file without importing the package.

Rules:

* A state is named as Iris names it (its enum without the prefix, lower case). Each has a word
  (the name with ``_`` read as a space; ``unspecified`` reads ``unknown``, ``cosched_failed``
  ``gang failed``), a tone (``TONE_COLORS`` colours it, badge and bar alike), a rank in a task bar
  (``None``: not drawn, its tasks count as waiting), whether it is final, and a sentence. A name not
  in the table reads as itself, neutral, not final.
* A task bar draws its segments by rank: done, under way, lost, then waiting — every task no drawn
  state holds (Iris's dashboard).
* A duration is from whole milliseconds: ``350 ms``, ``4.2 s`` (tenths cut), ``1m 05s``, ``2h 03m``.
* An age (how long ago something happened, how long something has been quiet) is coarse: the
  largest unit of ``AGE_UNITS`` that fits, whole units cut (``12 s``, ``4 min``, ``3 h``, ``2 d``;
  ``0 s`` under a second); "ago" reads ``just now`` under ``JUST_NOW_MS``, else ``4 min ago``.
* A size is in binary units with at most two decimals, trailing zeros cut: ``512 MiB``,
  ``1.5 GiB``, ``1 byte``, ``0 bytes`` (ties to even, as Python's ``%.2f``).
* CPU is in cores from millicores, at most two decimals (half up), trailing zeros cut, ``core``
  only for exactly one: ``0.75 cores``, ``1 core``, ``12 cores``.
* A count is the number and its noun, plural unless the number is 1 (``PLURALS`` for the nouns
  whose plural is not an added ``s``); a fraction (``3/4 tasks``) is plural unless its total is 1.
* Retries are the counts against their limits, in ``TASK_RETRIES`` and ``JOB_RETRIES``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class StateLook:
    """How a state is shown: its word, tone, rank in a task bar, whether it is final, a sentence."""

    word: str
    tone: str
    rank: int | None
    terminal: bool
    description: str


TONE_COLORS: Final[dict[str, str]] = {
    "neutral": "var(--jp-ui-font-color2,#616161)",
    "active": "var(--jp-brand-color1,#1976d2)",
    "success": "var(--jp-success-color1,#2e7d32)",
    "warning": "var(--jp-warn-color1,#b26a00)",
    "danger": "var(--jp-error-color1,#c62828)",
}
"""Each tone's colour (a JupyterLab theme variable, with the light theme's value outside it)."""
OTHER_TONE: Final[str] = "neutral"

STATES: Final[dict[str, StateLook]] = {
    "succeeded": StateLook("succeeded", "success", 0, True, "Finished successfully."),
    "running": StateLook("running", "active", 1, False, "Running."),
    "building": StateLook("building", "active", 2, False, "Preparing the environment."),
    "assigned": StateLook("assigned", "active", 3, False, "Placed on a worker, starting."),
    "failed": StateLook("failed", "danger", 4, True, "Finished with an error."),
    "worker_failed": StateLook("worker failed", "danger", 5, True, "Its worker was lost."),
    "preempted": StateLook("preempted", "warning", 6, True, "Preempted by other work."),
    "killed": StateLook("killed", "warning", 7, True, "Stopped before it finished."),
    "pending": StateLook("pending", "neutral", 8, False, "Waiting for capacity."),
    "unschedulable": StateLook("unschedulable", "danger", None, True, "No capacity can ever run it as requested."),
    "cosched_failed": StateLook("gang failed", "danger", None, True, "Another task of its co-scheduled group failed."),
    "missing": StateLook("missing", "warning", None, False, "Its worker stopped reporting it."),
    "unspecified": StateLook("unknown", "neutral", None, False, "State not reported yet."),
}
"""Every job and task state Iris names (job and task states share names)."""
WAITING_STATE: Final[str] = "pending"
"""The bar's segment for a job's tasks in no drawn state (pending, or not reported yet)."""
FILTER_STATES: Final[tuple[str, ...]] = ("pending", "building", "running", "succeeded", "failed", "killed",
                                         "worker_failed", "unschedulable")
"""The job states a list can be filtered by, in the order a filter lists them."""

NOT_LISTED: Final[str] = "not listed"
"""A worker's status when the controller runs tasks on it but ``ListWorkers`` does not list it."""
STATUS_TONES: Final[dict[str, str]] = {
    "healthy": "success", "unhealthy": "danger", NOT_LISTED: OTHER_TONE,
    "available": "success", "requesting": "active", "cooldown": "neutral", "backoff": "warning",
    "quota_exceeded": "danger", "at_max_slices": "warning",
}
"""A worker's health or a scale group's availability status (Iris's names) → its tone; any other is neutral."""

PLURALS: Final[dict[str, str]] = {"retry": "retries", "child": "children", "is": "are", "was": "were"}
"""Nouns whose plural is not the noun and an ``s``."""
SIZE_UNITS: Final[tuple[str, ...]] = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")
TASK_RETRIES: Final[str] = ("{failures} (max_retries_failure {max_failure}), "
                            "{preemptions} (max_retries_preemption {max_preemption})")
"""What a task's attempts charged against its job's per-task limits (counts as ``counted`` says them)."""
AGE_UNITS: Final[tuple[tuple[int, str], ...]] = ((86_400_000, "d"), (3_600_000, "h"), (60_000, "min"), (1000, "s"))
"""An age's units, largest first, each with its length in milliseconds."""
JUST_NOW_MS: Final[int] = 5000
"""An age under this many milliseconds reads ``just now`` where it says "ago"."""
JOB_RETRIES: Final[str] = "{failures} (max_task_failures {max_failures}), {preemptions}"
"""A job's failed attempts against ``max_task_failures``, and its preemptions."""


def look(name: str) -> StateLook:
    """How the state ``name`` is shown (see the module rules; an unknown name reads as itself)."""
    return STATES.get(name) or StateLook(name.replace("_", " ") or "unknown", OTHER_TONE, None, False,
                                         f'State "{name}".')


def status_look(status: str) -> tuple[str, str]:
    """A worker's or a scale group's status as (word, tone): Iris's name with ``_`` read as a space, and
    ``STATUS_TONES``' tone."""
    return status.replace("_", " "), STATUS_TONES.get(status, OTHER_TONE)


def state_word(name: str) -> str:
    """The word for the state ``name``."""
    return look(name).word


def state_color(name: str) -> str:
    """The colour of the state ``name``'s badge and bar segment (its tone's)."""
    return TONE_COLORS[look(name).tone]


def bar_rank(name: str) -> int:
    """Where a state's segment sits in a task bar; states not drawn sort after every drawn one."""
    rank = look(name).rank
    return len(STATES) if rank is None else rank


def bar_segments(counts: Mapping[str, int], total: int) -> list[tuple[str, int]]:
    """A task bar's segments as (state, tasks): the drawn states in rank order, then the waiting
    state holding every task of ``total`` that no drawn state holds; empty ones left out."""
    drawn = sorted((name for name, state in STATES.items() if state.rank is not None and name != WAITING_STATE),
                   key=bar_rank)
    placed = [(name, max(0, counts.get(name, 0))) for name in drawn]
    waiting = max(0, total - sum(count for _, count in placed))
    return [(name, count) for name, count in [*placed, (WAITING_STATE, waiting)] if count > 0]


def duration_ms(ms: float) -> str:
    """A duration of ``ms`` milliseconds (see the module rules)."""
    whole = max(0, round(ms))
    if whole < 1000:
        return f"{whole} ms"
    if whole < 60_000:
        return f"{whole // 1000}.{whole % 1000 // 100} s"
    minutes, secs = divmod(whole // 1000, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def age_ms(ms: float) -> str:
    """An age of ``ms`` milliseconds: ``12 s``, ``4 min``, ``3 h``, ``2 d`` (see the module rules)."""
    whole = max(0, int(ms))
    for length, unit in AGE_UNITS:
        if whole >= length:
            return f"{whole // length} {unit}"
    return f"0 {AGE_UNITS[-1][1]}"


def ago_ms(ms: float) -> str:
    """Something that happened ``ms`` milliseconds ago: ``just now``, ``4 min ago``."""
    return "just now" if ms < JUST_NOW_MS else f"{age_ms(ms)} ago"


def cores(millicores: int) -> str:
    """CPU of ``millicores`` in cores (see the module rules)."""
    hundredths = (max(0, int(millicores)) + 5) // 10
    text = f"{hundredths // 100}.{hundredths % 100:02d}".rstrip("0").rstrip(".")
    return f"{text} {'core' if text == '1' else 'cores'}"


def plural(noun: str) -> str:
    """The plural of ``noun``."""
    return PLURALS.get(noun) or f"{noun}s"


def counted(number: int, noun: str) -> str:
    """``number`` and ``noun``, plural unless ``number`` is 1: ``1 attempt``, ``2 retries``, ``0 failures``."""
    return f"{number} {noun if number == 1 else plural(noun)}"


def fraction(done: int, total: int, noun: str) -> str:
    """``done`` of ``total`` things, the noun plural unless ``total`` is 1: ``1/1 task``, ``3/4 tasks``."""
    return f"{done}/{total} {noun if total == 1 else plural(noun)}"


def byte_size(num_bytes: int) -> str:
    """A size in binary units (see the module rules)."""
    if num_bytes < 1024:
        return counted(num_bytes, "byte")
    power = min(len(SIZE_UNITS), (num_bytes.bit_length() - 1) // 10)
    divider = 1024 ** power
    hundredths, rest = divmod(num_bytes * 100, divider)  # exact: ties go to the even hundredth
    if 2 * rest > divider or (2 * rest == divider and hundredths % 2):
        hundredths += 1
    text = f"{hundredths // 100}.{hundredths % 100:02d}".rstrip("0").rstrip(".")
    return f"{text} {SIZE_UNITS[power - 1]}"


def task_retries(failures: int, preemptions: int, max_failure: int, max_preemption: int) -> str:
    """``2 failures (max_retries_failure 1), 0 preemptions (max_retries_preemption 100)``."""
    return TASK_RETRIES.format(failures=counted(failures, "failure"), preemptions=counted(preemptions, "preemption"),
                               max_failure=max_failure, max_preemption=max_preemption)


def job_retries(failures: int, preemptions: int, max_failures: int) -> str:
    """``3 failed attempts (max_task_failures 2), 1 preemption``."""
    return JOB_RETRIES.format(failures=counted(failures, "failed attempt"),
                              preemptions=counted(preemptions, "preemption"), max_failures=max_failures)
