"""``fray-jupyter``: ``plan`` previews what Iris would receive for a job described by flags (``--check``
also says whether it fits, from a controller or the embedded one's profile, exit 3 for never, and
what it costs its user's budget and at which band it runs); ``controller`` runs the embedded
controller in the foreground, and ``controller status|stop|gc`` shows, stops or cleans up the running one."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict

from fray_jupyter.flags import add_fit_arguments, add_job_arguments, command_entrypoint, job_from_args

if TYPE_CHECKING:
    from fray_jupyter.planning import Plan

NEVER_EXIT, UNKNOWN_EXIT = 3, 4


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, like every other bad input here
        self.exit(2, f"{self.prog}: error: {message}\n")


def _plan(args: argparse.Namespace) -> int:
    from fray_jupyter.planning import plan
    from fray_jupyter.views.text import render_json, render_text

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    job = job_from_args(args, command_entrypoint(command or ["true"]), default_name="cli-job")
    result = plan(job, user=args.user)
    verdict = _check(result, args.controller, args.cluster) if args.check else None
    if args.json:
        document = json.loads(render_json(result))
        if verdict is not None:
            document["fit"] = verdict
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write(render_text(result))
        if verdict is not None:
            sys.stdout.write("\n" + "".join(f"{line}\n" for line in check_lines(verdict)))
    if verdict is None:
        return 0
    return {"never": NEVER_EXIT, "unknown": UNKNOWN_EXIT}.get(str(verdict["verdict"]), 0)


class FitVerdict(TypedDict):
    """``--check``'s answer, as ``--json`` prints it under ``"fit"``; ``source`` says what was asked
    or read (empty when nothing answered, or when the plan's own errors decided it); ``budget`` is what
    the job costs its user's budget and the band it runs at (``BudgetPicture.as_dict``)."""

    verdict: str
    reason: str
    line: str
    candidates: list[str]
    source: str
    budget: dict[str, Any]


def check_lines(verdict: FitVerdict) -> list[str]:
    """``--check``'s text: the ``fit:`` line, one indented line per candidate group, where the verdict
    came from, then the budget's lines."""
    return [verdict["line"], *(f"  {candidate}" for candidate in verdict["candidates"]),
            *([f"  ({verdict['source']})"] if verdict["source"] else []), *verdict["budget"]["lines"]]


def _check(result: Plan, url: str | None, cluster: str | None = None) -> FitVerdict:
    """``--check``: the fit verdict and the budget picture as plain data. From the controller at ``url``
    or of the named ``cluster`` (``connect``'s rule, environment included; none is started); when none
    is named and none runs, the verdict comes from the profile the embedded controller would apply,
    read here (what a started one would answer, without starting one). A gang no slice can hold
    needs no controller."""
    from fray_jupyter.client import ControllerUnreachable, FrayError, connect
    from fray_jupyter.client.budget import NOT_RUNNING, budget
    from fray_jupyter.client.discovery import NO_CONTROLLER_URL
    from fray_jupyter.client.fit import Fit, fit
    from fray_jupyter.controller.engine.cluster import read_embedded_fit

    picture, source = budget(result, None), ""
    if result.errors:
        verdict = Fit("never", result.errors[0])
    else:
        try:
            with connect(url, cluster=cluster, start=False, retry_for=0) as client:
                verdict = fit(result, client)
                picture = budget(result, client)
                source = f"asked {f'cluster {client.cluster_name} at ' if client.cluster_name else ''}{client.url}"
        except ControllerUnreachable as error:
            if error.url != NO_CONTROLLER_URL:
                return _unanswered(error, picture.as_dict())
            verdict, source = read_embedded_fit(result)
            picture = budget(result, None, why=NOT_RUNNING)
        except FrayError as error:
            return _unanswered(error, picture.as_dict())
    return {"verdict": verdict.verdict, "reason": verdict.reason, "line": verdict.line,
            "candidates": [str(c) for c in verdict.candidates], "source": source, "budget": picture.as_dict()}


def _unanswered(error: Exception, budget: dict[str, Any]) -> FitVerdict:
    reason = f"no controller answered ({' '.join(str(error).split())})"
    return {"verdict": "unknown", "reason": reason, "line": f"fit: unknown — {reason}", "candidates": [], "source": "",
            "budget": budget}


def build_parser() -> argparse.ArgumentParser:
    """The ``fray-jupyter`` argument parser."""
    parser = _Parser(prog="fray-jupyter", description=(__doc__ or "").replace("``", ""))  # help is plain text, not RST
    commands = parser.add_subparsers(dest="subcommand", required=True, parser_class=_Parser)
    plan_parser = commands.add_parser("plan", help="show what Iris would receive for a job",
                                      description="Show the Plan (and LaunchJobRequest) for a job described by flags.")
    add_job_arguments(plan_parser)
    plan_parser.add_argument("--user", help="submitting user (default $IRIS_USER, else your login)")
    plan_parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    add_fit_arguments(plan_parser, submits=False)
    plan_parser.add_argument("command", nargs=argparse.REMAINDER, help="-- the command the job runs")
    plan_parser.set_defaults(run=_plan)
    controller = commands.add_parser("controller", help="run the embedded Iris-compatible controller",
                                     add_help=False)
    controller.set_defaults(run=None)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; exits 2 with one line for bad flags or an invalid job."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["controller"] and argv[1:2] and argv[1] in ("status", "stop", "gc"):
        from fray_jupyter.controller.manage import main as manage_main

        return manage_main(argv[1:])
    if argv[:1] == ["controller"]:
        from fray_jupyter.controller.startup import main as controller_main

        return controller_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except ValueError as error:
        parser.exit(2, f"fray-jupyter {args.subcommand}: error: {error}\n")
    return 2


if __name__ == "__main__":
    sys.exit(main())
