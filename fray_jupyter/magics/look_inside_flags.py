"""The flags of ``%fray profile`` and ``%fray exec`` (``magics.look_inside``), added to the ``%fray``
parser ``magics.parsers`` builds."""

from __future__ import annotations

import argparse
from typing import Any, Final

INSPECT_COMMANDS: Final = ("profile", "exec")
"""The ``%fray`` commands ``magics.look_inside`` answers."""


def add_capture_arguments(parser: argparse.ArgumentParser) -> None:
    """What to capture: ``--cpu`` (the default) | ``--memory`` | ``--threads``, ``--seconds N``,
    ``--format F``, and ``--locals``, ``--native``, ``--leaks`` (``%fray profile`` and ``%fray
    session profile`` take the same)."""
    kind = parser.add_mutually_exclusive_group()
    for name, text in (("cpu", "CPU (py-spy): a flamegraph (the default)"), ("memory", "memory (memray)"),
                       ("threads", "every thread's stack now (py-spy dump)")):
        kind.add_argument(f"--{name}", dest="kind", action="store_const", const=name, help=text)
    parser.set_defaults(kind="cpu")
    parser.add_argument("--seconds", type=int, default=10, metavar="N", help="how long to sample (default 10)")
    parser.add_argument("--format", dest="fmt", default=None, metavar="FORMAT",
                        help="cpu: flamegraph, speedscope, raw; memory: flamegraph, table, stats, raw")
    parser.add_argument("--locals", action="store_true", help="threads: each frame's local variables too")
    parser.add_argument("--native", action="store_true", help="threads: native (C) frames too")
    parser.add_argument("--leaks", action="store_true", help="memory: only allocations still alive at the end")


def add_inspect_commands(commands: Any, common: argparse.ArgumentParser) -> None:
    """``%fray profile JOB[/i] [--cpu|--memory|--threads] [--seconds N]`` and
    ``%fray exec JOB/i [--timeout N] -- CMD…`` on the ``%fray`` subparsers ``commands``."""
    profile = commands.add_parser("profile", parents=[common],
                                  help="profile a running task (CPU, memory) or dump its threads; the capture "
                                       "is written next to the notebook")
    profile.add_argument("task", metavar="JOB[/I]", help="a job (its task 0), a task (JOB/1) or an attempt (JOB/1:2)")
    add_capture_arguments(profile)
    profile.add_argument("--output", default=None, metavar="PATH",
                         help="where to write it (default: <job>-<task>-<kind>.<ext> in the notebook's directory)")
    exec_ = commands.add_parser("exec", parents=[common],
                                help="run a command in a running task (its directory and environment)")
    exec_.add_argument("task", metavar="JOB[/I]", help="a job (its task 0) or a task (JOB/1)")
    exec_.add_argument("--timeout", type=int, default=60, metavar="SECONDS",
                       help="kill the command (and what it started) after this long (default 60; -1: never)")
    exec_.add_argument("argv", nargs="*", metavar="CMD", help="the command and its arguments, after --")
