"""``JobRequest``: a whole job as Fray describes it, and Fray's small job-state vocabulary."""

from __future__ import annotations

import math
from datetime import timedelta
from enum import Enum
from typing import Any, ClassVar, Final

from pydantic import Field, field_validator, model_validator

from fray_jupyter.resources.config import MAX_REPLICAS, ResourceConfig
from fray_jupyter.resources.entrypoint import Entrypoint
from fray_jupyter.resources.environment import EnvironmentConfig
from fray_jupyter.resources.model import FrayModel
from fray_jupyter.resources.suggest import unknown_choice
from fray_jupyter.resources.tables import PRIORITY_BANDS

MAX_NAME_LENGTH: Final[int] = 256
MAX_COUNT: Final[int] = 2**31 - 1  # retry counts are int32 on the wire
MAX_TIMEOUT_DAYS: Final[int] = timedelta.max.days


def check_job_name(name: str) -> str:
    """A job name is one path component of the Iris job id ``/<user>/<name>``: non-empty, at most
    256 characters, no whitespace (Fray), no '/' (Iris), not only digits (that reads as a task index)."""
    if not name:
        raise ValueError("job name must not be empty")
    if any(c.isspace() for c in name):
        raise ValueError(f"Job name must not contain spaces, got {name!r}")
    if "/" in name:
        raise ValueError(f"job name {name!r} must not contain '/' (Iris builds the id /<user>/<name>)")
    if name.isdigit():
        raise ValueError(f"job name {name!r} must not be only digits (Iris reads that as a task index)")
    if len(name) > MAX_NAME_LENGTH or not name.isprintable():
        raise ValueError(f"job name {name!r} must be printable and at most {MAX_NAME_LENGTH} characters")
    return name


class JobRequest(FrayModel):
    """Everything needed to submit a job. ``replicas=None`` takes ``resources.replicas`` (what
    ``with_tpu(slice_count=...)`` set); an explicit value wins. ``priority`` is an Iris band: 0
    (controller default), 1 production, 2 interactive, 3 batch, 4 system, or the band's name."""

    _positional: ClassVar[tuple[str, ...]] = (
        "name", "entrypoint", "resources", "environment", "replicas", "processes_per_task",
        "max_retries_failure", "max_retries_preemption", "max_task_failures", "priority", "timeout",
    )
    name: str
    entrypoint: Entrypoint
    resources: ResourceConfig = Field(default_factory=ResourceConfig)
    environment: EnvironmentConfig | None = None
    replicas: int | None = None
    processes_per_task: int = 1
    max_retries_failure: int = 0
    max_retries_preemption: int = 100
    max_task_failures: int = 0
    priority: int = 0
    timeout: timedelta | None = None

    _check_name = field_validator("name")(classmethod(lambda cls, name: check_job_name(name)))

    @field_validator("replicas")
    @classmethod
    def _replicas(cls, replicas: int | None) -> int | None:
        if replicas is not None and not 1 <= replicas <= MAX_REPLICAS:
            raise ValueError(f"replicas {replicas} must be between 1 and {MAX_REPLICAS}")
        return replicas

    @field_validator("processes_per_task", "max_retries_failure", "max_retries_preemption", "max_task_failures")
    @classmethod
    def _count(cls, value: int, info: Any) -> int:
        least = 1 if info.field_name == "processes_per_task" else 0
        if not least <= value <= MAX_COUNT:
            raise ValueError(f"{info.field_name} {value} must be between {least} and {MAX_COUNT}")
        return value

    @field_validator("priority", mode="before")
    @classmethod
    def _priority(cls, priority: Any) -> Any:
        if isinstance(priority, str):
            text = priority.strip().lower().removeprefix("priority_band_")
            if text.lstrip("-").isdigit():
                priority = int(text)
            elif text in PRIORITY_BANDS:
                return PRIORITY_BANDS[text]
            else:
                raise ValueError(unknown_choice("priority", priority, PRIORITY_BANDS))
        if isinstance(priority, int) and priority not in PRIORITY_BANDS.values():
            raise ValueError(unknown_choice("priority", priority, [f"{n} ({b})" for b, n in PRIORITY_BANDS.items()]))
        return priority

    @field_validator("timeout", mode="before")
    @classmethod
    def _timeout(cls, timeout: Any) -> Any:
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
            if not (math.isfinite(timeout) and timeout <= MAX_TIMEOUT_DAYS * 86_400):  # else timedelta() overflows
                raise ValueError(f"timeout {timeout!r} s must be a positive, finite number of seconds "
                                 f"(at most {MAX_TIMEOUT_DAYS} days)")
            timeout = timedelta(seconds=timeout)
        if isinstance(timeout, timedelta) and timeout <= timedelta(0):
            raise ValueError(f"timeout {timeout.total_seconds():g} s must be positive")
        return timeout

    @model_validator(mode="after")
    def _replicas_from_resources(self) -> JobRequest:
        if self.replicas is None:
            self.__dict__["replicas"] = self.resources.replicas
        return self


class JobStatus(str, Enum):
    """Fray's job lifecycle; ``finished`` is true for succeeded, failed and stopped."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    STOPPED = "stopped"

    @staticmethod
    def finished(status: JobStatus) -> bool:
        """True once the job can change no more."""
        return status in (JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.STOPPED)
