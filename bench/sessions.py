"""Sessions: a warm session cell on ``--hosts`` hosts beside a cold job of the same cell, in one run,
on the embedded controller and on the genuine Iris twin; on the embedded controller also the time
from an interrupt to every host stopped, and a 100 MB push to every host. ipyparallel's ``%px``
on as many local engines is the field's peer; where ipyparallel is not installed its row is
``skipped``.

Run: ``python bench/sessions.py [--hosts 4] [--cells 30] [--no-twin]`` (``bench/run``'s default run
passes ``--no-twin``: the twin's cluster start does not fit its time; ``--full`` measures both). Goals: a warm cell ≤ 20 ms on the
embedded controller and within 1.5× of ipyparallel; ≥ 50× faster than the cold job on the twin;
an interrupt to every host stopped ≤ 0.5 s; a 100 MB push to every host ≤ 2 s; in a 2,000-file
git workspace, a one-line edit synced to every host (and reloaded there) ≤ 1 s, and the per-cell
sync check of the unchanged workspace ≤ 20 ms.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Final

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.actors import embedded, median_call_ms
from bench.results import Figure, record, skipped
from fray_jupyter.client.client import FrayClient
from fray_jupyter.controller import iris_local
from fray_jupyter.planning import plan
from fray_jupyter.resources.config import ResourceConfig
from fray_jupyter.resources.entrypoint import Entrypoint
from fray_jupyter.resources.job import JobRequest
from fray_jupyter.session.session import Session
from fray_jupyter.session.workspace import WorkspaceSource

BENCH: Final = "sessions"
CELL: Final = "x = sum(range(100))\nx"
SMALL: Final = ResourceConfig(cpu=0.5, ram="256m", disk="1g")
WARM_GOAL_MS: Final = 20.0
IPP_GOAL_RATIO: Final = 1.5
COLD_GOAL_RATIO: Final = 50.0
INTERRUPT_GOAL_S: Final = 0.5
PUSH_GOAL_S: Final = 2.0
SYNC_FILES: Final = 2000
SYNC_GOAL_S: Final = 1.0
CHECK_GOAL_MS: Final = 20.0


def cold_job_ms(client: FrayClient, hosts: int, runs: int) -> float:
    """The median time, in ms, of a fresh job of ``hosts`` tasks running ``CELL`` to its end."""
    def once() -> None:
        job = JobRequest(name=f"cold-{time.time_ns()}", entrypoint=Entrypoint.from_cell(CELL), resources=SMALL,
                         replicas=hosts)
        job_id = client.submit(plan(job, user="bench", existing_job_policy="unspecified"))
        client.wait(job_id)

    return median_call_ms(once, runs, warmup=1)


def ipyparallel_ms(hosts: int, cells: int) -> float | None:
    """``%px``'s median on ``hosts`` local engines, in ms; None without ipyparallel."""
    try:
        import ipyparallel  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    with ipyparallel.Cluster(n=hosts) as rc:
        view = rc[:]
        return median_call_ms(lambda: view.execute(CELL, block=True), cells, warmup=1)


def session_figures(client: FrayClient, where: str, hosts: int, cells: int, extras: Path | None) -> float:
    """A session's warm cell (and, with ``extras``, a scratch directory: interrupt, push and a
    workspace's sync); the warm cell's ms."""
    workspace = sync_workspace(extras / "workspace") if extras is not None else None
    session = Session.start(f"bench-{time.time_ns()}", SMALL, client=client, replicas=hosts, user="bench",
                            workspace=workspace).wait_ready()
    try:
        warm = median_call_ms(lambda: session.run(CELL), cells, warmup=1)
        if extras:
            interrupt_s(session, hosts)
            push_s(session, hosts)
            sync_figures(session, hosts, max(3, cells // 3))
        return warm
    finally:
        session.stop()


def interrupt_s(session: Session, hosts: int) -> None:
    done = threading.Event()

    def loop() -> None:
        session.run("while True: pass")
        done.set()

    threading.Thread(target=loop, daemon=True).start()
    while not all(status.running for status in session.status()):
        time.sleep(0.01)
    started = time.perf_counter()
    session.interrupt()
    done.wait()
    took = time.perf_counter() - started
    record(Figure(BENCH, f"interrupt to every host stopped, {hosts} hosts, embedded", f"{took:.3f} s",
                  f"≤ {INTERRUPT_GOAL_S:g} s", took <= INTERRUPT_GOAL_S))


def push_s(session: Session, hosts: int) -> None:
    try:
        import numpy
    except ImportError as error:
        skipped(BENCH, "100 MB push", f"≤ {PUSH_GOAL_S:g} s", f"numpy is not installed: {error}")
        return
    array = numpy.ones(100 * 1024 * 1024 // 8)
    started = time.perf_counter()
    session.push({"big": array})
    took = time.perf_counter() - started
    record(Figure(BENCH, f"100 MB push to {hosts} hosts, embedded", f"{took:.2f} s", f"≤ {PUSH_GOAL_S:g} s",
                  took <= PUSH_GOAL_S))


def sync_workspace(root: Path) -> WorkspaceSource:
    """A ``SYNC_FILES``-file git workspace under ``root``, bundled."""
    import subprocess

    for index in range(SYNC_FILES):
        path = root / f"pkg{index // 100}" / f"mod{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {index}\n" * 20)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    return WorkspaceSource.of(root)


def sync_figures(session: Session, hosts: int, runs: int) -> None:
    """A one-line edit in the session's ``SYNC_FILES``-file workspace synced to every host (and
    reloaded there), and the check of the unchanged workspace that ``--sync`` makes before each
    cell (medians of ``runs``)."""
    assert session.workspace is not None
    session.run("import pkg0.mod0")
    edited = session.workspace.source.root / "pkg0" / "mod0.py"
    edits = iter(range(10**6))

    def edit_and_sync() -> None:
        edited.write_text(f"VALUE = {next(edits)}\n")
        assert session.sync().reloaded == ("pkg0.mod0",)

    edit = median_call_ms(edit_and_sync, runs, warmup=1) / 1000
    check = median_call_ms(lambda: session.sync(), runs * 3, warmup=1)
    record(Figure(BENCH, f"one-line edit synced to {hosts} hosts, {SYNC_FILES}-file workspace, embedded",
                  f"{edit:.3f} s", f"≤ {SYNC_GOAL_S:g} s", edit <= SYNC_GOAL_S))
    record(Figure(BENCH, f"per-cell sync check, unchanged {SYNC_FILES}-file workspace", f"{check:.1f} ms",
                  f"≤ {CHECK_GOAL_MS:g} ms", check <= CHECK_GOAL_MS))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--hosts", type=int, default=4)
    parser.add_argument("--cells", type=int, default=30)
    parser.add_argument("--cold-runs", type=int, default=3)
    parser.add_argument("--no-twin", action="store_true", help="the embedded controller only")
    args = parser.parse_args()
    hosts = args.hosts
    ipp = ipyparallel_ms(hosts, args.cells)
    if ipp is None:
        skipped(BENCH, f"warm cell vs ipyparallel %px, {hosts} engines", f"≤ {IPP_GOAL_RATIO:g}×",
                "ipyparallel is not installed")
    else:
        record(Figure(BENCH, f"ipyparallel %px, {hosts} local engines", f"{ipp:.2f} ms"))
    with tempfile.TemporaryDirectory(prefix="fray-bench-sessions-") as raw:
        scratch = Path(raw)
        with embedded(scratch) as client:
            warm = session_figures(client, "embedded", hosts, args.cells, extras=scratch)
            cold = cold_job_ms(client, hosts, args.cold_runs)
            record(Figure(BENCH, f"warm session cell, {hosts} hosts, embedded", f"{warm:.2f} ms",
                          f"≤ {WARM_GOAL_MS:g} ms", warm <= WARM_GOAL_MS))
            record(Figure(BENCH, f"cold job of the same cell, {hosts} tasks, embedded",
                          f"{cold:.0f} ms ({cold / warm:.0f}× the warm cell)"))
            if ipp is not None:
                record(Figure(BENCH, f"warm cell vs ipyparallel, {hosts} hosts", f"{warm / ipp:.2f}×",
                              f"≤ {IPP_GOAL_RATIO:g}×", warm <= IPP_GOAL_RATIO * ipp))
        if args.no_twin:
            skipped(BENCH, f"cold job vs warm cell, {hosts} hosts, twin", f"≥ {COLD_GOAL_RATIO:g}×",
                    "--no-twin (bench/run --full measures it)")
            return
        with iris_local.iris_local_cluster(scratch / "twin") as url, FrayClient(url) as twin:
            warm = session_figures(twin, "twin", hosts, args.cells, extras=None)
            cold = cold_job_ms(twin, hosts, args.cold_runs)
            record(Figure(BENCH, f"warm session cell, {hosts} hosts, twin", f"{warm:.2f} ms"))
            record(Figure(BENCH, f"cold job vs warm cell, {hosts} hosts, twin", f"{cold / warm:.0f}× ({cold:.0f} ms)",
                          f"≥ {COLD_GOAL_RATIO:g}×", cold >= COLD_GOAL_RATIO * warm))


if __name__ == "__main__":
    main()
