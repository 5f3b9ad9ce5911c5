"""The argument parsers of ``%%fray`` (the job flags of ``fray_jupyter.flags`` plus the notebook
flags) and of ``%fray <command>``, and the ``UsageError`` rule they follow.

Rule: every problem with what the user typed — an unknown flag, a bad value, a missing argument,
unbalanced quotes — raises a plain ``UsageError`` (not a subclass: IPython then prints one line
and no traceback, and the cell still fails) whose one-line message starts with the magic's name.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any, Final, NoReturn

from IPython.core.error import UsageError
from IPython.core.magic_arguments import MagicArgumentParser

from fray_jupyter.flags import add_connection_arguments, add_fit_arguments, add_job_arguments
from fray_jupyter.magics.look_inside_flags import add_inspect_commands
from fray_jupyter.magics.session_flags import add_session_cell_arguments, add_session_commands
from fray_jupyter.magics.workspace_flags import add_workspace_arguments

CELL: Final[str] = "%%fray"

CELL_DESCRIPTION: Final[str] = """\
Run this cell's code as a Fray job on an Iris controller, and show its live status.

The cell is shipped with the request as _fray_cell.py and run by each task's Python
($IRIS_PYTHON): it does not see this kernel's variables, so import what it needs. The current
directory is sent along by default, on every controller, as `iris job run` does (--workspace DIR
sends another, --no-workspace none, --include/--exclude change what is in it). The flags are
those of `fray-jupyter plan`; --dry-run shows the Plan that would be sent, and what would be
bundled, and sends nothing.

Without --name the job is called cell-<hash of the cell and flags>: running the same cell again
while its job still runs shows that job rather than starting a second one (Fray's adopt-existing
policy); once it has finished, a new run replaces it.

Settings (cluster, controller URL, user, token variable): `%fray config`, c.FrayMagics.* in
ipython_config.py, or $FRAY_CLUSTER (then $MARIN_CLUSTER), $FRAY_CONTROLLER_URL,
$FRAY_CONTROLLER_TOKEN, $IRIS_USER. With none, an embedded controller on this machine is started
on first use.
"""

CELL_EPILOG: Final[str] = """\
Examples:
  %%fray --tpu v5p-8 --slices 2
  %%fray --gpu H100x8 --replicas 2 --wait -o job
  %%fray --resources picker --workspace . --dry-run
  %%fray --cluster marin --tpu v5p-8 --wait

Other commands: %fray jobs | status ID [--request] | logs ID [--follow] [--children] | cancel ID
  | resubmit ID [--name NAME] | config [KEY [VALUE]]
  | profile JOB[/I] [--cpu|--memory|--threads] [--seconds N] | exec JOB/I -- CMD …
"""

LINE_DESCRIPTION: Final[str] = """\
Look after Fray jobs: list them, watch one, read or follow its logs, cancel it, and show or change
the settings. ID is a job id (/user/name) or, for your own jobs, just the name. `%%fray` (two %)
submits a cell.
"""


def usage(message: str, label: str = CELL) -> UsageError:
    """A one-line ``UsageError`` naming the magic (``label``), whitespace collapsed."""
    return UsageError(f"{label}: {' '.join(str(message).split())}")


class FrayParser(MagicArgumentParser):
    """A ``MagicArgumentParser`` whose errors are ``UsageError("%fray <command>: <message>")``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]

    @property
    def label(self) -> str:
        """How the magic is typed: ``%%fray`` for the cell parser (prog ``%fray``), ``%fray status``."""
        return f"%{self.prog}"

    def error(self, message: str) -> NoReturn:
        """One line naming the magic; never exits."""
        raise UsageError(f"{self.label}: {message}")

    def parse_line(self, line: str) -> argparse.Namespace:
        """Parse a magic line split as a POSIX shell would (quotes removed, unlike IPython's
        ``arg_split``), so ``-e MSG 'two words'`` means what it says; bad quoting is a ``UsageError``."""
        try:
            argv = shlex.split(line)
        except ValueError as error:  # "No closing quotation"
            self.error(f"cannot split the line: {error}")
        if "--" not in argv:
            return self.parse_args(argv)
        cut = argv.index("--")  # a lone -- ends the flags: the rest is the command (``%fray exec``'s argv)
        args = self.parse_args(argv[:cut])
        if not hasattr(args, "argv"):
            self.error(f"unrecognized arguments: {' '.join(argv[cut:])}")
        args.argv = [*args.argv, *argv[cut + 1:]]
        return args


def cell_parser() -> FrayParser:
    """The ``%%fray`` parser: ``flags.add_job_arguments`` plus the notebook-only flags."""
    parser = FrayParser(prog="%fray", description=CELL_DESCRIPTION, epilog=CELL_EPILOG)
    add_job_arguments(parser)
    notebook = parser.add_argument_group("notebook")
    notebook.add_argument("--resources", metavar="VAR",
                          help="take the resources from a ResourceConfig (fray_jupyter's or Marin's) or a "
                               "ResourcePicker in the notebook; replaces the device, host and placement flags")
    add_workspace_arguments(notebook)
    notebook.add_argument("-o", "--output", metavar="VAR",
                          help="store the job handle (or, with --dry-run, the Plan) in VAR")
    add_connection_arguments(parser)
    add_fit_arguments(parser, submits=True)
    mode = notebook.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the Plan that would be sent; send nothing")
    mode.add_argument("--wait", action="store_true",
                      help="block until the job ends, printing its logs; fail the cell if the job fails")
    add_session_cell_arguments(parser)
    return parser


def line_parser() -> FrayParser:
    """The ``%fray <command>`` parser."""
    common = FrayParser(add_help=False)
    add_connection_arguments(common)
    parser = FrayParser(prog="fray", description=LINE_DESCRIPTION)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=FrayParser)
    jobs = commands.add_parser("jobs", parents=[common],
                               help="table of your recent top-level jobs (as Iris's dashboard opens)")
    whose = jobs.add_mutually_exclusive_group()
    whose.add_argument("--everyone", action="store_true", help="every user's jobs, not only yours")
    whose.add_argument("--user", metavar="NAME", help="this user's jobs instead of yours")
    jobs.add_argument("--with-children", action="store_true",
                      help="child jobs too (coordinators' steps), not only top-level jobs")
    jobs.add_argument("--state", default="", metavar="STATE",
                      help="only jobs in this state (pending, running, succeeded, failed, killed, …)")
    jobs.add_argument("--name", default="", metavar="TEXT", help="only jobs whose name contains TEXT")
    jobs.add_argument("--limit", type=int, default=20, metavar="N", help="at most N jobs (default 20)")
    jobs.add_argument("--offset", type=int, default=0, metavar="N", help="skip the N newest (the next page)")
    status = commands.add_parser("status", parents=[common], help="live status panel of a job")
    status.add_argument("job", metavar="ID")
    status.add_argument("--request", action="store_true",
                        help="show the request as sent (secrets redacted as Iris shows them), not the panel")
    logs = commands.add_parser("logs", parents=[common], help="print a job's logs")
    logs.add_argument("job", metavar="ID")
    logs.add_argument("--follow", action="store_true", help="keep printing new lines until the job ends")
    logs.add_argument("--tail", type=int, default=0, metavar="N", help="only the last N lines")
    logs.add_argument("--children", action="store_true",
                      help="the lines of every job below it too, each named by its path ([step/0])")
    actors = commands.add_parser("actors", parents=[common],
                                 help="the actor endpoints registered: a job's (and its children's), else yours")
    actors.add_argument("job", nargs="?", default="", metavar="ID")
    cancel = commands.add_parser("cancel", parents=[common], help="terminate a job")
    cancel.add_argument("job", metavar="ID")
    resubmit = commands.add_parser("resubmit", parents=[common],
                                   help="send a job's request again under a fresh name (NAME-r2, …) and show its panel")
    resubmit.add_argument("job", metavar="ID")
    resubmit.add_argument("--name", default=None, metavar="NAME", help="the new job's name (default: NAME-r2, -r3, …)")
    add_session_commands(commands, common, add_job_arguments)
    add_inspect_commands(commands, common)
    config = commands.add_parser("config", help="show the settings, or set one for this session")
    config.add_argument("key", nargs="?", metavar="KEY")
    config.add_argument("value", nargs="?", metavar="VALUE", help='new value ("" resets it)')
    return parser


CELL_PARSER: Final[FrayParser] = cell_parser()
LINE_PARSER: Final[FrayParser] = line_parser()
