"""The session magics: ``%fray session start|stop|restart|interrupt|status NAME``, ``%%fray --session
NAME`` and ``%fray push|pull NAME VAR…`` (``fray_jupyter.session.session`` does the work).

Rules:

* ``%fray session start NAME`` takes the resource flags of ``%%fray`` (or ``--resources VAR``),
  sends one job named NAME, and waits for every host, saying Iris's pending reason as it changes
  (no timeout; interrupting the wait leaves the session starting, and its first cell waits on).
  A kernel holds one session per name: starting a name that is live is refused. ``--jax`` joins
  every host into one JAX process group first (``session.serve.join_jax``).
* ``%%fray --session NAME`` runs the cell on every host (``--targets 0,2`` on some), streams
  every host's text live (``[host i]`` prefixes) and the rich outputs of ``--rich-from`` (default
  host 0, or ``all``); ``--no-stream`` shows them grouped at the end (``--group-outputs``). The
  value of the last expression comes from ``--values-from`` (default host 0) and is the cell's
  result. A failure on any host fails the cell, showing each host's traceback; a lost session
  says so (``words.loss_text``). Resource flags belong on ``%fray session start`` and are refused.
* Jupyter's interrupt button during a session cell interrupts every host (``Session.run``).
* ``%fray session start`` ships the workspace and runs ``--setup`` (``session_start``);
  ``%fray session sync NAME`` sends every host what changed in it since and reloads the changed
  modules, saying what it did; a host that missed it fails the command, naming the host and why.
  A session started with ``--sync`` does that before every cell, and a failed sync fails the cell.
  ``restart`` syncs its new hosts at once (they unpacked the bundle the session started with).
* ``%fray session pip NAME ARGS…`` runs pip on every host (``session.packages``), its state kept.
* ``%fray session profile NAME`` profiles every host at once (``magics.session_profile``).
* ``%fray push NAME x y`` sends the notebook's ``x`` and ``y`` to every host (``--targets``);
  ``%fray pull NAME z`` binds ``z`` in the notebook from one host (``--host``, default 0).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from IPython.display import display

from fray_jupyter.magics.parsers import usage
from fray_jupyter.session.merge import MergedCell
from fray_jupyter.session.outputs import Display, Output, SessionError, Stream
from fray_jupyter.session.session import Session

SESSIONS: dict[str, Session] = {}
"""This kernel's sessions by name."""


class SessionCellFailed(Exception):
    """A session cell that failed: IPython shows ``lines`` (each host's traceback, or the loss) as
    the cell's traceback, rather than this module's frames."""

    def __init__(self, summary: str, lines: Sequence[str]) -> None:
        super().__init__(summary)
        self.lines = list(lines)

    def _render_traceback_(self) -> list[str]:
        return [*self.lines, str(self)]


def find_session(name: str, label: str) -> Session:
    """This kernel's session ``name``; a ``UsageError`` naming the sessions it holds otherwise."""
    session = SESSIONS.get(name)
    if session is None:
        known = ", ".join(sorted(SESSIONS)) or "none"
        raise usage(f"no session {name!r} in this kernel (sessions: {known}); start one with "
                    f"%fray session start {name}", label)
    return session


def _say(text: str) -> None:
    print(text, flush=True)


def line(magics: Any, args: argparse.Namespace) -> None:
    """``%fray session|push|pull …`` (the module rules); ``magics`` is the ``FrayMagics`` instance."""
    label = f"%fray {args.command}"
    try:
        if args.command == "push":
            session = find_session(args.session_name, label)
            missing = [name for name in args.names if name not in magics.namespace]
            if missing:
                raise usage(f"no variable {', '.join(missing)} in the notebook", label)
            bound = session.push({name: magics.namespace[name] for name in args.names}, targets=args.targets)
            _say(f"pushed {', '.join(bound)} to session {session.name}")
        elif args.command == "pull":
            magics.namespace.update(find_session(args.session_name, label).pull(args.names, host=args.host))
        else:
            _session_action(magics, args, f"{label} {args.action}")
    except SessionError as error:
        raise usage(str(error).splitlines()[0], label) from None


def pip_line(magics: Any, rest: str) -> None:
    """``%fray session pip NAME ARGS…``: pip with ARGS on every host of NAME, each host's output
    shown ``[host i]``-prefixed; a pip that fails on any host fails the line, naming those hosts."""
    import shlex

    label = "%fray session pip"
    try:
        name, *argv = shlex.split(rest)
    except ValueError as error:
        raise usage(f"cannot split the line: {error}" if rest.strip() else "give NAME and pip's arguments, e.g. "
                    "%fray session pip dev install einops", label) from None
    if not argv:
        raise usage(f"give pip's arguments after {name}, e.g. %fray session pip {name} install einops", label)
    session = find_session(name, label)
    try:
        replies = session.pip(argv)
    except SessionError as error:
        raise usage(str(error).splitlines()[0], label) from None
    for reply in replies:
        for text in reply.output.splitlines():
            _say(f"[host {reply.host}] {text}")
    failed = [reply for reply in replies if reply.code != 0]
    if failed:
        raise usage(f"pip {' '.join(argv)} failed on host(s) "
                    + ", ".join(f"{reply.host} (exit code {reply.code})" for reply in failed), label)
    _say(f"session {name}: pip {' '.join(argv)} done on {len(replies)} host(s); every variable kept")


def _session_action(magics: Any, args: argparse.Namespace, label: str) -> None:
    name = args.session_name
    if args.action == "start":
        from fray_jupyter.magics.session_start import start

        start(magics, args, label, SESSIONS)
        return
    session = find_session(name, label)
    if args.action == "stop":
        session.stop()
        del SESSIONS[name]
        _say(f"session {name} stopped: job {session.job_id} ended, its slice released")
    elif args.action == "restart":
        session.restart().wait_ready(_say)
        if session.workspace is not None:  # the new hosts unpacked the start's bundle: bring them up to date
            _say(f"session {name}: {session.sync().text()}")
    elif args.action == "sync":
        _say(f"session {name}: {session.sync().text()}")
    elif args.action == "interrupt":
        reached = [reply.host for reply in session.interrupt() if reply.was_running]
        _say(f"session {name}: interrupted the cell on host(s) {', '.join(map(str, reached))}" if reached
             else f"session {name}: no cell was running")
    else:
        _say(repr(session))
        if session.workspace is not None:
            _say(f"  workspace {session.workspace.source.root}: "
                 + ("synced before every cell" if session.sync_each_cell else f"%fray session sync {name} sends edits"))
        for status, idle in zip(session.status(), session.idle(), strict=True):
            _say(f"  host {status.host}: pid {status.pid}, {status.cells_run} cells run, "
                 + (f"running {status.running}" if idle is None else f"idle {idle:.0f} s"
                    + (f", releases the slice in {max(0.0, session.idle_timeout - idle):.0f} s"
                       if session.idle_timeout else "")))


def cell(args: argparse.Namespace, source: str) -> Any:
    """``%%fray --session NAME``: the cell's value (shown as its result), or the failure raised."""
    from fray_jupyter.flags import resource_flags_given

    label = f"%%fray --session {args.session}"
    if given := resource_flags_given(args):
        raise usage(f"{', '.join(given)}: a session's resources are set by %fray session start", label)
    session = find_session(args.session, label)
    try:
        if not session.ready:  # a start that was interrupted: wait on
            session.wait_ready(_say)
        merged = session.run(source, targets=args.targets, group_outputs=args.group_outputs,
                             rich_from=args.rich_from, values_from=args.values_from, on_output=_show,
                             stream=not args.no_stream)
    except SessionError as error:
        lines = str(error).splitlines()
        raise SessionCellFailed(lines[0], lines[1:]) from None
    return _finish(merged)


def _show(outputs: Sequence[Output]) -> None:
    for output in outputs:
        if isinstance(output, Stream):
            stream = sys.stdout if output.name == "stdout" else sys.stderr
            stream.write(output.text)
            stream.flush()
        else:
            display(dict(output.data), metadata=dict(output.metadata), raw=True)  # type: ignore[no-untyped-call]


class _Value:
    """A host's value, shown by IPython as the cell's result from its mime bundle."""

    def __init__(self, bundle: Display) -> None:
        self._bundle = bundle

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
        return self._bundle.data, self._bundle.metadata

    def __repr__(self) -> str:
        return str(self._bundle.data.get("text/plain", ""))


def _finish(merged: MergedCell) -> Any:
    _show(merged.outputs)
    if merged.failure is not None:
        raise SessionCellFailed(f"{merged.failure.ename}: {merged.failure.evalue}", merged.failure.traceback)
    if len(merged.values) == 1:
        return _Value(merged.values[0].value)
    for value in merged.values:
        _show([Stream("stdout", f"[host {value.host}]\n"), value.value])
    return None
