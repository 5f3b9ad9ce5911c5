"""``plan()``: everything a person needs to see about a job before it runs, and the exact
``LaunchJobRequest`` that submitting it sends. Every surface (picker preview, ``%%fray --dry-run``,
the CLI, submission) goes through here, so what is shown is what is sent."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from google.protobuf import json_format, text_format

from fray_jupyter.iris.constraints import Constraint
from fray_jupyter.iris.coscheduling import TaskGroup, task_groups
from fray_jupyter.iris.marin_versions import follows_line, installed_marin, version_warnings
from fray_jupyter.iris.parent import ParentJob, parent_job
from fray_jupyter.iris.placement import gang_error
from fray_jupyter.iris.request import EnvVar, LaunchJobRequest, Translation, translate
from fray_jupyter.resources.devices import CpuConfig, GpuConfig, TpuConfig, device_flops, tpu_family
from fray_jupyter.resources.interop import coerce
from fray_jupyter.resources.job import JobRequest
from fray_jupyter.resources.tables import TPU_HBM_BYTES_PER_CHIP


@dataclass(frozen=True)
class Plan:
    """What Iris will receive for one job. Build it with ``plan()``; never edit it.

    Per-replica figures are as sent (after the CPU floor); ``replicas`` is after Iris's TPU
    adjustment; ``groups`` partition the task indices as Iris places them (one gang for a
    coscheduled job); ``errors`` say why Iris will never place it, whatever the cluster;
    ``marin`` is the Marin version the warnings compare with (``iris.marin_versions``).
    """

    translation: Translation
    groups: tuple[TaskGroup, ...]
    request_bytes: bytes
    marin: str | None = None

    # -- identity ----------------------------------------------------------------------------------
    @property
    def job(self) -> JobRequest:
        """The job as given (converted to fray-jupyter's model)."""
        return self.translation.job

    @property
    def job_id(self) -> str:
        """The id Iris will know the job by: ``/<user>/<name>``, or ``<parent id>/<name>`` for a
        child job (planned inside a task)."""
        return self.translation.job_id

    @property
    def parent(self) -> ParentJob | None:
        """The job this one is a child of (None: a root job)."""
        return self.translation.parent

    @property
    def user(self) -> str:
        """The submitting user."""
        return self.translation.user

    # -- shape -------------------------------------------------------------------------------------
    @property
    def replicas(self) -> int:
        """Tasks Iris will run."""
        return self.translation.replicas

    @property
    def cpu_millicores(self) -> int:
        """Millicores per task, as sent."""
        return self.translation.request.resources.cpu_millicores

    @property
    def memory_bytes(self) -> int:
        """RAM per task in bytes, as sent."""
        return self.translation.request.resources.memory_bytes

    @property
    def disk_bytes(self) -> int:
        """Disk per task in bytes, as sent."""
        return self.translation.request.resources.disk_bytes

    @property
    def device(self) -> CpuConfig | GpuConfig | TpuConfig:
        """The primary device."""
        return self.job.resources.device

    @property
    def chips_per_task(self) -> int:
        """Accelerator chips on each task (a TPU VM's chips, or the GPU count); 0 for CPU."""
        return self.device.chip_count()

    @property
    def total_chips(self) -> int:
        """Chips over all tasks."""
        return self.chips_per_task * self.replicas

    @property
    def hbm_bytes(self) -> int | None:
        """Accelerator memory over all tasks, where the tables know it (TPU)."""
        if isinstance(self.device, TpuConfig):
            return self.total_chips * TPU_HBM_BYTES_PER_CHIP[tpu_family(self.device.variant)]
        return None

    @property
    def peak_flops(self) -> float | None:
        """Peak bf16 FLOP/s over all chips, where the FLOPS table knows the device."""
        if isinstance(self.device, CpuConfig):
            return None
        per_chip = device_flops(self.device.variant, "bf16")
        return None if per_chip is None else per_chip * self.total_chips

    @property
    def group_by(self) -> str | None:
        """Iris's coscheduling key, or None when tasks are placed independently."""
        coscheduling = self.translation.coscheduling
        return coscheduling.group_by if coscheduling else None

    @property
    def fray_constraints(self) -> tuple[Constraint, ...]:
        """Constraints as Fray writes them (including the ANY-region marker)."""
        return self.translation.fray_constraints

    @property
    def wire_constraints(self) -> tuple[Constraint, ...]:
        """Constraints as sent."""
        return self.translation.wire_constraints

    @property
    def env(self) -> tuple[EnvVar, ...]:
        """Every variable sent, sorted by name, each with its source."""
        return self.translation.env

    @property
    def warnings(self) -> tuple[str, ...]:
        """One sentence per change made that the job did not spell out; then, when ``marin`` is older
        than the Marin this plan follows, what that version does differently with this job."""
        return self.translation.warnings + version_warnings(self.translation.request, self.marin)

    @property
    def follows(self) -> str:
        """Which Marin this plan follows, and which is installed (one line)."""
        return follows_line(self.marin)

    @cached_property
    def errors(self) -> tuple[str, ...]:
        """Error-level findings: why Iris will never place this job on any cluster (e.g. a multi-slice
        TPU gang larger than one slice), each with what to do instead. Empty when nothing is known wrong."""
        error = gang_error(self.translation.request)
        return (error,) if error else ()

    # -- the request -------------------------------------------------------------------------------
    @property
    def request(self) -> LaunchJobRequest:
        """A fresh copy of the ``LaunchJobRequest`` to send (parsed from ``request_bytes``)."""
        return LaunchJobRequest.FromString(self.request_bytes)

    @property
    def bundle_size(self) -> int:
        """Bytes of the workspace zip sent as ``bundle_blob`` (0 without one)."""
        return len(self.translation.request.bundle_blob)

    @property
    def request_size(self) -> int:
        """Serialized size of the request in bytes."""
        return len(self.request_bytes)

    @cached_property
    def request_text(self) -> str:
        """The request in protobuf text format, except that a workspace zip is not text: its
        ``bundle_blob`` is shown empty, with a comment giving its size (so the text parses to the
        request without it)."""
        request = self.request
        if not request.bundle_blob:
            return text_format.MessageToString(request)
        request.bundle_blob = b""
        return text_format.MessageToString(request).replace(
            '\nbundle_blob: ""\n', f'\nbundle_blob: ""  # {self.bundle_size} bytes: the workspace zip, not shown\n')

    @cached_property
    def request_json(self) -> str:
        """The request as Connect/Iris JSON (camelCase names, int64 as strings)."""
        return json_format.MessageToJson(self.request, indent=2)


def plan(
    job: JobRequest | object,
    *,
    user: str | None = None,
    existing_job_policy: str | int = "keep",
    revision_date: str | None = None,
    bundle: bytes = b"",
    runtime_setup: str | None = None,
    parent: ParentJob | Literal["task"] | None = "task",
    marin: str | None | Literal["installed"] = "installed",
) -> Plan:
    """The ``Plan`` for ``job`` (fray-jupyter's ``JobRequest`` or Marin's ``fray.types.JobRequest``)
    submitted by ``user`` (default: ``$IRIS_USER``, else the OS user), with ``bundle`` (a workspace
    zip, see ``iris.bundle``) as the request's ``bundle_blob`` and ``runtime_setup`` (Iris's
    runtime-deps script, for a named cluster) after the job's setup scripts. As with Iris's own
    client, a job planned inside an Iris task is a child of the task's job (``parent="task"``: read
    from this process's environment, ``iris.parent``); pass a ``ParentJob``, or None for a root job.
    ``marin`` is the Marin version to warn against (default: the installed one; None: none).
    Raises ``ValueError`` with a message for anything Fray or Iris would reject."""
    resolved = parent_job() if parent == "task" else parent
    translation = translate(coerce(job, JobRequest), user=user, existing_job_policy=existing_job_policy,
                            revision_date=revision_date, bundle=bundle, runtime_setup=runtime_setup,
                            parent=resolved)
    groups = task_groups(translation.job.resources, translation.replicas, translation.coscheduling)
    return Plan(translation, groups, translation.request.SerializeToString(),
                installed_marin() if marin == "installed" else marin)
