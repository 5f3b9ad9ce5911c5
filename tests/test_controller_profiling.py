"""``controller.runtime.profiling``: py-spy's captures of a real Python process, the stubs (in the requested
format, saying why) when a capture cannot be made, and a profiler that overruns being killed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.controller.runtime import profiling
from fray_jupyter.iris.proto import job_pb2
from tests.controller_harness import pid_alive
from tests.waiting import until

J = job_pb2


@pytest.fixture
def busy() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen([sys.executable, "-c", "def hot_spot():\n    while True: sum(range(999))\nhot_spot()"],
                               start_new_session=True)
    yield process
    process.kill()
    process.wait()


@pytest.mark.skipif(profiling.tool("py-spy") is None, reason="py-spy is not installed")
def test_a_cpu_profile_and_a_dump_name_the_hot_function(busy: subprocess.Popen[bytes]) -> None:
    until(lambda: b"hot_spot" in asyncio.run(profiling.capture(busy.pid, J.ProfileType(threads=J.ThreadsProfile()), 1)),
          "a thread dump shows hot_spot (the interpreter may still be starting)")
    raw = asyncio.run(profiling.capture(busy.pid, J.ProfileType(cpu=J.CpuProfile(format=J.CpuProfile.RAW)), 1))
    assert b"hot_spot" in raw
    state = Path(f"/proc/{busy.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    assert state != "T"  # SIGCONT after py-spy


@pytest.mark.skipif(profiling.tool("py-spy") is None, reason="py-spy is not installed")
def test_a_dump_is_plain_text_under_a_kernel_that_forces_colour(busy: subprocess.Popen[bytes],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLICOLOR_FORCE", "1")  # as a Jupyter kernel that started the controller sets it

    def shown() -> bytes | None:
        found = asyncio.run(profiling.capture(busy.pid, J.ProfileType(threads=J.ThreadsProfile()), 1))
        return found if b"hot_spot" in found else None

    dump = until(shown, "a thread dump shows hot_spot")
    assert b"\x1b[" not in dump, dump


@pytest.mark.parametrize(("profile_type", "check"), [
    (J.ProfileType(cpu=J.CpuProfile()), lambda data: data.startswith(b"<svg") and b"no CPU profile: why" in data),
    (J.ProfileType(cpu=J.CpuProfile(format=J.CpuProfile.SPEEDSCOPE)), lambda data: json.loads(data)["profiles"] == []),
    (J.ProfileType(cpu=J.CpuProfile(format=J.CpuProfile.RAW)), lambda data: data == b"no CPU profile: why\n"),
    (J.ProfileType(memory=J.MemoryProfile()), lambda data: b"<p>no memory profile: why</p>" in data),
    (J.ProfileType(memory=J.MemoryProfile(format=J.MemoryProfile.STATS)),
     lambda data: json.loads(data) == {"error": "no memory profile: why"}),
    (J.ProfileType(memory=J.MemoryProfile(format=J.MemoryProfile.RAW)), lambda data: data == b""),
])
def test_a_stub_is_in_the_requested_format_and_says_why(profile_type: J.ProfileType, check: object) -> None:
    which = profile_type.WhichOneof("profiler")
    data = (profiling.cpu_stub(profile_type.cpu, "why") if which == "cpu"
            else profiling.memory_stub(profile_type.memory, "why"))
    assert check(data)  # type: ignore[operator]


def test_without_the_profiler_cpu_answers_a_stub_and_threads_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profiling, "tool", lambda name: None)
    stub = asyncio.run(profiling.capture(1, J.ProfileType(cpu=J.CpuProfile(format=J.CpuProfile.RAW)), 1))
    assert stub == b"no CPU profile: 'py-spy' is not installed: install it beside the controller (pip install py-spy)\n"
    with pytest.raises(profiling.ProfileError, match="'py-spy' is not installed"):
        asyncio.run(profiling.capture(1, J.ProfileType(threads=J.ThreadsProfile()), 1))
    with pytest.raises(profiling.ProfileError, match="'memray' is not installed"):
        asyncio.run(profiling.capture_self(J.ProfileType(memory=J.MemoryProfile()), 1))


def test_an_overrunning_profiler_is_killed_with_its_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child"
    with pytest.raises(profiling.ProfileError, match="did not finish within 1 s: killed"):
        asyncio.run(profiling.run_bounded(["sh", "-c", f"sleep 600 & echo $! > {pid_file}; wait"], 1))
    child = int(pid_file.read_text())
    until(lambda: not pid_alive(child), "the profiler's child ends")


@pytest.mark.skipif(profiling.tool("py-spy") is None, reason="py-spy is not installed")
def test_a_dump_of_a_shell_leader_dumps_its_python_processes() -> None:
    script = "import time\ndef under_a_shell():\n    while True: time.sleep(1)\nunder_a_shell()"
    leader = subprocess.Popen(["sh", "-c", f"{sys.executable} -c '{script}'; true"], start_new_session=True)
    try:
        def dump() -> bytes:
            try:
                return asyncio.run(profiling.capture(leader.pid, J.ProfileType(threads=J.ThreadsProfile()), 1))
            except profiling.ProfileError:
                return b""

        until(lambda: b"under_a_shell" in dump(), "a dump of the shell leader shows its Python child")
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
