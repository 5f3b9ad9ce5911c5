"""The sampler (``controller.stats.sampler``) over real process trees: a task's whole tree is measured, its
peak kept, and nothing a task does — 500 processes, exiting mid-pass, churning processes — breaks a
pass."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fray_jupyter.controller.runtime import proctree
from fray_jupyter.controller.stats.sampler import Sampler, Target, Usage, measure, tree_size_mb
from fray_jupyter.controller.stats.stats import Stats
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris import arrow_ipc

FORKER = """
import os, sys, time
children = []
for _ in range(500):
    pid = os.fork()
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    children.append(pid)
print("forked", flush=True)
time.sleep(120)
"""
HOLDER = """
import sys, time
block = bytearray(200 * 1024 * 1024)
for i in range(0, len(block), 4096):
    block[i] = 1
print("held", flush=True)
time.sleep(120)
"""


@pytest.fixture
def stats(tmp_path: Path) -> Iterator[Stats]:
    store = Store(tmp_path / "controller.sqlite3")
    try:
        yield Stats(store)
    finally:
        store.close()


def _start(code: str) -> subprocess.Popen[str]:
    """A task-like process leading its own session, started once it printed its first line."""
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert process.stdout is not None and process.stdout.readline()
    return process


def _end(process: subprocess.Popen[Any]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _task_rows(stats: Stats) -> list[dict[str, object]]:
    return arrow_ipc.rows(arrow_ipc.read(stats.query('SELECT * FROM "iris.task" ORDER BY ts')[0]))


def test_a_tree_of_500_processes_is_measured_whole(stats: Stats, tmp_path: Path) -> None:
    process = _start(FORKER)
    try:
        sampler = Sampler(lambda: [Target("uid", "/u/fork", 0, 0, process.pid, tmp_path)], stats)
        assert sampler.sample_once() == 1
        usage = sampler.usage["uid"]
        assert usage.processes == 501
        (row,) = _task_rows(stats)
        assert row["task_id"] == "/u/fork/0" and row["worker_id"] == "fray-local" and row["accelerator_util_pct"] is None
        assert row["memory_mb"] == usage.memory_mb > 0
    finally:
        _end(process)


def test_memory_held_by_a_task_is_its_memory_and_its_peak_stays(stats: Stats, tmp_path: Path) -> None:
    process = _start(HOLDER)
    try:
        sampler = Sampler(lambda: [Target("uid", "/u/hold", 0, 0, process.pid, tmp_path)], stats)
        sampler.sample_once()
        assert 200 <= sampler.usage["uid"].memory_mb <= 240
    finally:
        _end(process)
    peak = sampler.usage["uid"].memory_peak_mb
    usage = sampler.usage["uid"]
    measure(usage, [], time.monotonic())
    assert usage.memory_mb == 0 and usage.memory_peak_mb == peak


def test_a_task_that_exits_mid_pass_or_churns_processes_never_breaks_a_pass(stats: Stats, tmp_path: Path) -> None:
    churn = subprocess.Popen(["sh", "-c", "while :; do /bin/true; done"], start_new_session=True)
    gone = subprocess.Popen(["true"], start_new_session=True)
    gone.wait()
    try:
        targets = [Target("churn", "/u/churn", 0, 0, churn.pid, tmp_path),
                   Target("gone", "/u/gone", 0, 0, gone.pid, tmp_path),
                   Target("unstarted", "/u/none", 0, 0, None, tmp_path)]
        sampler = Sampler(lambda: targets, stats)
        for _ in range(30):
            assert sampler.sample_once() == 3
        assert set(sampler.usage) == {"churn"}  # the exited and the unstarted ones get no row
        assert {row["task_id"] for row in _task_rows(stats)} == {"/u/churn/0"}
        assert len(_task_rows(stats)) == 30
    finally:
        _end(churn)
    sampler.targets = list
    assert sampler.sample_once() == 0 and not sampler.usage


def test_cpu_is_the_tree_s_cpu_seconds_per_wall_second() -> None:
    usage = Usage()
    first = [proctree.Proc(10, 1, 10, 5.0, 2.0, 4 * 2**20), proctree.Proc(11, 10, 10, 6.0, 1.0, 2**20)]
    measure(usage, first, 100.0)
    assert (usage.cpu_millicores, usage.memory_mb, usage.processes) == (0, 5, 2)  # the first pass says 0, as Iris's
    later = [proctree.Proc(10, 1, 10, 5.0, 2.5, 4 * 2**20), proctree.Proc(12, 10, 10, 101.0, 0.25, 2**20)]
    measure(usage, later, 101.0)  # 11 exited; 12 is new (all its CPU time counts)
    assert usage.cpu_millicores == 750


def test_the_work_dir_size_reads_files_not_links(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data").write_bytes(b"x" * 3 * 2**20)
    (tmp_path / "link").symlink_to("/usr")
    assert tree_size_mb(tmp_path) == 3
    assert tree_size_mb(tmp_path / "missing") == 0
