"""``ProfileTask``'s captures, made as Iris's process runtime makes them (``iris/cluster/runtime/
process.py`` and ``profile.py``), without blocking the controller's loop.

Rules:

* CPU: ``py-spy record --pid P --duration D --rate R --format F --output FILE --subprocesses
  [--native]``; ``F`` from ``CPU_FORMATS`` (flamegraph SVG by default), ``R`` the request's
  ``rate_hz`` or 20, native frames unless the request sets ``native`` false.
* Threads: ``py-spy dump --pid P --subprocesses [--locals] [--native]``; a dump that printed the
  task's stacks but failed on a non-Python child still counts (py-spy issue 846, as Iris). When the
  task's leader is not Python (``sh -c "python …"``, ``uv run``), py-spy refuses the whole dump: then
  every other process of the task's process group is dumped on its own, and those that are Python
  are answered (Iris answers the error).
* Memory: ``memray attach --native P --duration D --output TRACE [--aggregate for leaks]``, then
  ``memray flamegraph [--leaks]`` (HTML), ``memray table`` or ``memray stats --json``
  (``MEMORY_FORMATS``); RAW returns the trace itself.
* After every attaching profiler the target's process group gets SIGCONT: py-spy can leave it
  stopped (ptrace group-stop, py-spy issue 390), as Iris's ``LocalProfileDispatch`` does.
* A profiler that outlives its window plus ``HEADROOM_S`` (threads: ``THREAD_DUMP_TIMEOUT_S``)
  is killed with its process group, so nothing is left attached.
* A CPU or memory capture that fails (the profiler missing, a process that is not Python, no
  ptrace permission) answers a small stub in the requested format that says why, as Iris's
  process runtime answers its stub; a failed thread dump is an error (``ProfileError``).
* The controller itself (``/system/process``): py-spy without ``--subprocesses`` and without the
  SIGCONT (a stopped process cannot resume itself); memory with memray's in-process ``Tracker``
  for the window (attaching to oneself needs no ptrace), as Iris's ``profile_local_process``; a
  missing tool is an error naming it.

The profilers are found beside the controller's Python first (its venv's ``bin``), then on PATH.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from fray_jupyter.iris.proto import job_pb2

_LOG = logging.getLogger(__name__)

J = job_pb2
DEFAULT_DURATION_S: Final[int] = 10
DEFAULT_RATE_HZ: Final[int] = 20
HEADROOM_S: Final[int] = 30
THREAD_DUMP_TIMEOUT_S: Final[int] = 30
TRANSFORM_TIMEOUT_S: Final[int] = 30
CPU_FORMATS: Final[dict[int, tuple[str, str]]] = {
    J.CpuProfile.FLAMEGRAPH: ("flamegraph", "svg"),
    J.CpuProfile.SPEEDSCOPE: ("speedscope", "json"),
    J.CpuProfile.RAW: ("raw", "txt"),
}
"""CpuProfile format → (py-spy ``--format``, file extension); unset means FLAMEGRAPH."""
MEMORY_FORMATS: Final[dict[int, tuple[str, str]]] = {
    J.MemoryProfile.FLAMEGRAPH: ("flamegraph", "html"),
    J.MemoryProfile.TABLE: ("table", "txt"),
    J.MemoryProfile.STATS: ("stats", "json"),
    J.MemoryProfile.RAW: ("raw", "bin"),
}
"""MemoryProfile format → (memray reporter, file extension); unset means FLAMEGRAPH."""
PY_SPY_NON_PYTHON_CHILD: Final[str] = "Failed to find python version from target process"


class ProfileError(Exception):
    """A capture that failed: the message says what, in one line."""


def cpu_format(cpu: job_pb2.CpuProfile) -> tuple[str, str]:
    """The request's CPU format as (py-spy format, extension); unset or unknown is the flamegraph."""
    return CPU_FORMATS.get(cpu.format, CPU_FORMATS[J.CpuProfile.FLAMEGRAPH])


def memory_format(memory: job_pb2.MemoryProfile) -> tuple[str, str]:
    """The request's memory format as (memray reporter, extension); unset or unknown is the flamegraph."""
    return MEMORY_FORMATS.get(memory.format, MEMORY_FORMATS[J.MemoryProfile.FLAMEGRAPH])


def tool(name: str) -> str | None:
    """Where profiler ``name`` is: beside this Python (its venv), else on PATH; None if nowhere."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else shutil.which(name)


async def capture(pid: int, profile_type: job_pb2.ProfileType, duration_s: int) -> bytes:
    """Profile the task process ``pid`` (and its children) as the module docstring says."""
    which = profile_type.WhichOneof("profiler")
    if which == "threads":
        return await _threads(pid, profile_type.threads, subprocesses=True, resume=True)
    if which == "cpu":
        try:
            return await _cpu(pid, profile_type.cpu, duration_s, subprocesses=True, resume=True)
        except ProfileError as error:
            _LOG.warning("CPU profile of pid %s failed (%s); answering a stub", pid, error)
            return cpu_stub(profile_type.cpu, str(error))
    if which == "memory":
        try:
            return await _memory_attach(pid, profile_type.memory, duration_s)
        except ProfileError as error:
            _LOG.warning("memory profile of pid %s failed (%s); answering a stub", pid, error)
            return memory_stub(profile_type.memory, str(error))
    raise ProfileError("ProfileType must specify cpu, memory, or threads profiler")


async def capture_self(profile_type: job_pb2.ProfileType, duration_s: int) -> bytes:
    """Profile the controller's own process (``/system/process``)."""
    which = profile_type.WhichOneof("profiler")
    if which == "threads":
        return await _threads(os.getpid(), profile_type.threads, subprocesses=False, resume=False)
    if which == "cpu":
        return await _cpu(os.getpid(), profile_type.cpu, duration_s, subprocesses=False, resume=False)
    if which == "memory":
        return await _memory_self(profile_type.memory, duration_s)
    raise ProfileError("ProfileType must specify cpu, memory, or threads profiler")


def cpu_stub(cpu: job_pb2.CpuProfile, why: str) -> bytes:
    """A CPU profile in the requested format that holds no samples and says ``why``."""
    text = _escape(f"no CPU profile: {why}")
    py_spy_format, _ = cpu_format(cpu)
    if py_spy_format == "flamegraph":
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="800" height="50">'
                f'<text x="10" y="30" font-size="14">{text}</text></svg>').encode()
    if py_spy_format == "speedscope":
        return (b'{"version":"0.1.0","$schema":"https://www.speedscope.app/file-format-schema.json",'
                b'"profiles":[],"shared":{"frames":[]}}')
    return f"no CPU profile: {why}\n".encode()


def memory_stub(memory: job_pb2.MemoryProfile, why: str) -> bytes:
    """A memory profile in the requested format that holds no allocations and says ``why``."""
    reporter, _ = memory_format(memory)
    if reporter == "flamegraph":
        return (f"<!DOCTYPE html><html><head><title>Memory Profile</title></head><body>"
                f"<p>{_escape(f'no memory profile: {why}')}</p></body></html>").encode()
    if reporter == "table":
        return f"no memory profile: {why}\n".encode()
    if reporter == "raw":
        return b""
    return json.dumps({"error": f"no memory profile: {why}"}).encode()


# -- the captures ----------------------------------------------------------------------------------
async def _cpu(pid: int, cpu: job_pb2.CpuProfile, duration_s: int, *, subprocesses: bool, resume: bool) -> bytes:
    py_spy = _require("py-spy")
    py_spy_format, ext = cpu_format(cpu)
    rate = cpu.rate_hz if cpu.rate_hz > 0 else DEFAULT_RATE_HZ
    native = cpu.native if cpu.HasField("native") else True
    with _scratch(ext) as (output,):
        argv = [py_spy, "record", "--pid", str(pid), "--duration", str(duration_s), "--rate", str(rate),
                "--format", py_spy_format, "--output", output,
                *(["--subprocesses"] if subprocesses else []), *(["--native"] if native else [])]
        code, _, stderr = await _attach(argv, duration_s + HEADROOM_S, pid if resume else None)
        if code != 0:
            raise ProfileError(f"py-spy record failed (exit {code}): {_last_line(stderr)}")
        return Path(output).read_bytes()


async def _threads(pid: int, threads: job_pb2.ThreadsProfile, *, subprocesses: bool, resume: bool) -> bytes:
    py_spy = _require("py-spy")
    argv = [py_spy, "dump", "--pid", str(pid), *(["--subprocesses"] if subprocesses else []),
            *(["--locals"] if threads.locals else []), *(["--native"] if threads.native else [])]
    code, stdout, stderr = await _attach(argv, THREAD_DUMP_TIMEOUT_S, pid if resume else None)
    partial_ok = subprocesses and bool(stdout.strip()) and PY_SPY_NON_PYTHON_CHILD in stderr
    if code != 0 and not partial_ok:
        members = _group_members(pid) if subprocesses and PY_SPY_NON_PYTHON_CHILD in stderr else []
        dumps = []
        for member in members:
            with contextlib.suppress(ProfileError):  # not Python either
                dumps.append(await _threads(member, threads, subprocesses=False, resume=resume))
        if not dumps:
            raise ProfileError(f"py-spy dump failed (exit {code}): {_last_line(stderr)}")
        return b"\n".join(dumps)
    return stdout


def _group_members(leader: int) -> list[int]:
    """The other live processes of ``leader``'s process group (Linux ``/proc``; none elsewhere)."""
    members: list[int] = []
    if not Path("/proc").is_dir():
        return members
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == leader:
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[2]) == leader:
                members.append(int(entry.name))
    return sorted(members)



async def _memory_attach(pid: int, memory: job_pb2.MemoryProfile, duration_s: int) -> bytes:
    memray = _require("memray")
    reporter, ext = memory_format(memory)
    with _scratch("bin", ext) as (trace, output):
        Path(trace).unlink()  # memray refuses to overwrite
        argv = [memray, "attach", "--native", str(pid), "--duration", str(duration_s), "--output", trace,
                *(["--aggregate"] if memory.leaks else [])]
        code, _, stderr = await _attach(argv, duration_s + HEADROOM_S, pid)
        if code != 0 or not Path(trace).exists():
            raise ProfileError(f"memray attach failed (exit {code}): {_last_line(stderr)}")
        return await _memray_report(memray, reporter, memory.leaks, trace, output)


async def _memory_self(memory: job_pb2.MemoryProfile, duration_s: int) -> bytes:
    memray_bin = _require("memray")
    try:
        import memray
    except ImportError:
        raise ProfileError("'memray' is not installed: /system/process memory profiles need it") from None
    reporter, ext = memory_format(memory)
    file_format = memray.FileFormat.AGGREGATED_ALLOCATIONS if memory.leaks else memray.FileFormat.ALL_ALLOCATIONS
    with _scratch("bin", ext) as (trace, output):
        Path(trace).unlink()
        with memray.Tracker(trace, native_traces=True, file_format=file_format):
            await asyncio.sleep(duration_s)
        return await _memray_report(memray_bin, reporter, memory.leaks, trace, output)


async def _memray_report(memray: str, reporter: str, leaks: bool, trace: str, output: str) -> bytes:
    """memray's report ``reporter`` of ``trace`` (RAW: the trace itself)."""
    if reporter == "raw":
        return Path(trace).read_bytes()
    argv = {
        "flamegraph": [memray, "flamegraph", *(["--leaks"] if leaks else []), "--force", "--output", output, trace],
        "table": [memray, "table", trace],
        "stats": [memray, "stats", "--json", "--force", "-o", output, trace],
    }[reporter]
    code, stdout, stderr = await run_bounded(argv, TRANSFORM_TIMEOUT_S)
    if code != 0:
        raise ProfileError(f"memray {reporter} failed (exit {code}): {_last_line(stderr)}")
    return stdout if reporter == "table" else Path(output).read_bytes()


# -- processes -------------------------------------------------------------------------------------
async def _attach(argv: list[str], timeout_s: int, resume_pid: int | None) -> tuple[int, bytes, str]:
    """Run an attaching profiler, then SIGCONT ``resume_pid``'s process group (when given)."""
    try:
        return await run_bounded(argv, timeout_s)
    finally:
        if resume_pid is not None:
            resume(resume_pid)


def resume(pid: int) -> None:
    """SIGCONT ``pid``'s process group (a no-op on running processes; gone or foreign: ignored)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(os.getpgid(pid), signal.SIGCONT)


COLOUR_FORCING: Final[tuple[str, ...]] = ("CLICOLOR_FORCE", "FORCE_COLOR")
"""Variables that make a tool colour its text even into a pipe (a Jupyter kernel sets one, and a
controller it starts inherits it)."""


def plain_env() -> dict[str, str]:
    """The controller's environment without ``COLOUR_FORCING`` and with ``NO_COLOR=1``: a capture is
    plain text, never terminal escapes."""
    return {**{name: value for name, value in os.environ.items() if name not in COLOUR_FORCING}, "NO_COLOR": "1"}


async def run_bounded(argv: list[str], timeout_s: int) -> tuple[int, bytes, str]:
    """Run ``argv`` in its own process group, in ``plain_env()``; past ``timeout_s`` the group is
    killed and this raises ``ProfileError``. Returns (exit code, stdout, stderr text)."""
    process = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True, env=plain_env())
    try:
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout_s)
    except TimeoutError:
        await kill_group(process)
        raise ProfileError(f"{Path(argv[0]).name} {argv[1]} did not finish within {timeout_s} s: killed") from None
    except asyncio.CancelledError:
        await kill_group(process)
        raise
    return process.returncode or 0, stdout, stderr.decode(errors="replace")


async def kill_group(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the process group ``process`` leads (started with ``start_new_session``) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    await process.wait()


def _require(name: str) -> str:
    path = tool(name)
    if path is None:
        raise ProfileError(f"'{name}' is not installed: install it beside the controller (pip install {name})")
    return path


@contextlib.contextmanager
def _scratch(*suffixes: str) -> Iterator[tuple[str, ...]]:
    with tempfile.TemporaryDirectory(prefix="fray-profile-") as directory:
        paths = tuple(str(Path(directory) / f"capture{index}.{suffix}") for index, suffix in enumerate(suffixes))
        for path in paths:
            Path(path).touch()
        yield paths


def _last_line(text: str) -> str:
    """The profiler's reason: its ``Error: …`` line (py-spy follows it with a backtrace), else its
    last line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("Error:")]
    return errors[0] if errors else lines[-1] if lines else "no error output"


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
