"""``ExecInContainer`` on the embedded controller: a command run inside a running task.

Rules:

* The command is an argv, run as is (never through a shell), in the task attempt's working
  directory with the attempt's own environment (Iris's local process runtime runs it beside the
  task without either; on a cluster ``docker exec`` / ``kubectl exec`` give both).
* Timeout (Iris's): 0 means ``DEFAULT_TIMEOUT_S``, a negative value no limit. Past it the command's
  whole process group (it and everything it started) is killed, and the answer says so in
  ``error`` with the output read so far and exit code -9.
* Output is bounded: at most ``MAX_OUTPUT_BYTES`` of each stream is kept (the rest is read and
  dropped, so a flood cannot stall the command), and a cut stream ends with a line saying how
  much was left out.
* The command ends with its task: once ``alive()`` turns false (the attempt ended, was stopped, or
  the controller is closing; looked at every ``ALIVE_CHECK_S``), its process group is killed and the
  answer says so, whatever the timeout, so no exec'd process outlives the task it ran in.
* A command that cannot start (no such program, not executable) answers ``error`` naming it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

from fray_jupyter.controller.runtime.profiling import kill_group
from fray_jupyter.iris.proto import controller_pb2

C = controller_pb2.Controller
DEFAULT_TIMEOUT_S: Final[int] = 60
MAX_OUTPUT_BYTES: Final[int] = 1 << 20
CHUNK_BYTES: Final[int] = 64 << 10
KILLED_EXIT_CODE: Final[int] = -9
ALIVE_CHECK_S: Final[float] = 0.5


def timeout_of(requested: int) -> float | None:
    """Iris's timeout rule: 0 is ``DEFAULT_TIMEOUT_S``, negative is no limit (None)."""
    if requested < 0:
        return None
    return float(requested or DEFAULT_TIMEOUT_S)


async def run_in_task(argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_seconds: int,
                      alive: Callable[[], bool] = lambda: True) -> C.ExecInContainerResponse:
    """Run ``argv`` in ``cwd`` with ``env`` while ``alive()`` (the module docstring's rules)."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=dict(env), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, start_new_session=True)
    except OSError as error:
        return C.ExecInContainerResponse(error=f"cannot run {argv[0]!r}: {error.strerror or error}")
    assert process.stdout is not None and process.stderr is not None
    out, err = _Bounded(), _Bounded()
    readers = asyncio.gather(out.drain(process.stdout), err.drain(process.stderr), process.wait())
    limit = timeout_of(timeout_seconds)
    deadline = None if limit is None else asyncio.get_running_loop().time() + limit
    try:
        while not readers.done():
            left = None if deadline is None else deadline - asyncio.get_running_loop().time()
            if left is not None and left <= 0:
                why = f"Command timed out after {limit:g} s: it and every process it started were killed"
            elif not alive():
                why = "The task ended while the command ran: it and every process it started were killed"
            else:
                await asyncio.wait({readers}, timeout=ALIVE_CHECK_S if left is None else min(left, ALIVE_CHECK_S))
                continue
            await kill_group(process)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(readers, 5)  # a process that left the group may hold the pipes
            readers.cancel()
            return C.ExecInContainerResponse(exit_code=KILLED_EXIT_CODE, stdout=out.text(), stderr=err.text(),
                                             error=why)
    except asyncio.CancelledError:
        await kill_group(process)
        readers.cancel()
        raise
    return C.ExecInContainerResponse(exit_code=process.returncode or 0, stdout=out.text(), stderr=err.text())


class _Bounded:
    """One output stream: the first ``MAX_OUTPUT_BYTES`` kept, the rest counted."""

    def __init__(self) -> None:
        self.kept = bytearray()
        self.dropped = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(CHUNK_BYTES):
            room = MAX_OUTPUT_BYTES - len(self.kept)
            self.kept += chunk[:room]
            self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        text = self.kept.decode(errors="replace")
        if self.dropped:
            text += f"\n[output cut: {self.dropped} more bytes not shown (at most {MAX_OUTPUT_BYTES} are kept)]\n"
        return text
