"""``build_launch_request``: one ``JobRequest`` -> the ``LaunchJobRequest`` Iris receives, step by
step as Fray's ``FrayIrisClient.submit`` and Iris's ``IrisClient.submit`` do it, keeping every
intermediate value and a warning for each change the user did not spell out."""

from __future__ import annotations

import datetime
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, cast

from fray_jupyter.iris.constraints import Constraint, convert_constraints, strip_any_region
from fray_jupyter.iris.convert import (
    IRIS_SLICE_COUNT,
    IRIS_TASKS_PER_SLICE,
    EnvironmentSpec,
    ResourceSpec,
    adjust_tpu_replicas,
    convert_entrypoint,
    convert_environment,
    convert_resources,
    with_slice_topology_env,
    wrap_multiprocess,
)
from fray_jupyter.iris.coscheduling import CoschedulingConfig, resolve_coscheduling
from fray_jupyter.iris.parent import ParentJob
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.iris.setup import setup_commands
from fray_jupyter.iris.user import resolve_user
from fray_jupyter.resources.devices import CpuConfig, TpuConfig
from fray_jupyter.resources.job import JobRequest
from fray_jupyter.resources.suggest import unknown_choice

LaunchJobRequest = controller_pb2.Controller.LaunchJobRequest

DEFAULT_CLIENT_REVISION_DATE: Final[str] = "2026-10-24"
"""The build date of marin-iris 0.2.227.dev40316220070, the Iris this package targets. Iris
controllers refuse root jobs from clients more than 14 days older than their own revision, so this is
sent unless ``IRIS_REVISION_DATE`` (Iris's own override variable) or an explicit argument says
otherwise. Raise it when targeting a newer controller."""
REVISION_DATE_ENV: Final[str] = "IRIS_REVISION_DATE"

EXISTING_JOB_POLICIES: Final[dict[str, int]] = {
    "unspecified": job_pb2.EXISTING_JOB_POLICY_UNSPECIFIED, "error": job_pb2.EXISTING_JOB_POLICY_ERROR,
    "keep": job_pb2.EXISTING_JOB_POLICY_KEEP, "recreate": job_pb2.EXISTING_JOB_POLICY_RECREATE,
}

Source = str  # where an env var comes from: "user", "device", "iris", "iris-topology"


@dataclass(frozen=True)
class EnvVar:
    """One variable the tasks get, with where it came from."""

    name: str
    value: str
    source: Source


def client_revision_date(explicit: str | None = None) -> str:
    """The ISO date sent as ``client_revision_date``: the argument, else ``$IRIS_REVISION_DATE``,
    else ``DEFAULT_CLIENT_REVISION_DATE``. A malformed date is a ``ValueError``."""
    date = explicit or os.environ.get(REVISION_DATE_ENV) or DEFAULT_CLIENT_REVISION_DATE
    try:
        datetime.date.fromisoformat(date)
    except ValueError:
        raise ValueError(f"client revision date {date!r} must be an ISO date such as '2026-10-24'") from None
    return date


def job_id(user: str, name: str) -> str:
    """A root job's wire id: ``/<user>/<name>``."""
    return f"/{user}/{name}"


def container_profile_value(name: str | None) -> int:
    """The ``ContainerProfile`` number for Fray's ``container_profile`` ("CONTAINER_PROFILE_PRIVILEGED"
    or just "privileged"); UNSPECIFIED when None."""
    if name is None:
        return job_pb2.CONTAINER_PROFILE_UNSPECIFIED
    short = name.strip().lower().removeprefix("container_profile_")
    names = {full.removeprefix("CONTAINER_PROFILE_").lower(): number for full, number in job_pb2.ContainerProfile.items()}
    if short not in names:
        raise ValueError(unknown_choice("container_profile", name, names, compare_as=short))
    return names[short]


def existing_job_policy_value(policy: str | int) -> int:
    """An ``ExistingJobPolicy`` by name ("keep", "error", "recreate") or number."""
    if isinstance(policy, int):
        if policy not in EXISTING_JOB_POLICIES.values():
            raise ValueError(unknown_choice("existing_job_policy", policy, EXISTING_JOB_POLICIES))
        return policy
    try:
        return EXISTING_JOB_POLICIES[policy.lower()]
    except KeyError:
        raise ValueError(unknown_choice("existing_job_policy", policy, EXISTING_JOB_POLICIES)) from None


@dataclass(frozen=True)
class Translation:
    """Every step from a ``JobRequest`` to its ``LaunchJobRequest``, for previews and for sending."""

    job: JobRequest
    user: str
    job_id: str
    parent: ParentJob | None
    resources: ResourceSpec
    fray_constraints: tuple[Constraint, ...]
    wire_constraints: tuple[Constraint, ...]
    requested_replicas: int
    replicas: int
    coscheduling: CoschedulingConfig | None
    environment: EnvironmentSpec | None
    env: tuple[EnvVar, ...]
    warnings: tuple[str, ...]
    request: LaunchJobRequest


def _env_with_sources(job: JobRequest, spec: EnvironmentSpec, final: dict[str, str]) -> tuple[EnvVar, ...]:
    user = job.environment.env_vars if job.environment is not None else {}
    iris = spec.iris_defaults()

    def source(name: str) -> Source:
        if name in (IRIS_SLICE_COUNT, IRIS_TASKS_PER_SLICE):
            return "iris-topology"
        if name in user:
            return "user"
        return "iris" if name in iris and name not in spec.env_vars else "device"

    return tuple(EnvVar(name, value, source(name)) for name, value in sorted(final.items()))


def _warnings(
    job: JobRequest, spec: ResourceSpec, requested: int, sent: int, fray_constraints: list[Constraint]
) -> list[str]:
    resources = job.resources
    notes: list[str] = []
    if spec.millicores != spec.requested_millicores:
        notes.append(f"cpu raised from {resources.cpu:g} to {spec.millicores / 1000:g} cores: "
                     f"Iris gives every accelerator task at least 4 cores")
    if job.replicas is not None and job.replicas != resources.replicas:
        notes.append(f"JobRequest.replicas={job.replicas} overrides resources.replicas={resources.replicas}")
    if requested != sent:
        notes.append(f"replicas raised from {requested} to {sent}: one {resources.device.variant} slice "
                     f"has {sent} VMs and Iris runs one task per VM; they are not coscheduled as a gang, "
                     f"because Fray chose coscheduling for {requested} replica (use with_tpu to get tpu-name)")
    if any(c.is_any_region_marker for c in fray_constraints):
        notes.append("regions=[ANY_REGION] sends no region constraint: it only stops the job "
                     "inheriting a parent job's region")
    if resources.device_alternatives and isinstance(resources.device, CpuConfig):
        notes.append("device_alternatives are ignored for a CPU device")
    if isinstance(resources.device, TpuConfig) and resources.device.topology:
        notes.append(f"TpuConfig.topology={resources.device.topology!r} is informational; Iris is not sent it")
    env = job.environment
    if env is not None:
        user_slice = {IRIS_SLICE_COUNT, IRIS_TASKS_PER_SLICE} & set(env.env_vars)
        if user_slice:
            notes.append(f"the job's own {' and '.join(sorted(user_slice))} are not sent: "
                         f"Iris sets these from the slice shape")
        if env.docker_image:
            notes.append("EnvironmentConfig.docker_image is ignored by Iris; set ResourceConfig.image instead")
        if env.setup_scripts is None and (env.pip_packages or env.extras or env.sync_packages):
            notes.append("pip_packages, extras and sync_packages only act through a uv-sync setup script, "
                         "which fray-jupyter does not generate; pass setup_scripts explicitly")
    return notes


def _inherited(parent: ParentJob, job: JobRequest, environment: EnvironmentSpec, own: Sequence[Constraint],
               sent: Sequence[Constraint]) -> str:
    """The warning naming what a child job takes from its parent (``own``: its Fray constraints,
    ``sent``: those it is sent with)."""
    own_env = job.environment.env_vars if job.environment is not None else {}
    taken = [f"env {', '.join(sorted(set(parent.env) - set(own_env)))}"] if set(parent.env) - set(own_env) else []
    if parent.setup_scripts and environment.setup_scripts == parent.setup_scripts:
        taken.append(f"{len(parent.setup_scripts)} setup script(s)")
    own_keys = {c.key for c in own}
    if inherited := [str(c) for c in sent if c.key not in own_keys]:
        taken.append("constraints " + ", ".join(inherited))
    return (f"a child job of {parent.job_id} (submitted from its task): id {parent.child_id(job.name)}"
            + (f"; inherits {'; '.join(taken)}" if taken else ""))


def translate(
    job: JobRequest,
    *,
    user: str | None = None,
    existing_job_policy: str | int = "keep",
    revision_date: str | None = None,
    bundle: bytes = b"",
    runtime_setup: str | None = None,
    parent: ParentJob | None = None,
) -> Translation:
    """Run every Fray -> Iris step for ``job`` and keep the results (see ``build_launch_request``).
    ``bundle`` is the workspace zip sent as ``bundle_blob`` (``iris.bundle.create_workspace_zip``);
    ``runtime_setup`` is the runtime-deps script that follows the job's setup scripts in
    ``entrypoint.setup_commands`` (``iris.setup.setup_commands``; None: nothing follows them).
    With a ``parent`` (the job of the task submitting it) the job is that job's child: its id, user,
    environment and constraints follow ``iris.parent``'s rules and ``user`` is not used."""
    resources = job.resources
    user = parent.user if parent is not None else resolve_user(user)
    spec = convert_resources(resources)
    entrypoint = convert_entrypoint(job.entrypoint)
    if job.processes_per_task > 1:
        entrypoint = wrap_multiprocess(entrypoint, spec, job.processes_per_task)
    environment = convert_environment(job.environment, resources.device)
    environment = parent.environment_for(environment) if parent is not None else environment or EnvironmentSpec()
    fray_constraints = convert_constraints(resources)
    requested = job.replicas or 1
    coscheduling = resolve_coscheduling(resources, requested)
    sent = parent.constraints_for(fray_constraints) if parent is not None else fray_constraints
    wire_constraints = strip_any_region(sent)
    replicas = adjust_tpu_replicas(resources.device, requested)
    env_proto = environment.to_proto()
    final_env = with_slice_topology_env(dict(env_proto.env_vars), resources.device, replicas)
    env_proto.ClearField("env_vars")
    env_proto.env_vars.update(final_env)

    request = LaunchJobRequest(
        name=parent.child_id(job.name) if parent is not None else job_id(user, job.name),
        entrypoint=entrypoint.to_proto(setup_commands(env_proto.setup_scripts, runtime_setup)),
        resources=spec.to_proto(),
        environment=env_proto,
        constraints=[c.to_proto() for c in wire_constraints],
        replicas=replicas,
        max_retries_failure=job.max_retries_failure,
        max_retries_preemption=job.max_retries_preemption,
        max_task_failures=job.max_task_failures,
        preemption_policy=job_pb2.JOB_PREEMPTION_POLICY_UNSPECIFIED,
        existing_job_policy=cast(job_pb2.ExistingJobPolicy, existing_job_policy_value(existing_job_policy)),
        task_image=resources.image or "",
        priority_band=cast(job_pb2.PriorityBand, job.priority),
        container_profile=cast(job_pb2.ContainerProfile, container_profile_value(resources.container_profile)),
        egress_policy=job_pb2.EGRESS_POLICY_UNSPECIFIED,
        client_revision_date=client_revision_date(revision_date),
        bundle_blob=bundle,
    )
    if parent is not None and parent.bundle_id and not bundle:
        request.bundle_id = parent.bundle_id
    if job.timeout is not None:
        request.timeout.milliseconds = job.timeout // datetime.timedelta(milliseconds=1)
    if coscheduling is not None:
        request.coscheduling.CopyFrom(coscheduling.to_proto())

    warnings = _warnings(job, spec, requested, replicas, fray_constraints)
    if parent is not None:
        warnings.append(_inherited(parent, job, environment, fray_constraints, wire_constraints))
    return Translation(
        job=job, user=user, job_id=request.name, parent=parent, resources=spec, fray_constraints=tuple(fray_constraints),
        wire_constraints=tuple(wire_constraints), requested_replicas=requested, replicas=replicas,
        coscheduling=coscheduling, environment=environment, env=_env_with_sources(job, environment, final_env),
        warnings=tuple(warnings), request=request,
    )


def build_launch_request(
    job: JobRequest,
    *,
    user: str,
    existing_job_policy: str | int = "keep",
    revision_date: str | None = None,
) -> LaunchJobRequest:
    """The ``LaunchJobRequest`` Marin's Fray -> Iris client sends for ``job`` as ``user``.

    Steps, in Fray's order: convert resources, entrypoint (wrapped in the multi-GPU supervisor when
    ``processes_per_task > 1``), environment and constraints; replicas = ``job.replicas or 1``;
    coscheduling from the requested replicas; then Iris's client steps: drop the ANY-region marker,
    ``adjust_tpu_replicas``, CPU floor of 4 cores for accelerators, slice-topology env vars, id
    ``/<user>/<name>``, ``existing_job_policy`` KEEP (Fray's adopt_existing), ``client_revision_date``.
    """
    return translate(job, user=user, existing_job_policy=existing_job_policy, revision_date=revision_date).request
