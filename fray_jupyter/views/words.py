"""The words a job's or task's state is shown with, everywhere: the status panel's badges, the
snapshot, ``%fray jobs``, ``%fray status`` and the CLI (upper-cased there, as Iris prints states),
and the sidebar's badges (``labextension/src/badges.ts``, checked against this table by
``tests/test_labextension.py``).

Rule: a state is named as Iris names it (its enum without the prefix, lower case), with ``_`` read
as a space; ``unspecified`` reads ``unknown`` and ``cosched_failed`` ``gang failed`` (a task of its
co-scheduled group failed). A name not in the table reads as itself, ``_`` as a space.
"""

from __future__ import annotations

from typing import Final

STATE_WORDS: Final[dict[str, str]] = {
    "unspecified": "unknown", "pending": "pending", "assigned": "assigned", "building": "building",
    "running": "running", "succeeded": "succeeded", "failed": "failed", "killed": "killed",
    "worker_failed": "worker failed", "unschedulable": "unschedulable", "preempted": "preempted",
    "cosched_failed": "gang failed", "missing": "missing",
}


def state_word(name: str) -> str:
    """The word for the state ``name`` (``job_state_name`` / ``task_state_name``; see the module rule)."""
    return STATE_WORDS.get(name) or name.replace("_", " ") or "unknown"
