"""``%fray session profile NAME [--cpu | --memory | --threads] [--seconds N] [--format F]``: a
capture of every host of a session, taken at once (``session.profiles.profile_hosts``).

Rules:

* The line has a parser of its own (``PARSER``): here ``--cpu`` and ``--memory`` say what to
  capture, as for ``%fray profile`` (``look_inside_flags.add_capture_arguments``), not a session's
  resources as for ``%fray session start``. A bad flag, kind, format or duration is a
  ``UsageError`` naming it; a session this kernel does not hold is one too.
* Each host's capture is written next to the notebook (the kernel's working directory) under
  ``Profile.save``'s name (``<user>-<job>-<host>-<kind>.<ext>``), as ``%fray profile`` writes a
  task's, and shown under its host and task (``widgets.capture``: a flamegraph as an interactive
  document, a thread dump with the host's own frames in bold, a stub's reason as one line).
* A host whose capture could not be made is said after the others are shown, and fails the cell
  naming every such host and why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from IPython.display import display

from fray_jupyter.magics.look_inside import InspectFailed, capture_options
from fray_jupyter.magics.look_inside_flags import add_capture_arguments
from fray_jupyter.magics.parsers import FrayParser, usage

LABEL: Final[str] = "%fray session profile"


def _parser() -> FrayParser:
    parser = FrayParser(prog="fray session profile",
                        description="Profile every host of a session at once (CPU, memory) or dump their threads; "
                                    "each capture is written next to the notebook.")
    parser.add_argument("session_name", metavar="NAME")
    add_capture_arguments(parser)
    return parser


PARSER: Final[FrayParser] = _parser()


def line(magics: Any, rest: str) -> None:
    """Serve ``%fray session profile`` (the module rules); ``rest`` is the line after ``session profile``."""
    from fray_jupyter.magics.session import find_session  # loads the session engine: on first use only
    from fray_jupyter.session.outputs import SessionError
    from fray_jupyter.session.profiles import profile_hosts
    from fray_jupyter.widgets.capture import bundle

    if not rest.strip():
        raise usage("give the session's name, e.g. %fray session profile dev --cpu --seconds 5", LABEL)
    args = PARSER.parse_line(rest)
    session = find_session(args.session_name, LABEL)
    options = capture_options(args, session.job_id, LABEL)
    try:
        captures = profile_hosts(session, args.kind, args.seconds, args.fmt, **options)
    except SessionError as error:
        raise usage(str(error).splitlines()[0], LABEL) from None
    directory = Path.cwd()
    for host in captures:
        if host.profile is not None:
            saved = host.profile.save(directory)
            display(bundle(host.profile, host.label, saved), raw=True)  # type: ignore[no-untyped-call]
    failed = [host for host in captures if host.profile is None]
    if failed:
        head = f"session {session.name}: the {args.kind} profile failed on {len(failed)} of {len(captures)} host(s)"
        raise InspectFailed([head, *(f"{host.label}: {host.error}" for host in failed)])
