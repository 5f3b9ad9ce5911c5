"""``%fray session start NAME``: the session's job from ``%%fray``'s flags, the workspace it ships,
its setup, and the wait until every host serves.

Rules:

* **The workspace** is what ``%%fray`` sends (``submission.workspace_bundle``: ``--workspace DIR``,
  else the kernel's current directory, on every controller; ``--no-workspace`` none;
  ``--include`` / ``--exclude``; the 25 MiB cap). It is unpacked into every host's work dir before
  the first cell, and kept current by ``%fray session sync NAME`` (or, with ``--sync``, before
  every cell). ``--dry-run`` prints what would be bundled (the summary and every file) and starts
  nothing.
* **Setup.** Each ``--setup COMMAND`` becomes one of the job's setup scripts, which Iris runs
  (``setup_commands``) on every host once, in its work dir, before the host serves. While the hosts
  start, their task logs are printed as they come, each line prefixed with its host (``[0]``); a
  failing command ends the job and the session says which command failed and its last output.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Final

from fray_jupyter.magics.parsers import usage

if TYPE_CHECKING:  # loaded on first use, as the session magics are
    from fray_jupyter.client.client import FrayClient
    from fray_jupyter.session.session import Session
    from fray_jupyter.session.workspace import WorkspaceSource

LOG_POLL: Final = 0.5
"""Seconds between two reads of the hosts' logs while they start."""
LOG_DRAIN: Final = 15.0
"""Seconds the hosts' start-up lines are waited for once they serve (a controller's logs may lag)."""


def _say(text: str) -> None:
    print(text, flush=True)


def workspace_source(args: argparse.Namespace, label: str) -> WorkspaceSource | None:
    """The workspace ``args`` ask for (the module rules), or None with ``--no-workspace``."""
    from pathlib import Path

    from fray_jupyter.iris.bundle import caller_exclude
    from fray_jupyter.magics.submission import workspace_bundle
    from fray_jupyter.session.workspace import WorkspaceSource

    default = None if args.no_workspace else os.getcwd()
    bundle = workspace_bundle(args.workspace, default, include=args.include, exclude=args.exclude, label=label)
    if bundle is None:
        return None
    root = Path(args.workspace or default or ".").expanduser().resolve()
    return WorkspaceSource(root, bundle, tuple(args.include), caller_exclude(args.exclude))


def _print_logs(client: FrayClient, job_id: str, hosts: int, done: threading.Event, ready: threading.Event) -> None:
    """Print the job's log lines, ``[host]``-prefixed, until ``done``: then, when the hosts are
    ``ready``, until every host's line saying it serves has been printed (a task's lines arrive in
    order, so its setup output is then all out; ``LOG_DRAIN`` seconds at most), else once more."""
    from fray_jupyter.client.logs import log_line

    cursor, drain_until = 0, None
    serving: set[int] = set()
    while True:
        try:
            page = client.logs(job_id, cursor=cursor)
        except Exception:  # noqa: BLE001 - the logs are a courtesy: the wait says what matters
            page = None
        if page is not None:
            for entry in page.entries:
                _say(log_line(entry, job_id))
                serving.update(host for host in range(hosts) if f"session host {host} serving as " in entry.data)
            cursor = page.cursor
        if done.is_set():
            drain_until = drain_until or time.monotonic() + LOG_DRAIN
            if not ready.is_set() or len(serving) >= hosts or time.monotonic() > drain_until:
                return
        done.wait(LOG_POLL)


def start(magics: Any, args: argparse.Namespace, label: str, sessions: dict[str, Session]) -> None:
    """``%fray session start NAME`` (the module rules); the session is added to ``sessions``."""
    from fray_jupyter.flags import job_from_args
    from fray_jupyter.magics.submission import resources_from
    from fray_jupyter.resources.entrypoint import Entrypoint
    from fray_jupyter.resources.environment import EnvironmentConfig
    from fray_jupyter.session.serve import serve_host
    from fray_jupyter.session.session import Session

    name = args.session_name
    running = sessions.get(name)
    if running is not None and running.lost is None and not running.stopped and not args.dry_run:
        raise usage(f"session {name} is already running (job {running.job_id}); %fray session stop {name} or "
                    f"%fray session restart {name} first", label)
    base = resources_from(magics.namespace, args.resources) if args.resources is not None else None
    args.name = args.name or name
    source = workspace_source(args, label)
    if args.dry_run:
        if source is None:
            _say(f"session {name}: --no-workspace: no workspace would be sent")
            return
        _say(f"session {name} would ship workspace {source.root}: {source.bundle.summary}")
        for file in source.bundle.files:
            _say(f"  {file}")
        return
    if args.sync and source is None:
        raise usage("--sync keeps the workspace current on the hosts, but --no-workspace sends none", label)
    try:
        job = job_from_args(args, Entrypoint.from_callable(serve_host, ()), base=base,
                            base_name=f"--resources {args.resources}")
        if args.setup:
            environment = job.environment or EnvironmentConfig(workspace=os.getcwd())
            job = job.model_copy(update={"environment": environment.model_copy(
                update={"setup_scripts": [*(environment.setup_scripts or []), *args.setup]})})
        client = magics.client(args.controller, args.cluster)
        session = Session.launch(job, client=client, idle_timeout=args.idle_timeout or None,
                                 user=magics.user or None, jax=args.jax, workspace=source, sync_each_cell=args.sync)
    except ValueError as error:
        raise usage(str(error), label) from None
    sessions[name] = session
    shipped = f", workspace {source.root} ({source.bundle.summary})" if source is not None else ", no workspace"
    _say(f"session {name}: job {session.job_id}, {session.hosts} host(s){shipped}")
    if not args.setup:
        session.wait_ready(_say)
        return
    done, ready = threading.Event(), threading.Event()
    printer = threading.Thread(target=_print_logs, args=(client, session.job_id, session.hosts, done, ready),
                               daemon=True)
    printer.start()
    try:
        session.wait_ready(_say)
        ready.set()
    finally:
        done.set()
        printer.join()
