"""The workspace flags ``%%fray`` and ``%fray session start`` share: what is sent along as the
job's bundle (``iris.bundle``), named as ``iris job run`` names them."""

from __future__ import annotations

from typing import Any


def add_workspace_arguments(group: Any) -> None:
    """``--workspace DIR`` / ``--no-workspace``, ``--include GLOB`` and ``--exclude REGEX`` (``iris
    job run``'s), on ``%%fray`` and ``%fray session start`` alike."""
    sent = group.add_mutually_exclusive_group()
    sent.add_argument("--workspace", metavar="DIR",
                      help="send DIR along as Iris does (a zip of its git-listed files, at most 25 MiB), "
                           "unpacked into each task's work dir; by default the current directory is sent, on "
                           "every controller, as `iris job run` does")
    sent.add_argument("--no-workspace", action="store_true", help="send no workspace (not the current directory)")
    group.add_argument("--include", action="append", default=[], metavar="GLOB",
                       help="also bundle files matching GLOB (relative to the workspace) that are left out by "
                            "default, such as tests/ (repeatable)")
    group.add_argument("--exclude", action="append", default=[], metavar="REGEX",
                       help="leave out paths matching REGEX (relative to the workspace, e.g. '^data/'; "
                            "repeatable, OR'd)")
