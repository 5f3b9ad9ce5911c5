"""Fray actors: a call's round trip on loopback through ``fray_client()`` on the embedded controller
and on the genuine Iris twin, beside Fray's ``LocalClient`` (in-process actors) in the same run;
and a Zephyr pipeline of ``--records`` records (mapped, filtered, written by several workers) under
``fray_client()`` on the embedded controller beside Marin's own ``FrayIrisClient`` on the twin (the
peer with the same process model), beside ``LocalClient``, beside the same with each shard run
inline in its worker (``LocalClient``'s runner), and beside Zephyr's own floor off ``LocalClient``.

Run: ``python bench/actors.py [--calls N] [--records N]``. Goals: a call ≤ 2 ms on the embedded
controller (median of ``--calls`` blocking calls, after a warm-up); the Zephyr pipeline no slower on
the embedded controller than on the twin. A peer that cannot run here (marin-fray, marin-zephyr or
marin-iris not installed) gets a ``skipped`` row saying why.

Why the Zephyr goal is the twin and not ``LocalClient``: off ``LocalClient``, Zephyr runs its
coordinator and then its workers as actor jobs and every shard in a fresh ``python -m
zephyr.shard_subprocess``, each importing Zephyr (its own choice, for isolation; see
``zephyr.context``). Those imports happen one wave after another, so no backend with Iris's process
model can go below their sum: the floor row measures it in the same run, and it alone is several
times ``LocalClient``'s whole pipeline, where the workers are threads and the shards run inline.
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.results import Figure, record, skipped
from fray_jupyter.client.client import FrayClient
from fray_jupyter.controller import iris_local
from fray_jupyter.fray_protocol import FrayProtocolClient
from tests.controller_harness import start_controller, stop_quietly

BENCH: Final[str] = "actors"
CALL_GOAL_MS: Final[float] = 2.0
ZEPHYR_GOAL_VS_TWIN: Final[float] = 1.0
ZEPHYR_GOAL: Final[str] = f"≤ {ZEPHYR_GOAL_VS_TWIN:g}×"
SHARDS: Final[int] = 8
"""The pipeline's shards (``from_list`` alone makes one per record; a distributed client runs each
shard in a subprocess of its worker, Zephyr's own choice off ``LocalClient``)."""
WORKERS: Final[int] = 2
IMPORT_RUNS: Final[int] = 3
WARMUP: Final[int] = 20


class Echo:
    """The benchmarked actor: returns what it is given."""

    def echo(self, value: int) -> int:
        return value


def median_call_ms(call: Callable[[], Any], calls: int, warmup: int = WARMUP) -> float:
    """The median of ``calls`` timed calls, in ms, after ``warmup`` untimed ones."""
    for _ in range(warmup):
        call()
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def group_call_ms(client: FrayClient, calls: int) -> float:
    """Median round trip of a call to a one-member group launched on ``client``'s controller."""
    from fray.types import ActorConfig, ResourceConfig

    fray = FrayProtocolClient(client, user="bench")
    group = fray.create_actor_group(Echo, name=f"echo-{time.time_ns()}", count=1,
                                    resources=ResourceConfig(cpu=0.5, ram="256m", disk="1g"),
                                    actor_config=ActorConfig(max_concurrency=1))
    try:
        (handle,) = group.wait_ready(timeout=300)
        return median_call_ms(lambda: handle.echo(1), calls)
    finally:
        group.shutdown()


def local_call_ms(calls: int) -> float:
    """Median round trip of a call on Fray's ``LocalClient`` (``.remote().result()``, its only path)."""
    from fray.local_backend import LocalClient

    local = LocalClient()
    handle = local.create_actor(Echo, name=f"echo-{time.time_ns()}")
    return median_call_ms(lambda: handle.echo.remote(1).result(), calls)


@contextmanager
def embedded(scratch: Path) -> Iterator[FrayClient]:
    controller = start_controller(scratch / "embedded", "--slots", "16", "--pass-env", "PYTHONPATH")
    try:
        with FrayClient(controller.info.url, controller.info.token) as client:
            yield client
    finally:
        stop_quietly(controller)


def zephyr_pipeline(records: int, out: Path, inline: bool = False) -> int:
    """Map, filter and write ``records`` numbers with Zephyr on ``current_client()`` (``inline``: each
    shard in its worker's process, as Zephyr runs them on ``LocalClient``); the rows written."""
    from zephyr.context import ZephyrContext
    from zephyr.dataset import Dataset
    from zephyr.runners import InlineRunner

    pipeline = (Dataset.from_list(list(range(records))).reshard(SHARDS).map(lambda n: {"n": n, "square": n * n})
                .filter(lambda row: row["n"] % 3 != 0).write_jsonl(str(out / "part-{shard:05d}.jsonl")))
    with ZephyrContext(max_workers=WORKERS, chunk_storage_prefix=str(out / "chunks"),
                       stage_runner_factory=InlineRunner if inline else None) as context:
        context.execute(pipeline)
    return sum(len(path.read_text().splitlines()) for path in out.glob("part-*.jsonl"))


def zephyr_seconds(records: int, scratch: Path, client: Any, inline: bool = False) -> float:
    from fray.current_client import set_current_client

    out = scratch / f"zephyr-{time.time_ns()}"
    out.mkdir()
    started = time.perf_counter()
    with set_current_client(client):
        written = zephyr_pipeline(records, out, inline)
    elapsed = time.perf_counter() - started
    expected = sum(1 for n in range(records) if n % 3 != 0)
    if written != expected:
        raise RuntimeError(f"the Zephyr pipeline wrote {written} rows, not {expected}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    try:
        import fray.local_backend  # noqa: F401
    except ImportError as error:
        record(skipped(BENCH, "actor call round trip", f"≤ {CALL_GOAL_MS:g} ms", f"marin-fray is not installed: {error}"))
        return
    with tempfile.TemporaryDirectory(prefix="fray-bench-actors-") as raw:
        scratch = Path(raw)
        local_ms = local_call_ms(args.calls)
        record(Figure(BENCH, "call round trip, Fray LocalClient (in-process)", f"{local_ms:.3f} ms"))
        with embedded(scratch) as client:
            ms = group_call_ms(client, args.calls)
            record(Figure(BENCH, "call round trip, embedded controller", f"{ms:.3f} ms ({ms / local_ms:.1f}× LocalClient)",
                          f"≤ {CALL_GOAL_MS:g} ms", ms <= CALL_GOAL_MS))
            embedded_s = zephyr(args.records, scratch, client)
        with iris_local.iris_local_cluster(scratch / "twin") as url, FrayClient(url) as twin:
            ms = group_call_ms(twin, args.calls)
            record(Figure(BENCH, "call round trip, Iris twin (fray_client)", f"{ms:.3f} ms ({ms / local_ms:.1f}× LocalClient)"))
            if embedded_s is not None:
                zephyr_on_twin(args.records, scratch, url, embedded_s)


def zephyr(records: int, scratch: Path, client: FrayClient) -> float | None:
    """Zephyr on ``LocalClient``, Zephyr's floor off it, and the pipeline on the embedded controller
    (``client``), with Zephyr's default runner and with shards inline; the default run's seconds
    (None: Zephyr cannot run here, said as a skipped figure). The driver imports Zephyr before any
    run is timed, as a notebook has by its second cell."""
    name = zephyr_goal_name(records)
    try:
        import zephyr.context
        import zephyr.dataset
        import zephyr.runners  # noqa: F401
    except ImportError as error:
        record(skipped(BENCH, name, ZEPHYR_GOAL, f"marin-zephyr is not installed: {error}"))
        return None
    from fray.local_backend import LocalClient

    local = zephyr_seconds(records, scratch, LocalClient())
    floor = zephyr_floor_seconds()
    ours = zephyr_seconds(records, scratch, FrayProtocolClient(client, user="bench"))
    inline = zephyr_seconds(records, scratch, FrayProtocolClient(client, user="bench"), inline=True)
    record(Figure(BENCH, f"Zephyr pipeline of {records:,} records, LocalClient", f"{local:.2f} s"))
    record(Figure(BENCH, f"Zephyr's floor off LocalClient: {zephyr_waves()} waves of processes importing Zephyr",
                  f"{floor:.2f} s ({floor / local:.1f}× LocalClient)"))
    record(Figure(BENCH, f"Zephyr pipeline of {records:,} records, embedded controller",
                  f"{ours:.2f} s ({ours / local:.1f}× LocalClient, {ours / floor:.2f}× the floor)"))
    record(Figure(BENCH, "the same, shards inline in the workers, embedded controller",
                  f"{inline:.2f} s ({inline / local:.1f}× LocalClient)"))
    return ours


def zephyr_goal_name(records: int) -> str:
    """The goal's figure: the embedded controller's Zephyr time over the twin's."""
    return f"Zephyr pipeline of {records:,} records, embedded controller vs Marin's client on the Iris twin"


def zephyr_waves() -> int:
    """Process starts that follow one another off ``LocalClient``: the coordinator's, its workers'
    (side by side), then one per shard a worker runs in turn."""
    return 2 + math.ceil(SHARDS / WORKERS)


def zephyr_floor_seconds() -> float:
    """Zephyr's floor off ``LocalClient``: ``zephyr_waves()`` times the median wall time of a fresh
    ``python -m zephyr.shard_subprocess`` (it imports what a shard needs, then, given no task,
    leaves at once)."""
    command = [sys.executable, "-u", "-m", "zephyr.shard_subprocess"]
    fresh_ms = median_call_ms(lambda: subprocess.run(command, capture_output=True, check=False), IMPORT_RUNS, warmup=0)
    return zephyr_waves() * fresh_ms / 1000


def zephyr_on_twin(records: int, scratch: Path, url: str, embedded_s: float) -> None:
    """The same pipeline through Marin's own ``FrayIrisClient`` on the genuine Iris twin (a job per
    actor group, a subprocess per shard), and the goal: the embedded controller no slower."""
    name = zephyr_goal_name(records)
    try:
        from fray.iris_backend import FrayIrisClient
    except ImportError as error:
        record(skipped(BENCH, name, ZEPHYR_GOAL, f"marin-fray's Iris backend cannot load: {error}"))
        return
    twin = zephyr_seconds(records, scratch, FrayIrisClient(url))
    record(Figure(BENCH, f"Zephyr pipeline of {records:,} records, Marin's client on the Iris twin", f"{twin:.2f} s"))
    record(Figure(BENCH, name, f"{embedded_s / twin:.2f}×", ZEPHYR_GOAL, embedded_s <= ZEPHYR_GOAL_VS_TWIN * twin))


if __name__ == "__main__":
    main()
