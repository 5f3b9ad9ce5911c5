"""What Iris's stats namespaces say about a task, as data: ``iris.task`` samples (``Sample``), a
task's samples against its job's request (``TaskUsage``: now, peak, CPU time, the warning of a peak
over the request), ``iris.task_event`` rows (``TaskEvent``) and a job tree's totals (``Totals``).
``client.usage`` reads them from a controller; the views draw them.

Rules:

* "Now" is a task's newest sample; "peak" the most ``memory_peak_mb`` any of its samples says (every
  attempt's); "requested" its job's ``resources`` per task.
* CPU time is the integral of ``cpu_millicores`` over each attempt's samples: a sample's rate is the
  one measured since the sample before it (Iris's workers and the embedded sampler both report the
  rate over the last interval), so it counts from that sample back to the one before.
* A peak over a memory request is warned of (``TaskUsage.memory_warning``): a cluster's container is
  killed at its request, where the embedded controller lets it run. Sizes are the display
  vocabulary's (``vocabulary.byte_size``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from fray_jupyter.vocabulary import byte_size

MIB: Final[int] = 1024 * 1024


@dataclass(frozen=True)
class Sample:
    """One ``iris.task`` row: when (epoch ms), which attempt, and what it used."""

    ts_ms: int
    attempt_id: int
    cpu_millicores: int
    memory_mb: int
    memory_peak_mb: int
    disk_mb: int


@dataclass(frozen=True)
class TaskUsage:
    """A task's samples (oldest first) and what its job requested per task."""

    task_id: str
    samples: tuple[Sample, ...]
    requested_cpu_millicores: int
    requested_memory_mb: int

    @property
    def now(self) -> Sample | None:
        """The newest sample, None before the first."""
        return self.samples[-1] if self.samples else None

    @property
    def peak_memory_mb(self) -> int:
        """The most memory any attempt of the task held (MiB)."""
        return max((sample.memory_peak_mb for sample in self.samples), default=0)

    @property
    def cpu_seconds(self) -> float:
        """CPU seconds used, by the module rule."""
        total = 0.0
        for before, after in zip(self.samples, self.samples[1:], strict=False):
            if before.attempt_id == after.attempt_id:
                total += after.cpu_millicores / 1000 * max(0, after.ts_ms - before.ts_ms) / 1000
        return total

    @property
    def over_request(self) -> bool:
        """Whether the peak passed a memory request (none: never)."""
        return 0 < self.requested_memory_mb < self.peak_memory_mb

    def memory_warning(self) -> str:
        """"peak 312 MiB is over the 256 MiB requested: a cluster would OOM-kill this task at 256 MiB",
        or "" when the peak is within the request (or none was made)."""
        if not self.over_request:
            return ""
        asked = byte_size(self.requested_memory_mb * MIB)
        return (f"peak {byte_size(self.peak_memory_mb * MIB)} is over the {asked} requested: "
                f"a cluster would OOM-kill this task at {asked}")

    def memory_words(self) -> str:
        """"peak 1.9 GiB of 2 GiB requested" (or "… (no memory requested)")."""
        asked = f"of {byte_size(self.requested_memory_mb * MIB)} requested" if self.requested_memory_mb else "(no memory requested)"
        return f"{byte_size(self.peak_memory_mb * MIB)} {asked}"


@dataclass(frozen=True)
class TaskEvent:
    """One ``iris.task_event`` row (the columns ``iris task events`` prints)."""

    task_id: str
    attempt_id: int
    ts_ms: int
    type: str
    reason: str
    message: str
    source: str
    count: int


@dataclass(frozen=True)
class Totals:
    """What a job tree used: CPU hours, task wall hours, the largest task peak (MiB), tasks counted."""

    cpu_hours: float
    wall_hours: float
    peak_memory_mb: int
    tasks: int

    def plus(self, other: Totals) -> Totals:
        """Both trees' totals: hours and tasks added, the larger peak."""
        return Totals(self.cpu_hours + other.cpu_hours, self.wall_hours + other.wall_hours,
                      max(self.peak_memory_mb, other.peak_memory_mb), self.tasks + other.tasks)
