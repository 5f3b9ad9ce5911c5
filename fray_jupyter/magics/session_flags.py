"""The flags of the session magics (``magics.session``): ``%%fray``'s session flags and the
``%fray session|push|pull`` commands, added to the parsers ``magics.parsers`` builds."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, Final

from fray_jupyter.magics.workspace_flags import add_workspace_arguments
from fray_jupyter.session.merge import GROUP_OUTPUTS, HostChoice
from fray_jupyter.session.outputs import IDLE_TIMEOUT

SESSION_COMMANDS: Final = ("session", "push", "pull")
"""The ``%fray`` commands the session magics answer."""
ACTIONS: Final = ("start", "stop", "restart", "interrupt", "status", "sync", "pip")
"""What ``%fray session ACTION NAME`` does."""


def _host_choice(text: str) -> HostChoice:
    if text == "all":
        return "all"
    if text.isdigit():
        return int(text)
    raise argparse.ArgumentTypeError(f"{text!r} is not a host index (0, 1, …) or 'all'")


def _targets(text: str) -> list[int]:
    parts = [part.strip() for part in text.split(",")]
    if not parts or not all(part.isdigit() for part in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of host indices, e.g. 0,2")
    return [int(part) for part in parts]


def add_session_cell_arguments(parser: argparse.ArgumentParser) -> None:
    """``%%fray``'s session flags."""
    group = parser.add_argument_group("session (run the cell on a session's hosts: %fray session start NAME)")
    group.add_argument("--session", metavar="NAME", help="run the cell on the session NAME's hosts, in its namespace")
    group.add_argument("--targets", type=_targets, metavar="I,J", help="only these hosts (default: all)")
    group.add_argument("--group-outputs", choices=GROUP_OUTPUTS, default="type",
                       help="with --no-stream: by type (default), by host (engine) or collated (order)")
    group.add_argument("--rich-from", type=_host_choice, default=0, metavar="HOST|all",
                       help="whose display()/figures are shown (default 0)")
    group.add_argument("--values-from", type=_host_choice, default=0, metavar="HOST|all",
                       help="whose last-expression value is shown (default 0)")
    group.add_argument("--no-stream", action="store_true", help="show the outputs when every host is done")


def add_session_commands(commands: Any, common: argparse.ArgumentParser,
                         job_arguments: Callable[[argparse.ArgumentParser], None]) -> None:
    """``%fray session``, ``%fray push`` and ``%fray pull`` on the ``%fray`` subparsers ``commands``;
    ``job_arguments(parser)`` adds the resource flags ``start`` takes."""
    session = commands.add_parser("session", parents=[common],
                                  help="start, stop, restart, interrupt, status or sync a session; "
                                       "`session pip NAME ARGS…` runs pip with ARGS on every host; "
                                       "`session profile NAME [--cpu|--memory|--threads] [--seconds N]` "
                                       "profiles every host at once")
    session.add_argument("action", choices=ACTIONS)
    session.add_argument("session_name", metavar="NAME")
    session.add_argument("--resources", metavar="VAR", help="start: the resources of a ResourceConfig or picker")
    session.add_argument("--idle-timeout", type=float, default=IDLE_TIMEOUT, metavar="SECONDS",
                         help=f"start: release the slice after this long idle (default {IDLE_TIMEOUT:g}; 0: never)")
    session.add_argument("--jax", action="store_true",
                         help="start: join every host into one JAX process group (Iris's initialize_jax)")
    code = session.add_argument_group("start: the code on the hosts")
    add_workspace_arguments(code)
    code.add_argument("--sync", action="store_true",
                      help="sync the workspace to every host before each cell (as %%autoreload 2 feels locally)")
    code.add_argument("--setup", action="append", default=[], metavar="COMMAND",
                      help="a shell command every host runs once before it serves, e.g. 'uv sync --extra tpu' "
                           "(repeatable; Iris's setup_commands)")
    code.add_argument("--dry-run", action="store_true", help="show what would be bundled and sent; start nothing")
    job_arguments(session)
    push = commands.add_parser("push", help="send notebook variables to a session's hosts")
    push.add_argument("session_name", metavar="NAME")
    push.add_argument("names", nargs="+", metavar="VAR")
    push.add_argument("--targets", type=_targets, metavar="I,J", help="only these hosts (default: all)")
    pull = commands.add_parser("pull", help="bring variables from one of a session's hosts")
    pull.add_argument("session_name", metavar="NAME")
    pull.add_argument("names", nargs="+", metavar="VAR")
    pull.add_argument("--host", type=int, default=0, metavar="I", help="the host (default 0)")
