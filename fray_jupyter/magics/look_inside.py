"""``%fray profile`` and ``%fray exec``: look inside a running task from the notebook.

Rules:

* ``JOB[/I]``: a job id or name as the other commands take it; a last component that is a task
  index (``/1``) or an attempt (``/1:2``) picks that task, else it is task 0.
* ``%fray profile`` writes the capture into the notebook's directory (the kernel's working
  directory; ``--output`` elsewhere) and prints where and how big; a flamegraph (CPU's SVG, memory's
  HTML) is also shown inline as an interactive document (``widgets.capture``), a thread dump
  printed. A capture the controller could not make fails the cell with its reason.
* ``%fray exec JOB/I -- CMD …`` runs CMD (an argv, no shell) in the task and prints its stdout,
  then its stderr (to stderr), then ``exit code N`` when it is not 0. A task that is not running,
  a command that cannot start or one killed at its ``--timeout`` fails the cell with the reason
  (after printing what output there was).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.display import display

from fray_jupyter.magics.errors import MagicFailure, controller_errors
from fray_jupyter.magics.parsers import usage

if TYPE_CHECKING:
    from fray_jupyter.magics.core import FrayMagics

_TASK = re.compile(r"\d+(:\d+)?")


class InspectFailed(MagicFailure):
    """A profile or exec the controller answered with an error."""

    kind = "InspectFailed"


def task_of(magics: FrayMagics, given: str) -> str:
    """The task id ``JOB[/I]`` names (module docstring)."""
    full = magics.job_id(given)
    head, _, tail = full.rpartition("/")
    if _TASK.fullmatch(tail) and head.count("/") >= 2:
        return full
    return f"{full}/0"


def line(magics: FrayMagics, args: Any) -> None:
    """Serve ``%fray profile`` or ``%fray exec``."""
    from fray_jupyter.magics.submission import check_url

    check_url("--controller", args.controller, f"%fray {args.command}")
    if args.command == "profile":
        _profile(magics, args)
    else:
        _exec(magics, args)


def capture_options(args: Any, target: str, label: str) -> dict[str, Any]:
    """The profile options the flags give (``look_inside_flags.add_capture_arguments``), checked as
    ``client.inspection`` checks them: a bad kind, format or duration is a ``UsageError`` naming it."""
    from fray_jupyter.client.inspection import profile_request

    options: dict[str, Any] = {"locals": args.locals, "native": args.native or None, "leaks": args.leaks}
    try:
        profile_request(target, args.kind, args.seconds, args.fmt, **options)
    except ValueError as error:
        raise usage(str(error), label) from None
    return options


def _profile(magics: FrayMagics, args: Any) -> None:
    from fray_jupyter.client.inspection import InspectionFailed

    task = task_of(magics, args.task)
    options = capture_options(args, task, "%fray profile")
    client = magics.client(args.controller, args.cluster)
    with controller_errors(f"profiling {task}"):
        try:
            captured = client.profile(task, args.kind, args.seconds, args.fmt, **options)
        except InspectionFailed as error:
            raise InspectFailed([f"{args.kind} profile of {task} failed: {error.detail}"]) from None
    output = Path(args.output) if args.output else None
    path = captured.save(output.parent if output else Path.cwd(), output.name if output else None)
    print(f"wrote {path} ({len(captured.data):,} bytes, {args.kind} {captured.format})")
    if args.kind == "threads":
        print(captured.text())
    elif captured.extension in ("svg", "html"):  # a flamegraph, interactive (or the stub's reason)
        from fray_jupyter.widgets.capture import body

        html, plain = body(captured)
        display({"text/html": html, "text/plain": plain or f"{args.kind} flamegraph: {path}"},  # type: ignore[no-untyped-call]
                raw=True)


def _exec(magics: FrayMagics, args: Any) -> None:
    label = "%fray exec"
    argv = list(args.argv)
    if not argv:
        raise usage("give the command after --, e.g. %fray exec JOB/0 -- ls -la", label)
    task = task_of(magics, args.task)
    client = magics.client(args.controller, args.cluster)
    with controller_errors(f"running {argv[0]} in {task}"):
        result = client.exec(task, argv, timeout=args.timeout)
    if result.stdout:
        print(result.stdout, end="" if result.stdout.endswith("\n") else "\n")
    if result.stderr:
        print(result.stderr, end="" if result.stderr.endswith("\n") else "\n", file=sys.stderr)
    if result.error:
        raise InspectFailed([f"exec in {task}: {result.error}"])
    if result.exit_code:
        print(f"exit code {result.exit_code}")
