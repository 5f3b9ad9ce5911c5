"""Running one task attempt as local processes, with its output captured line by line.

An attempt runs in its own fresh work dir ``<state dir>/work/job-<n>/<task>.<attempt>-<uid>``
(the job's row number, never its name, and the start of the attempt's uid), with a private
temporary dir beside it (``….tmp``, ``$TMPDIR``, like the per-task ``/tmp`` of an Iris container):
the bundle zip (if any) is unpacked there, then ``workdir_files`` are written over it, then
each ``setup_commands`` entry runs as ``bash -c <command>`` (a failing one fails the attempt,
its failing command and last output lines in the error) and finally ``run_command.argv`` runs,
in the venv the setup left (``task_setup``: the steps and the worker environment Iris gives setup). Every process starts in a new session, so it leads its
own process group; stopping an attempt sends SIGTERM to the group, then SIGKILL after
``KILL_GRACE_S``. When the main process exits, whatever it left behind in its group is
killed too (a task ends with its process, as a container would).

Environment of every process: never the environment of whoever started the controller, but,
in this order, the fixed base below (``base_environment``), the variables named by the
controller's pass-through list (``--pass-env`` / ``$FRAY_CONTROLLER_PASS_ENV``, taken from the
controller's environment), the job's ``environment.env_vars``, then the Iris variables below.

==========================  ===============================================================
``PATH``                    the directory of the controller's Python, then ``SYSTEM_PATH``
``HOME``                    the user's home directory (from the password database)
``LANG``                    ``C.UTF-8``
``TMPDIR``                  the attempt's private temporary dir (removed with its work dir)
``PYTHONUNBUFFERED``        ``1``, so Python output reaches the log as it is printed
==========================  ===============================================================

Iris variables (names as a real Iris worker sets them, and no others: task code reads its identity
with ``fray_jupyter.task_info()``):

==========================  ===============================================================
``IRIS_TASK_ID``            ``/<user>/<job>/<index>:<attempt>``
``IRIS_NUM_TASKS``          the job's replica count
``IRIS_WORKDIR``            the attempt's work dir (also the processes' cwd)
``IRIS_OUTPUT_DIR``         ``$IRIS_WORKDIR/.iris-outputs``
``IRIS_PYTHON``             the controller's ``sys.executable``
``IRIS_JOB_ENV``            JSON object of the job's env vars (what child jobs inherit)
``IRIS_JOB_SETUP_SCRIPTS``  JSON list of the job's ``environment.setup_scripts``
``IRIS_TASK_RESOURCES``     proto-JSON (snake_case) of the job's ``ResourceSpecProto``
``IRIS_CONTROLLER_URL``     the controller's Connect URL (also ``IRIS_CONTROLLER_ADDRESS``)
``IRIS_WORKER_ID``          ``WORKER_ID`` (this machine acting as the one worker)
``IRIS_ATTEMPT_UID``        a random hex id unique to this attempt
``IRIS_BUNDLE_ID``          the job's ``bundle_id`` (empty without a bundle)
``IRIS_ADVERTISE_HOST``     ``127.0.0.1``: the host a task advertises its services on
``IRIS_BIND_HOST``          ``127.0.0.1``: where a task binds them (Iris: ``0.0.0.0``; this is one machine)
``IRIS_WORKER_REGION``      the region of the scale group the task was placed on (``Cluster.placed_region``);
                            unset when that group has none (Iris sets it from a non-empty ``region`` attribute)
``IRIS_JOB_CONSTRAINTS``    JSON list of the job's ``region``/``zone`` constraints (proto-JSON, snake_case),
                            which child jobs inherit; unset when the job has none (Iris's ``INHERITED_CONSTRAINT_KEYS``)
``IRIS_PORT_<NAME>``        for each of the job's ``ports`` (name upper-cased), the port the attempt
                            holds for it, as an Iris worker reserves it (``ports``)
==========================  ===============================================================
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import re
import signal
import sys
import zipfile
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from google.protobuf import json_format

from fray_jupyter.controller.kernel.exits import EXECUTION_TIMEOUT, Outcome, exit_error
from fray_jupyter.controller.runtime.task_setup import TAIL_LINES, setup_failure
from fray_jupyter.iris.proto import job_pb2

KILL_GRACE_S: Final[float] = 1.0
MAX_UNPACKED_BUNDLE_BYTES: Final[int] = 1024 * 1024 * 1024
"""A bundle (at most 25 MiB zipped) may unpack to at most 1 GiB (a zip bomb is refused)."""
MAX_BUNDLE_ENTRIES: Final[int] = 50_000
"""A bundle may hold at most this many entries (files and directories)."""
MAX_LINE_CHARS: Final[int] = 64 * 1024
WORKER_ID: Final[str] = "fray-local"
LOOPBACK: Final[str] = "127.0.0.1"
SYSTEM_PATH: Final[tuple[str, ...]] = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""The system part of a task's ``PATH`` (a Debian-based image's default)."""
PASS_ENV_VAR: Final[str] = "FRAY_CONTROLLER_PASS_ENV"
"""Comma-separated names of controller variables tasks also get (as ``--pass-env``)."""
OUTPUT_DIRNAME: Final[str] = ".iris-outputs"
"""``$IRIS_OUTPUT_DIR`` inside the attempt's work dir (Iris's name on a process worker)."""
INHERITED_CONSTRAINT_KEYS: Final[frozenset[str]] = frozenset({"region", "zone"})
"""Constraint keys a task passes on to child jobs in ``IRIS_JOB_CONSTRAINTS`` (Iris's set of the same name)."""
_READ_CHUNK: Final[int] = 64 * 1024
_LINE_BREAK: Final[re.Pattern[bytes]] = re.compile(rb"\r\n|\r|\n")

OutputSink = Callable[[str, str], None]
"""Receives ``(source, line)`` with source ``"stdout"`` or ``"stderr"``, newline removed."""


@dataclass(frozen=True)
class TaskIdentity:
    """Who a task is: job id, index, attempt, attempt uid and the job's replica count."""

    job_id: str
    index: int
    attempt: int
    attempt_uid: str
    num_tasks: int


def task_tmpdir(workdir: Path) -> Path:
    """The attempt's private ``$TMPDIR``: beside its work dir, removed with it."""
    return workdir.with_name(f"{workdir.name}.tmp")


def _home() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:  # a uid without a passwd entry (some containers)
        return str(Path.home())


def base_environment(workdir: Path) -> dict[str, str]:
    """The fixed base of every task's environment (the module docstring's first table): the
    same whoever started the controller."""
    return {
        "PATH": os.pathsep.join((str(Path(sys.executable).parent), *SYSTEM_PATH)),
        "HOME": _home(),
        "LANG": "C.UTF-8",
        "TMPDIR": str(task_tmpdir(workdir)),
        "PYTHONUNBUFFERED": "1",
    }


def pass_through_names(option: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """Variable names tasks also get: every ``--pass-env`` value and ``$FRAY_CONTROLLER_PASS_ENV``,
    each a comma-separated list (blanks ignored), in order, without repeats."""
    names: list[str] = []
    for text in (*option, environ.get(PASS_ENV_VAR, "")):
        names += [name.strip() for name in text.split(",") if name.strip() and name.strip() not in names]
    return names


def task_environment(
    task: TaskIdentity,
    request_env: Mapping[str, str],
    setup_scripts: Sequence[str],
    resources: job_pb2.ResourceSpecProto,
    workdir: Path,
    controller_url: str,
    bundle_id: str,
    passed: Mapping[str, str] | None = None,
    constraints: Sequence[job_pb2.Constraint] = (),
    worker_region: str = "",
    ports: Mapping[str, int] | None = None,
) -> dict[str, str]:
    """The environment of a task's processes (see the module docstring for the rule); ``passed``
    holds the pass-through variables with their values, ``constraints`` are the job's (only region and
    zone ones are passed on), ``worker_region`` the region of the group the task was placed on,
    ``ports`` the attempt's reserved port per name (each ``IRIS_PORT_<NAME>``, ``controller.runtime.ports``)."""
    env = base_environment(workdir)
    env.update(passed or {})
    env.update(request_env)
    env.update({
        "IRIS_TASK_ID": f"{task.job_id}/{task.index}:{task.attempt}",
        "IRIS_NUM_TASKS": str(task.num_tasks),
        "IRIS_WORKDIR": str(workdir),
        "IRIS_OUTPUT_DIR": str(workdir / OUTPUT_DIRNAME),
        "IRIS_PYTHON": sys.executable,
        "IRIS_JOB_ENV": json.dumps(dict(request_env)),
        "IRIS_JOB_SETUP_SCRIPTS": json.dumps(list(setup_scripts)),
        "IRIS_TASK_RESOURCES": json_format.MessageToJson(
            resources, preserving_proto_field_name=True, indent=None
        ),
        "IRIS_CONTROLLER_URL": controller_url,
        "IRIS_CONTROLLER_ADDRESS": controller_url,
        "IRIS_WORKER_ID": WORKER_ID,
        "IRIS_ATTEMPT_UID": task.attempt_uid,
        "IRIS_BUNDLE_ID": bundle_id,
        "IRIS_ADVERTISE_HOST": LOOPBACK,
        "IRIS_BIND_HOST": LOOPBACK,
    })
    inherited = [c for c in constraints if c.key in INHERITED_CONSTRAINT_KEYS]
    if inherited:
        env["IRIS_JOB_CONSTRAINTS"] = json.dumps(
            [json_format.MessageToDict(c, preserving_proto_field_name=True) for c in inherited])
    if worker_region:
        env["IRIS_WORKER_REGION"] = worker_region
    env.update({f"IRIS_PORT_{name.upper()}": str(port) for name, port in (ports or {}).items()})
    return env


def bundle_limit_error(infos: Sequence[zipfile.ZipInfo]) -> str | None:
    """Why a bundle with these entries is refused (too many entries, or too large unpacked:
    ``MAX_BUNDLE_ENTRIES``, ``MAX_UNPACKED_BUNDLE_BYTES``), or None. The unpacked size is the
    sum of the entries' declared sizes, which ``zipfile`` never lets an entry exceed."""
    if len(infos) > MAX_BUNDLE_ENTRIES:
        return (f"bundle has {len(infos)} entries, over the limit of {MAX_BUNDLE_ENTRIES} entries "
                "(MAX_BUNDLE_ENTRIES); bundle fewer files")
    unpacked = sum(info.file_size for info in infos)
    if unpacked > MAX_UNPACKED_BUNDLE_BYTES:
        return (f"bundle unpacks to {unpacked / 2**20:.1f} MiB, over the limit of "
                f"{MAX_UNPACKED_BUNDLE_BYTES / 2**20:.0f} MiB unpacked (MAX_UNPACKED_BUNDLE_BYTES); "
                "bundle fewer or smaller files")
    return None


def prepare_workdir(workdir: Path, bundle: Path | None, files: Mapping[str, bytes]) -> None:
    """Create ``workdir`` (it must not exist: every attempt gets a fresh one), unpack ``bundle``
    into it (within ``bundle_limit_error``'s limits, else ``ValueError``), then write ``files``
    (relative paths, validated at submission) over it. Blocking; run it off the event loop."""
    workdir.parent.mkdir(parents=True, exist_ok=True)
    workdir.mkdir()
    task_tmpdir(workdir).mkdir()
    (workdir / OUTPUT_DIRNAME).mkdir()
    if bundle is not None:
        with zipfile.ZipFile(bundle) as archive:
            infos = archive.infolist()
            if (problem := bundle_limit_error(infos)) is not None:
                raise ValueError(problem)
            for info in infos:
                archive.extract(info, workdir)
    for name, content in files.items():
        target = workdir / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def process_start_token(pid: int) -> str:
    """The kernel's start time of process ``pid`` (Linux ``/proc``), to tell it apart from a
    later process that reuses the pid; empty where that is not available."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat.rsplit(")", 1)[1].split()[19]


def kill_stale_group(pid: int, pgid: int, token: str) -> bool:
    """SIGKILL the process group of a task left over from a previous controller run, if its
    leader is still the process recorded (same start token, or same group where tokens are
    unavailable). Returns whether a signal was sent."""
    try:
        if token and process_start_token(pid) != token:
            return False
        if not token and os.getpgid(pid) != pgid:
            return False
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True


@dataclass
class Attempt:
    """A running attempt: its steps, limits and current process group."""

    steps: list[list[str]]
    workdir: Path
    env: dict[str, str]
    timeout_s: float | None
    sink: OutputSink
    on_spawn: Callable[[int, str], None]
    pgid: int | None = None
    stop_reason: str | None = None
    _killer: asyncio.Task[None] | None = field(default=None, repr=False)
    _recent: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES + 5), repr=False)
    _last_stderr: str = field(default="", repr=False)

    def stop(self, reason: str) -> None:
        """Stop the attempt: no further step starts; SIGTERM now, SIGKILL after the grace."""
        if self.stop_reason is not None:
            return
        self.stop_reason = reason
        if self.pgid is not None:
            self._killer = asyncio.ensure_future(_terminate_group(self.pgid))

    def kill(self) -> None:
        """SIGKILL the current process group now (shutdown: no grace left)."""
        self.stop_reason = self.stop_reason or "killed"
        if self.pgid is not None:
            _signal_group(self.pgid, signal.SIGKILL)

    async def run(self) -> Outcome:
        """Run every step in order; the first non-zero exit ends the attempt."""
        loop = asyncio.get_running_loop()
        deadline = None if self.timeout_s is None else loop.time() + self.timeout_s
        for number, argv in enumerate(self.steps, start=1):
            if self.stop_reason is not None:
                break
            setup = number < len(self.steps)
            try:
                code, timed_out = await self._run_step(argv, deadline)
            except OSError as error:
                what = f"setup command {number}" if setup else f"command {argv[0]!r}"
                return Outcome(job_pb2.TASK_STATE_FAILED, None, f"could not start {what}: {error}")
            if self.stop_reason is not None:
                break
            if timed_out:
                return Outcome(job_pb2.TASK_STATE_FAILED, None, EXECUTION_TIMEOUT, timed_out=True)
            if code != 0:
                failure = (setup_failure(number, len(self.steps) - 1, code, argv, list(self._recent)) if setup
                           else exit_error(code, self._last_stderr))
                return Outcome(job_pb2.TASK_STATE_FAILED, code, failure)
        if self.stop_reason is not None:
            return Outcome(job_pb2.TASK_STATE_KILLED, None, self.stop_reason)
        return Outcome(job_pb2.TASK_STATE_SUCCEEDED, 0)

    async def _run_step(self, argv: list[str], deadline: float | None) -> tuple[int, bool]:
        """Run one process to completion; returns (exit code, timed out)."""
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=self.workdir, env=self.env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
        )
        self.pgid = process.pid
        self.on_spawn(process.pid, process_start_token(process.pid))
        assert process.stdout is not None and process.stderr is not None
        self._recent.clear()
        self._last_stderr = ""

        def sink(source: str, line: str) -> None:
            self._recent.append(line)
            if source == "stderr" and line:
                self._last_stderr = line
            self.sink(source, line)

        readers = [
            asyncio.ensure_future(_pump(process.stdout, "stdout", sink)),
            asyncio.ensure_future(_pump(process.stderr, "stderr", sink)),
        ]
        timed_out = False
        if self.stop_reason is not None:
            self._killer = asyncio.ensure_future(_terminate_group(process.pid))
        remaining = None if deadline is None else max(0.0, deadline - asyncio.get_running_loop().time())
        try:
            await asyncio.wait_for(process.wait(), remaining)
        except TimeoutError:
            timed_out = True
            _signal_group(process.pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), KILL_GRACE_S)
        _signal_group(process.pid, signal.SIGKILL)  # leftovers in the group end with the task
        await process.wait()
        if self._killer is not None:
            self._killer.cancel()
        _, pending = await asyncio.wait(readers, timeout=1.0)
        for reader in pending:
            reader.cancel()
        self.pgid = None
        return int(process.returncode if process.returncode is not None else -1), timed_out


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _terminate_group(pgid: int) -> None:
    """SIGTERM the group, then SIGKILL it after ``KILL_GRACE_S`` (if anything is left)."""
    _signal_group(pgid, signal.SIGTERM)
    await asyncio.sleep(KILL_GRACE_S)
    _signal_group(pgid, signal.SIGKILL)


async def _pump(stream: asyncio.StreamReader, source: str, sink: OutputSink) -> None:
    """Forward ``stream`` to ``sink`` line by line as a genuine Iris worker cuts it
    (``iris.loglines``: at ``\\n``, ``\\r\\n`` or a lone ``\\r``, trailing whitespace dropped), so each
    carriage-return redraw of a progress bar is a line of its own as soon as the next one starts. A
    ``\\r`` at the end of what has arrived waits for the next byte (it may begin ``\\r\\n``); over-long
    lines are split at ``MAX_LINE_CHARS``; a final line without a break is kept; undecodable bytes
    are replaced."""
    pending = b""
    while chunk := await stream.read(_READ_CHUNK):
        pending += chunk
        held = pending.endswith(b"\r")
        *lines, pending = _LINE_BREAK.split(pending[:-1] if held else pending)
        pending += b"\r" if held else b""
        for line in lines:
            _emit(line, source, sink)
        while len(pending) > MAX_LINE_CHARS:
            _emit(pending[:MAX_LINE_CHARS], source, sink)
            pending = pending[MAX_LINE_CHARS:]
    if pending:
        _emit(pending.removesuffix(b"\r"), source, sink)


def _emit(raw: bytes, source: str, sink: OutputSink) -> None:
    text = raw.decode("utf-8", errors="replace").rstrip()
    for start in range(0, max(len(text), 1), MAX_LINE_CHARS):
        sink(source, text[start:start + MAX_LINE_CHARS])
