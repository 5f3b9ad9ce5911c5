"""``fray-jupyter controller status|stop|gc``: see, stop and clean up the embedded controller.

* ``status``: the running controller's URL, pid, uptime, idle timeout, tasks running and jobs
  queued, state-dir size against its cap, and the retention figures (``--json`` for all of them).
  Exit 1 with one line when none is running.
* ``stop``: SIGTERM the running controller (its running tasks end WORKER_FAILED, saying so) and
  wait for it to exit; nothing running is not an error.
* ``gc``: apply the retention policy now, in the running controller, or directly on the state
  dir when none runs (with the default policy, or the ``$FRAY_CONTROLLER_*`` variables).

The controller is the one the runtime file names (``--runtime-file``, default as discovery uses);
the admin calls carry the runtime file's bearer token.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fray_jupyter.controller.store.retention import Policy, Retention
from fray_jupyter.controller.store.store import Store
from fray_jupyter.runtime_file import (
    ControllerInfo,
    process_alive,
    read_runtime_file,
    runtime_file_path,
    state_dir,
)
from fray_jupyter.vocabulary import counted, duration_ms

STOP_TIMEOUT_S = 20.0


def admin_call(info: ControllerInfo, verb: str, timeout: float = 60.0) -> dict[str, Any]:
    """POST ``/fray/admin/<verb>`` to the controller; its JSON answer (OSError when unreachable)."""
    parts = urlsplit(info.url)
    connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        connection.request("POST", f"/fray/admin/{verb}", body=b"",
                           headers={"authorization": f"Bearer {info.token}"})
        reply = connection.getresponse()
        body = json.loads(reply.read() or b"{}")
    finally:
        connection.close()
    if reply.status != 200:
        raise OSError(f"{info.url} answered {reply.status}: {body.get('message', body)}")
    return dict(body)


def _mib(size: float) -> str:
    return f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.1f} MiB"


def render_status(figures: dict[str, Any]) -> str:
    """The status figures as a few aligned lines."""
    policy, last = figures["policy"], figures["last_gc"]
    idle = ("never stops when idle" if not figures["idle_timeout_s"] else
            f"stops after {duration_ms(1000 * figures['idle_timeout_s'])} idle (idle for {duration_ms(1000 * figures['idle_s'])})")
    last_text = ("no collection yet" if last is None else
                 f"last gc {duration_ms(time.time() * 1000 - last['at_ms'])} ago removed the files of "
                 f"{counted(last['jobs_cleaned'], 'job')}, freed {_mib(last['bytes_freed'])}")
    controller = (f"{figures['url']}  (grpc {figures['grpc_url']})  pid {figures['pid']}  "
                  f"up {duration_ms(1000 * figures['uptime_s'])}")
    bound = f" (at most {figures['max_tasks']} at once)" if "max_tasks" in figures else ""
    tasks = (f"{figures['tasks_running']} running of {figures['slots']} slots{bound}, {counted(figures['jobs_queued'], 'job')} "
             f"queued; {counted(figures['jobs'], 'job')} on record, {figures['jobs_unfinished']} unfinished")
    state = f"{figures['state_dir']}  {_mib(figures['state_bytes'])} of a {_mib(policy['max_bytes'])} cap"
    retention = (f"files of finished jobs kept {policy['days']:g} days; logs capped at {policy['log_lines']:,} "
                 f"lines per task; {counted(figures['jobs_with_files'], 'finished job')} with files, "
                 f"{figures['jobs_cleaned']} cleaned; {last_text}")
    rows = [("controller", controller), ("tasks", tasks), ("state dir", state), ("retention", retention),
            ("idle", idle)]
    return "".join(f"{name:<11} {text}\n" for name, text in rows)


def _status(args: argparse.Namespace) -> int:
    info = read_runtime_file(args.runtime_file)
    if info is None:
        print(f"no controller is running (runtime file {args.runtime_file})")
        return 1
    figures = admin_call(info, "status")
    sys.stdout.write(json.dumps(figures, indent=2) + "\n" if args.json else render_status(figures))
    return 0


def _stop(args: argparse.Namespace) -> int:
    info = read_runtime_file(args.runtime_file)
    if info is None:
        print("no controller is running")
        return 0
    os.kill(info.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while process_alive(info.pid):
        if time.monotonic() > deadline:
            print(f"controller pid {info.pid} did not stop within {STOP_TIMEOUT_S:g} s", file=sys.stderr)
            return 1
        time.sleep(0.05)
    print(f"stopped the controller at {info.url} (pid {info.pid})")
    return 0


def _gc(args: argparse.Namespace) -> int:
    info = read_runtime_file(args.runtime_file)
    if info is not None:
        report = admin_call(info, "gc")
    else:
        report = asyncio.run(_collect_offline(args.state_dir))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"removed the files of {counted(report['jobs_cleaned'], 'finished job')} and "
              f"{counted(report['leftovers_removed'], 'leftover')}, freed {_mib(report['bytes_freed'])}; "
              f"state dir now {_mib(report['state_bytes'])}"
              + (" (still over its cap: the rest is running jobs, records and logs)" if report["over_cap"] else ""))
    return 0


async def _collect_offline(root: Path) -> dict[str, Any]:
    store = Store(root / "controller.sqlite3")
    try:
        policy = Policy.from_options(None, None, None, os.environ)
        return asdict(await Retention(store, root, policy, set).collect())
    finally:
        store.close()


def build_parser() -> argparse.ArgumentParser:
    """The ``fray-jupyter controller status|stop|gc`` argument parser (the docs' CLI page is generated
    from it)."""
    parser = argparse.ArgumentParser(prog="fray-jupyter controller", description=__doc__.split("\n")[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    for name, run, text in (("status", _status, "show the running controller"), ("stop", _stop, "stop it"),
                            ("gc", _gc, "apply the retention policy now")):
        verb = verbs.add_parser(name, help=text, description=text)
        verb.add_argument("--runtime-file", type=Path, default=None,
                          help="the controller's runtime file (default: <jupyter runtime dir>/fray-controller.json)")
        verb.add_argument("--state-dir", type=Path, default=None, help="with gc and no controller running: "
                                                                        "the state dir (default: <jupyter data dir>/fray)")
        if name != "stop":
            verb.add_argument("--json", action="store_true", help="print JSON")
        verb.set_defaults(run=run)
    return parser


def main(argv: Sequence[str]) -> int:
    """``fray-jupyter controller status|stop|gc [options]``."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.runtime_file = (args.runtime_file or runtime_file_path()).expanduser()
    args.state_dir = (args.state_dir or state_dir()).expanduser()
    try:
        return int(args.run(args))
    except (OSError, ValueError) as error:
        print(f"fray-jupyter controller {args.verb}: {error}", file=sys.stderr)
        return 1
