"""Start-up and shutdown: ``python -m fray_jupyter.controller`` (and ``fray-jupyter controller``).

Runs in the foreground: opens the store under the state dir, recovers from the previous run
(see ``engine``), serves Connect (HTTP/1.1, uvicorn, on this process's event loop) and native
gRPC (grpcio, on its own thread; see ``grpc_server``) on 127.0.0.1 by default, and — only
once both accept connections — writes the runtime file (mode 0600) and prints one line with
both URLs. SIGTERM or SIGINT stops both servers, ends running tasks (their state
says the controller stopped), removes the runtime file and exits 0. The process runs with umask
077 (``PRIVATE_UMASK``), so every file it or a task creates is private to the user.

The bearer token is ``--token``, else ``$FRAY_CONTROLLER_TOKEN``, else a fresh random one;
the variable is removed from the environment so task processes never inherit it. Callers
without a token are let in when they connect over loopback from a socket of this process's own
OS user (as Marin's ``FrayIrisClient`` does; see ``rpc.Authenticator``), unless
``--require-token``.

``--iris-local`` runs a genuine Iris local cluster (``iris_local``) instead, its scale groups from
``--cluster-config`` (the built-in profile by default; a bad name or a manifest Iris refuses exits 2
with one line), in the foreground the same way: once it answers, the runtime file gets its URL with an empty ``grpc_url`` (it
speaks Connect only) and an empty token (null-auth mode), and one line with the URL is
printed; SIGTERM or SIGINT removes the file, closes the cluster and exits 0. Its state and log
live in ``<state dir>/iris-local`` (TMPDIR of the cluster's process). HOME is left alone, so
jobs see the user's HOME, and Iris writes ``~/.config/marin/credentials/<cluster name>.json`` as its own
``iris cluster start --local`` does. Without marin-iris[controller] it exits 1 with one line
naming the package to install.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import logging
import os
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import IO, Any, Final

import uvicorn

from fray_jupyter.cluster.profile import ProfileError, profile_to_json
from fray_jupyter.controller.api.service import ControllerService
from fray_jupyter.controller.engine.budgets import LIMIT_ENV, Budgets, default_limit
from fray_jupyter.controller.engine.cluster import CLUSTER_CONFIG_ENV, Cluster, embedded_profile
from fray_jupyter.controller.engine.engine import Engine
from fray_jupyter.controller.kernel.scheduler import (
    DEFAULT_MAX_TASKS,
    MAX_TASKS_ENV,
    default_slots,
    max_tasks_setting,
)
from fray_jupyter.controller.lifecycle import Activity, idle_timeout
from fray_jupyter.controller.runtime.runner import PASS_ENV_VAR, pass_through_names
from fray_jupyter.controller.store.retention import (
    DAYS_ENV,
    GC_INTERVAL_S,
    LOG_LINES_ENV,
    SIZE_ENV,
    Policy,
    Retention,
    tree_bytes,
)
from fray_jupyter.controller.store.store import Store
from fray_jupyter.controller.transport.changes import ChangeFeed
from fray_jupyter.controller.transport.connect_app import ConnectApp
from fray_jupyter.controller.transport.grpc_server import GrpcServer
from fray_jupyter.controller.transport.rpc import Authenticator, invoke_logged, parse_user_token
from fray_jupyter.runtime_file import (
    IDLE_ENV,
    ControllerInfo,
    remove_runtime_file,
    runtime_file_path,
    state_dir,
    write_runtime_file,
)

TOKEN_ENV: Final[str] = "FRAY_CONTROLLER_TOKEN"
USER_TOKENS_ENV: Final[str] = "FRAY_CONTROLLER_USER_TOKENS"
"""Tokens that let in a user who may look inside only their own jobs (``user_tokens``)."""
OWNER_LOCK: Final[str] = "controller.owner"
PRIVATE_UMASK: Final[int] = 0o077
"""Everything the controller and its tasks create (state dir, store, bundles, work dirs, task
outputs) is private to the user from the first write: dirs 0700, files 0600."""
DEFAULT_HOST: Final[str] = "127.0.0.1"
_LOG = logging.getLogger("fray_jupyter.controller")


def build_parser() -> argparse.ArgumentParser:
    """The ``fray-jupyter controller`` argument parser (the docs' CLI page is generated from it)."""
    parser = argparse.ArgumentParser(
        prog="fray-jupyter controller",
        description="Run the embedded Iris-compatible controller (or, with --iris-local, a genuine Iris "
                    "local cluster) in the foreground.",
        epilog=f"${USER_TOKENS_ENV}='USER=TOKEN[,USER=TOKEN...]' also lets in each TOKEN's holder as USER, who may "
               "look inside (profile, exec) only USER's jobs; the --token holder and your own OS user may act on every "
               "job. Tokens are read from the environment, never the command line, so ps does not show them.",
    )
    parser.add_argument("--host", default=None, help=f"address to bind both servers (default: {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=0, help="Connect (HTTP) port; 0 picks a free one")
    parser.add_argument("--grpc-port", type=int, default=None, help="native gRPC port; 0 (default) picks a free one")
    parser.add_argument("--state-dir", type=Path, default=None,
                        help="store and task work dirs (default: <jupyter data dir>/fray)")
    parser.add_argument("--runtime-file", type=Path, default=None,
                        help="where to write URLs and token (default: <jupyter runtime dir>/fray-controller.json)")
    parser.add_argument("--slots", type=int, default=None,
                        help="tasks that may run at once (default: max(8, 2 x CPU cores))")
    parser.add_argument("--max-tasks", type=int, default=None, metavar="N",
                        help=f"task processes that may run at once, slots or not: tasks asking for no CPU take no slot "
                             f"(default: ${MAX_TASKS_ENV}, else max({DEFAULT_MAX_TASKS}, --slots))")
    parser.add_argument("--token", default=None, help=f"bearer token (default: ${TOKEN_ENV} or a random one)")
    parser.add_argument("--cluster-config", default=None, metavar="NAME|PATH",
                        help="the cluster whose placement rules apply: 'default' (built in), 'marin' (needs "
                             f"marin-iris) or an Iris cluster-config YAML (default: ${CLUSTER_CONFIG_ENV}, else default)")
    parser.add_argument("--idle-timeout", type=float, default=None, metavar="SECONDS",
                        help=f"stop after this long with no running or queued task and no request; 0 never "
                             f"(default: ${IDLE_ENV}, else 0; the auto-started controller: 3600)")
    parser.add_argument("--retention-days", type=float, default=None, metavar="DAYS",
                        help=f"remove the files of jobs finished this long ago (default: ${DAYS_ENV}, else 7)")
    parser.add_argument("--max-state-size", default=None, metavar="SIZE",
                        help=f"remove files of finished jobs, oldest first, while the state dir is larger "
                             f"(default: ${SIZE_ENV}, else 5g)")
    parser.add_argument("--max-log-lines", type=int, default=None, metavar="LINES",
                        help=f"log lines kept per task (default: ${LOG_LINES_ENV}, else 100000)")
    parser.add_argument("--gc-interval", type=float, default=GC_INTERVAL_S, metavar="SECONDS",
                        help=f"seconds between retention passes (default: {GC_INTERVAL_S:g})")
    parser.add_argument("--pass-env", action="append", default=[], metavar="NAME[,NAME...]",
                        help="also give tasks these variables of the controller's environment (repeatable; "
                             f"added to ${PASS_ENV_VAR}); tasks otherwise get a fixed base environment")
    parser.add_argument("--budget-limit", type=int, default=None, metavar="VALUE",
                        help=f"budget limit of users without their own (SetUserBudget): the resource value their "
                             f"running interactive work may reach before it drops to batch; 0 unlimited "
                             f"(default: ${LIMIT_ENV}, else 0)")
    parser.add_argument("--require-token", action="store_true",
                        help="refuse calls without the token even from your own OS user (default: your own "
                             "processes on loopback need none, as with a real Iris)")
    parser.add_argument("--iris-local", action="store_true",
                        help="run a genuine Iris local cluster (needs marin-iris[controller]) instead, its scale "
                             "groups from --cluster-config")
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line (see ``--help``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.slots is not None and args.slots < 1:
        parser.error("--slots must be at least 1")
    try:
        args.idle_timeout = idle_timeout(args.idle_timeout, os.environ)
        args.policy = Policy.from_options(args.retention_days, args.max_state_size, args.max_log_lines, os.environ)
        args.default_budget_limit = default_limit(args.budget_limit)
        args.task_limit = max_tasks_setting(args.max_tasks, os.environ, args.slots or default_slots())
        args.user_tokens = user_tokens(os.environ.get(USER_TOKENS_ENV, ""))
    except ValueError as error:
        parser.error(str(error))
    if args.policy.log_lines < 1 or args.policy.days < 0 or args.gc_interval <= 0:
        parser.error("--max-log-lines must be at least 1, --retention-days not negative, --gc-interval positive")
    if args.iris_local:
        unsupported = [flag for flag, value in (("--grpc-port", args.grpc_port), ("--slots", args.slots),
                                                ("--max-tasks", args.max_tasks), ("--token", args.token)) if value is not None]
        if args.budget_limit is not None:
            parser.error("--budget-limit cannot be used with --iris-local: a genuine Iris takes its users' default "
                         "budget from its cluster config (user_budget_defaults.budget_limit; 1000 when unset)")
        if args.require_token:
            unsupported.append("--require-token")
        if args.user_tokens:
            unsupported.append(f"${USER_TOKENS_ENV}")
        if args.host not in (None, DEFAULT_HOST):
            unsupported.append("--host")
        if unsupported:
            parser.error(f"{', '.join(unsupported)} cannot be used with --iris-local (it serves Connect only, "
                         f"on {DEFAULT_HOST}, in null-auth mode)")
    args.host = args.host or DEFAULT_HOST
    args.grpc_port = args.grpc_port or 0
    return args


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handling (this module owns SIGTERM/SIGINT) and without
    its 10-per-second tick: ``main_loop`` sleeps until ``should_exit`` is set. The tick only
    refreshed the ``Date`` header and checked for exit, so the app runs with
    ``date_header=False`` (an idle controller must not wake up ten times a second)."""

    @property
    def should_exit(self) -> bool:
        return self._exit_event().is_set()

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        if value:
            self._exit_event().set()
        else:
            self._exit_event().clear()

    def _exit_event(self) -> asyncio.Event:
        event: asyncio.Event | None = self.__dict__.get("_exit")
        if event is None:
            event = self.__dict__["_exit"] = asyncio.Event()
        return event

    async def main_loop(self) -> None:
        await self.on_tick(0)
        await self._exit_event().wait()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP matters: asyncio only sets TCP_NODELAY on accepted sockets whose proto
    # says TCP; without it every keep-alive response waits 40 ms for a delayed ACK (Nagle).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


def _claim(root: Path) -> IO[str] | None:
    """Hold ``<state dir>/OWNER_LOCK`` for this process's life (None when another controller
    does): one controller per state dir, even when discovery took a slow one for a stale one."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle = open(os.open(root / OWNER_LOCK, os.O_RDWR | os.O_CREAT, 0o600), "r+")  # noqa: SIM115 - held until exit
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def user_tokens(value: str) -> dict[str, str]:
    """``$FRAY_CONTROLLER_USER_TOKENS`` (``USER=TOKEN`` entries, separated by commas or white space) → user by
    token's holder, {} when empty; a ``ValueError`` naming the variable and the bad entry's user part."""
    tokens: dict[str, str] = {}
    for entry in value.replace(",", " ").split():
        try:
            user, token = parse_user_token(entry)
        except ValueError as error:
            raise ValueError(f"${USER_TOKENS_ENV}: {error}") from None
        tokens[user] = token
    return tokens


async def serve(args: argparse.Namespace) -> int:
    """Run until SIGTERM/SIGINT; returns the exit status."""
    root = (args.state_dir or state_dir()).expanduser().resolve()
    runtime_file = (args.runtime_file or runtime_file_path()).expanduser()
    token = args.token or os.environ.get(TOKEN_ENV) or secrets.token_urlsafe(32)
    os.environ.pop(TOKEN_ENV, None)
    os.environ.pop(USER_TOKENS_ENV, None)
    owner = _claim(root)
    if owner is None:
        print(f"fray controller: another controller is using the state dir {root}; stop it first "
              "(fray-jupyter controller stop) or pass another --state-dir", file=sys.stderr)
        return 1
    cluster = Cluster(embedded_profile(args.cluster_config))
    store = Store(root / "controller.sqlite3")
    feed = ChangeFeed()
    store.on_change = feed.touch
    passed = {name: os.environ[name] for name in pass_through_names(args.pass_env, os.environ) if name in os.environ}
    engine = Engine(store, root / "work", args.slots or default_slots(), cluster, passed, args.policy.log_lines,
                    Budgets(store, args.default_budget_limit), max_tasks=args.task_limit)
    engine.stats.keep_for(args.policy.days)
    recovered = engine.recover()
    activity = Activity(args.idle_timeout)
    invoke = activity.wrap(invoke_logged(ControllerService(store, engine, root / "bundles", cluster)))
    retention = Retention(store, root, args.policy, lambda: {running.job.id for running in engine.running.values()})

    http_socket = _bind(args.host, args.port)
    url = f"http://{_url_host(args.host)}:{http_socket.getsockname()[1]}"
    auth = Authenticator(token, same_user=not args.require_token, user_tokens=args.user_tokens)
    grpc = GrpcServer(invoke, auth)
    grpc_port = await grpc.start(args.host, args.grpc_port)
    grpc_url = f"grpc://{_url_host(args.host)}:{grpc_port}"
    engine.controller_url = url
    instance = secrets.token_hex(8)

    async def status() -> dict[str, Any]:
        state_bytes = await asyncio.to_thread(tree_bytes, root)
        return {"url": url, "grpc_url": grpc_url, "instance": instance, "state_dir": str(root),
                "state_bytes": state_bytes, "slots": engine.slots, "max_tasks": engine.max_tasks,
                "tasks_running": len(engine.running),
                "jobs_queued": len(engine.queue), **activity.figures(), **retention.figures()}

    async def collect() -> dict[str, Any]:
        return asdict(await retention.collect())

    app = ConnectApp(invoke, auth, instance, admin={"status": status, "gc": collect}, feed=feed,
                     profile=profile_to_json(cluster.profile))
    config = uvicorn.Config(app, lifespan="off", log_level="warning", access_log=False,
                            timeout_keep_alive=75, loop="none", http="auto", date_header=False)
    http = _Uvicorn(config)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    http_task = asyncio.ensure_future(http.serve(sockets=[http_socket]))
    engine_task = asyncio.ensure_future(engine.run())
    helpers = [asyncio.ensure_future(retention.run_periodically(args.gc_interval)),
               asyncio.ensure_future(activity.watch(lambda: engine.busy, stop))]
    while not http.started and not http_task.done():
        await asyncio.sleep(0.005)
    if http_task.done():
        await grpc.stop(None)
        return 1
    write_runtime_file(ControllerInfo(url=url, grpc_url=grpc_url, token=token, pid=os.getpid(), instance=instance),
                       runtime_file)
    print(f"fray controller: connect={url} grpc={grpc_url} slots={engine.slots} cluster={cluster.profile.name} "
          f"state={root} "
          f"runtime-file={runtime_file} recovered={recovered}", flush=True)
    try:
        await stop.wait()
    finally:
        remove_runtime_file(os.getpid(), runtime_file)
        feed.release()
        http.should_exit = True
        await grpc.stop(0.5)
        for helper in helpers:
            helper.cancel()
        await engine.close()
        engine_task.cancel()
        await http_task
        store.close()
        owner.close()
    return 0


def serve_iris_local(args: argparse.Namespace) -> int:
    """``--iris-local``: run a genuine Iris local cluster until SIGTERM/SIGINT (see the module
    docstring); returns the exit status."""
    from fray_jupyter.controller import iris_local

    reason = iris_local.unavailable_reason()
    if reason is not None:
        print(f"fray controller: {reason}", file=sys.stderr)
        return 1
    root = (args.state_dir or state_dir()).expanduser().resolve() / "iris-local"
    runtime_file = (args.runtime_file or runtime_file_path()).expanduser()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        cluster = iris_local.start(root / "iris.log", cluster_config=args.cluster_config, port=args.port,
                                   tmp=root / "tmp")
    except iris_local.ClusterConfigError as error:
        print(f"fray controller: {error}", file=sys.stderr)
        return 2
    except iris_local.IrisLocalUnavailable as error:
        print(f"fray controller: {' '.join(str(error).split())}", file=sys.stderr)
        return 1
    try:
        write_runtime_file(ControllerInfo(url=cluster.url, grpc_url="", token="", pid=os.getpid()), runtime_file)
        print(f"fray controller: iris-local connect={cluster.url} cluster={args.cluster_config or 'default'} "
              f"state={root} "
              f"runtime-file={runtime_file}", flush=True)
        while not stop.wait(0.2):
            if cluster.process.poll() is not None:
                print(f"fray controller: the Iris local cluster exited with status {cluster.process.returncode}; "
                      f"see {cluster.log}", file=sys.stderr)
                return 1
    finally:
        remove_runtime_file(os.getpid(), runtime_file)
        cluster.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point for ``python -m fray_jupyter.controller`` and ``fray-jupyter controller``."""
    args = parse_args(argv)
    os.umask(PRIVATE_UMASK)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        stream=sys.stderr)
    if args.iris_local:
        return serve_iris_local(args)
    try:
        return asyncio.run(serve(args))
    except ProfileError as error:
        print(f"fray controller: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"fray controller: {error}", file=sys.stderr)
        return 1
