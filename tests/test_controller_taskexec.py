"""``controller.runtime.taskexec``: a command run in a task's directory and environment, with Iris's timeout
rule, bounded output and the whole process group killed at the timeout (real subprocesses)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from fray_jupyter.controller.runtime import taskexec
from tests.controller_harness import pid_alive
from tests.waiting import until


def run(argv: list[str], cwd: Path, timeout: int = 0, env: dict[str, str] | None = None) -> object:
    return asyncio.run(taskexec.run_in_task(argv, cwd, env or {"PATH": os.environ["PATH"]}, timeout))


@pytest.mark.parametrize(("requested", "limit"), [(0, 60.0), (5, 5.0), (-1, None), (-60, None)])
def test_irises_timeout_rule(requested: int, limit: float | None) -> None:
    assert taskexec.timeout_of(requested) == limit


def test_the_command_runs_in_the_directory_with_only_the_given_environment(tmp_path: Path) -> None:
    answer = run(["sh", "-c", 'pwd; echo "${ONLY:-}" "${HOME:-unset}"'], tmp_path,
                 env={"PATH": os.environ["PATH"], "ONLY": "given"})
    assert answer.stdout == f"{tmp_path}\ngiven unset\n" and answer.exit_code == 0  # type: ignore[attr-defined]


def test_output_past_the_bound_is_cut_with_a_word(tmp_path: Path) -> None:
    size = taskexec.MAX_OUTPUT_BYTES + 12345
    answer = run(["python", "-c", f"import sys; sys.stderr.write('e' * {size}); print('done')"], tmp_path)
    assert answer.stdout == "done\n"  # type: ignore[attr-defined]
    kept, _, note = answer.stderr.partition("\n[output cut: ")  # type: ignore[attr-defined]
    assert kept == "e" * taskexec.MAX_OUTPUT_BYTES and note.startswith("12345 more bytes not shown")


def test_a_timeout_kills_the_whole_group_and_keeps_the_output_so_far(tmp_path: Path) -> None:
    pid_file = tmp_path / "child"
    answer = run(["sh", "-c", f"echo early; sleep 600 & echo $! > {pid_file}; wait"], tmp_path, timeout=1)
    assert answer.exit_code == taskexec.KILLED_EXIT_CODE and answer.stdout == "early\n"  # type: ignore[attr-defined]
    assert "timed out after 1 s" in answer.error  # type: ignore[attr-defined]
    child = int(pid_file.read_text())
    until(lambda: not pid_alive(child), "the killed command's child ends")


def test_a_program_that_cannot_start_is_named(tmp_path: Path) -> None:
    answer = run(["/no/such/binary", "x"], tmp_path)
    assert answer.error == "cannot run '/no/such/binary': No such file or directory"  # type: ignore[attr-defined]


def test_a_command_without_a_timeout_ends_with_its_task(tmp_path: Path) -> None:
    ended = tmp_path / "task-ended"

    async def scenario() -> object:
        running = asyncio.ensure_future(taskexec.run_in_task(
            ["sh", "-c", f"echo started; sleep 600 & echo $! > {tmp_path / 'child'}; wait"], tmp_path,
            {"PATH": os.environ["PATH"]}, -1, alive=lambda: not ended.exists()))
        while not (tmp_path / "child").exists():
            await asyncio.sleep(0.02)
        ended.touch()  # the task ends
        return await running

    answer = asyncio.run(scenario())
    assert answer.exit_code == taskexec.KILLED_EXIT_CODE and answer.stdout == "started\n"  # type: ignore[attr-defined]
    assert answer.error.startswith("The task ended while the command ran")  # type: ignore[attr-defined]
    child = int((tmp_path / "child").read_text())
    until(lambda: not pid_alive(child), "the killed command's child ends")
