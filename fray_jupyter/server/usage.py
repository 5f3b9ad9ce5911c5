"""REST handlers for how a job's tasks use what they asked for and what happened to them, under
``<base_url>/fray/jobs/<id>/`` (the rules of ``server.handlers`` hold: authenticated verbs, JSON
errors, one percent-encoded job id segment). They read through ``client.usage`` (Iris's stats
namespaces, so the embedded controller, the twin and a named cluster answer alike) and only shape.

* ``GET …/usage``: per task (``contract.TaskUsage``) its newest sample, peak memory, request, its
  samples for the sparklines (``spark_samples``: at most ``MAX_SPARK_SAMPLES``, oldest first), the over-request warning, the ready words of
  its numbers (the display vocabulary's sizes), when it last reported status text and last wrote a
  log line, and while it runs its newest sign of life; and the tree's totals (``tree_totals``).
* ``GET …/events``: the task timeline, newest first, at most ``MAX_TIMELINE`` entries
  (``client.timeline``: the ``iris.task_event`` rows joined with the state changes each task's
  attempts record), each marked ``kind`` "state" or "event".

Rules:

* The warning is ``TaskUsage.memory_warning`` (a peak over the memory request).
* A task's last output is the newest of the job's newest ``LAST_LINES`` log lines it wrote (a task
  quiet while its siblings chatter may have none there: its status text and start still count).
* Usage and events are extras: a controller whose stats cannot be read (no stats service, a query
  it refuses) answers them empty, with the one line saying why in ``note`` (usage) — never an
  error that hides the job view. A controller that cannot be reached, or refuses the caller, still is.
* A task's newest sign of life (``quiet_since_ms``, ``client.liveness``) is the newest of its last
  output, its status report and its current attempt's start; null when it is not running. The
  answer carries the server's threshold (``silence_after_ms``: ``$FRAY_SILENCE_AFTER``, default
  10 min); the sidebar says "no output for …" past it, or past its own ``silenceSeconds`` setting
  when the user set one.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Final, TypeVar

import tornado.web

from fray_jupyter.client import AuthenticationFailed, ControllerUnreachable, FrayError, LoginRequired
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.liveness import DEFAULT_SILENCE_S, quiet_since_ms, silence_after_ms
from fray_jupyter.client.timeline import STATE_SOURCE, timeline
from fray_jupyter.client.usage import job_usage, task_events, tree_totals
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import split_key, task_index, task_state_name
from fray_jupyter.iris.usage import MIB, Sample, TaskEvent, TaskUsage, Totals
from fray_jupyter.server import contract
from fray_jupyter.server.handlers import FrayHandler
from fray_jupyter.views.usage import totals_words
from fray_jupyter.vocabulary import byte_size, cores

T = TypeVar("T")
logger = logging.getLogger(__name__)

MAX_SPARK_SAMPLES: Final[int] = 600
"""Samples a task's sparklines get (10 minutes at the embedded controller's 1 s cadence; a longer
history is thinned to this many, evenly, the newest kept)."""
MAX_TIMELINE: Final[int] = 200
LAST_LINES: Final[int] = 200


def extra(read: Callable[[], T], empty: T, notes: list[str]) -> T:
    """``read()``; a controller failure other than "unreachable" or "refused the caller" is
    ``empty``, its one line added to ``notes`` (module rules)."""
    try:
        return read()
    except (ControllerUnreachable, AuthenticationFailed, LoginRequired):
        raise
    except FrayError as error:
        notes.append(str(error))
        return empty


def _mib(mib: int) -> str:
    return byte_size(mib * MIB)


def spark_samples(samples: Sequence[Sample], most: int = MAX_SPARK_SAMPLES) -> list[contract.UsageSample]:
    """The sparkline's points, oldest first: every sample, or over ``most`` every k-th one counted
    back from the newest (so the whole history is drawn, and the newest always)."""
    step = max(1, -(-len(samples) // most))
    kept = list(samples[::-1][::step])[::-1]
    return [contract.UsageSample(ts=s.ts_ms, cpu=s.cpu_millicores, mem=s.memory_mb) for s in kept]


def memory_text(usage: TaskUsage) -> str:
    """"300 MiB now · peak 310 MiB of 256 MiB requested" ("no sample yet" before the first)."""
    now = usage.now
    if now is None:
        return "no sample yet"
    asked = f"of {_mib(usage.requested_memory_mb)} requested" if usage.requested_memory_mb else "(none requested)"
    return f"{_mib(now.memory_mb)} now · peak {_mib(usage.peak_memory_mb)} {asked}"


def cpu_text(usage: TaskUsage) -> str:
    """"0.98 cores" (the newest sample's; "" before the first)."""
    now = usage.now
    return "" if now is None else cores(now.cpu_millicores)


def last_output(client: FrayClient, job_id: str) -> dict[str, int]:
    """Task id → the time of the newest of the job's newest ``LAST_LINES`` log lines it wrote."""
    newest: dict[str, int] = {}
    for entry in client.logs(job_id, tail=True, max_lines=LAST_LINES).entries:
        task_id, _ = split_key(entry.key)
        newest[task_id] = max(newest.get(task_id, 0), entry.timestamp.epoch_ms)
    return newest


def silence_after() -> int:
    """The server's silence threshold (``client.liveness``), ms; a bad ``$FRAY_SILENCE_AFTER`` is
    logged once per answer and read as the default."""
    try:
        return silence_after_ms()
    except ValueError as error:
        logger.warning("fray: %s; using %.0f s", error, DEFAULT_SILENCE_S)
        return int(DEFAULT_SILENCE_S * 1000)


def task_usage_json(task: job_pb2.TaskStatus, usage: TaskUsage, status_ms: int | None,
                    output_ms: int | None) -> contract.TaskUsage:
    """One task's ``contract.TaskUsage`` (module rules)."""
    now = usage.now
    quiet = quiet_since_ms(task, output_ms or 0, status_ms or 0)
    running = task.state == job_pb2.TASK_STATE_RUNNING
    return contract.TaskUsage(
        task_id=usage.task_id, index=task_index(usage.task_id), state=task_state_name(task.state),
        now_cpu_millicores=now.cpu_millicores if now else None, now_memory_mb=now.memory_mb if now else None,
        peak_memory_mb=usage.peak_memory_mb, requested_cpu_millicores=usage.requested_cpu_millicores,
        requested_memory_mb=usage.requested_memory_mb,
        samples=spark_samples(usage.samples),
        warning=usage.memory_warning(), memory_text=memory_text(usage), cpu_text=cpu_text(usage),
        requested_cpu_text=cores(usage.requested_cpu_millicores),
        status_ms=status_ms, last_output_ms=output_ms, quiet_since_ms=quiet if running and quiet else None)


def usage_json(client: FrayClient, job_id: str) -> contract.JobUsage:
    """``GET /fray/jobs/<id>/usage``'s answer (module docstring)."""
    job = client.status(job_id)
    tasks = {task.task_id: task for task in client.tasks(job_id)}
    notes: list[str] = []
    usage: dict[str, TaskUsage] = extra(lambda: job_usage(client, job), {}, notes)
    texts = client.status_texts(list(tasks), since_ms=job.submitted_at.epoch_ms)
    outputs: dict[str, int] = extra(lambda: last_output(client, job_id), {}, notes)
    rows = [task_usage_json(task, usage[task_id], texts[task_id].ts_ms or None if task_id in texts else None,
                            outputs.get(task_id)) for task_id, task in tasks.items() if task_id in usage]
    totals = extra(lambda: tree_totals(client, job_id), Totals(0.0, 0.0, 0, len(tasks)), notes)
    return contract.JobUsage(job_id=job_id, tasks=rows, totals=contract.UsageTotals(
        cpu_hours=totals.cpu_hours, wall_hours=totals.wall_hours, peak_memory_mb=totals.peak_memory_mb,
        tasks=totals.tasks, text=totals_words(totals)), note=f"usage unavailable: {notes[0]}" if notes else "",
        silence_after_ms=silence_after())


def entry_json(event: TaskEvent) -> contract.TimelineEntry:
    """One timeline entry: a state change (``client.timeline.STATE_SOURCE``) or a controller event."""
    return contract.TimelineEntry(kind="state" if event.source == STATE_SOURCE else "event", task_id=event.task_id,
                                  attempt_id=event.attempt_id, ts_ms=event.ts_ms, type=event.type,
                                  reason=event.reason, message=event.message, source=event.source)


def events_json(client: FrayClient, job_id: str) -> contract.JobEvents:
    """``GET /fray/jobs/<id>/events``'s answer (module docstring)."""
    client.status(job_id)  # an unknown job is 404, not an empty timeline
    tasks = client.tasks(job_id)
    found: list[TaskEvent] = extra(lambda: task_events(client, [task.task_id for task in tasks]), [], [])
    return contract.JobEvents(events=[entry_json(event) for event in timeline(tasks, found, MAX_TIMELINE)])


class UsageHandler(FrayHandler):
    """``GET /fray/jobs/<id>/usage`` (module docstring)."""

    @tornado.web.authenticated
    async def get(self, job_id: str) -> None:
        self.reply(await self.call(lambda client: usage_json(client, job_id)))


class TimelineHandler(FrayHandler):
    """``GET /fray/jobs/<id>/events`` (module docstring)."""

    @tornado.web.authenticated
    async def get(self, job_id: str) -> None:
        self.reply(await self.call(lambda client: events_json(client, job_id)))

