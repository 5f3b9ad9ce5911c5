"""Job flags shared by the ``fray-jupyter plan`` CLI and the ``%%fray`` magic, named like
``iris job run``'s where one exists, and their translation into a ``JobRequest``.

Rule: defining the flags (``add_job_arguments``) imports nothing beyond argparse; the resource
models are imported by the functions that build them, so ``%load_ext fray_jupyter`` (which builds
the ``%%fray`` parser) does not load pydantic."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from fray_jupyter.iris.gpu_spec import parse_gpu_spec

if TYPE_CHECKING:
    from fray_jupyter.resources.config import ResourceConfig
    from fray_jupyter.resources.entrypoint import Entrypoint
    from fray_jupyter.resources.job import JobRequest


def add_job_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the resource, placement and job flags to ``parser``."""
    device = parser.add_argument_group("device (pick one; CPU when neither)").add_mutually_exclusive_group()
    device.add_argument("--tpu", metavar="TYPE", help="TPU slice type, e.g. v5p-8 or v4-32")
    device.add_argument("--gpu", metavar="SPEC", help="GPUs per replica: H100x8, H100 or 8")
    shape = parser.add_argument_group("shape")
    shape.add_argument("--slices", type=int, metavar="N", help="TPU slices (replicas = slices x VMs per slice)")
    shape.add_argument("--replicas", type=int, metavar="N", help="tasks (multi-node GPU; overrides --slices)")
    shape.add_argument("--alternative", action="append", default=[], metavar="TYPE",
                       help="another acceptable TPU/GPU type (repeatable)")
    host = parser.add_argument_group("host resources per replica")
    host.add_argument("--cpu", type=float, metavar="CORES", help="cores (TPU default: half the host)")
    host.add_argument("--memory", metavar="SIZE", help="RAM, binary units: 16g = 16 GiB")
    host.add_argument("--disk", metavar="SIZE", help="ephemeral disk, binary units")
    place = parser.add_argument_group("placement")
    place.add_argument("--region", action="append", default=[], metavar="REGION", help="allowed region (repeatable)")
    place.add_argument("--any-region", action="store_true", help="run anywhere; do not inherit a region")
    place.add_argument("--zone", metavar="ZONE")
    place.add_argument("--non-preemptible", action="store_true", help="require on-demand workers")
    place.add_argument("--target-cluster", metavar="NAME", help="route to a named peer cluster")
    job = parser.add_argument_group("job")
    job.add_argument("--name", metavar="NAME", help="job name (no spaces or '/')")
    job.add_argument("-e", "--env", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                     help="environment variable (repeatable)")
    job.add_argument("--extra", action="append", default=[], metavar="NAME",
                     help="dependency extra of the workspace, e.g. gpu (repeatable)")
    job.add_argument("--image", metavar="IMAGE", help="task container image")
    job.add_argument("--priority", metavar="BAND", help="interactive, batch, production, or 0-4")
    job.add_argument("--max-retries", type=int, default=0, metavar="N", help="retries per task on failure")
    job.add_argument("--max-task-failures", type=int, default=0, metavar="N", help="failed attempts the job tolerates")
    job.add_argument("--timeout", type=float, metavar="SECONDS", help="per-task time limit")


def add_fit_arguments(parser: argparse.ArgumentParser, *, submits: bool) -> None:
    """The "will it fit?" flags: ``--force`` where a job is submitted (``submits``: the ``%%fray``
    magic, which refuses a job ``fit()`` calls ``never`` without it), else ``--check`` and
    ``--controller`` (``fray-jupyter plan``)."""
    fits = parser.add_argument_group("will it fit?")
    if submits:
        fits.add_argument("--force", action="store_true",
                          help="submit even when the controller's cluster can never place the job (fit: never)")
        return
    fits.add_argument("--check", action="store_true",
                      help="also say whether the job fits: prints 'fit: now|after-scale-up|never' (exit 3 for "
                           "never, 4 when the controller named does not answer)")
    where = fits.add_mutually_exclusive_group()
    where.add_argument("--controller", metavar="URL",
                       help="controller to ask with --check (default: $FRAY_CONTROLLER_URL, else the running "
                            "embedded controller, else the profile one would apply is read; none is started)")
    where.add_argument("--cluster", metavar="NAME",
                       help="named Marin cluster to ask with --check (resolved by Iris's own code; needs "
                            "fray-jupyter[marin]; default: $FRAY_CLUSTER, then $MARIN_CLUSTER)")


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--controller URL`` and ``--cluster NAME`` (one or the other): where a job goes or
    which controller is asked. A cluster is a Marin cluster name resolved by Iris's own code
    (``client.clusters``), as ``iris --cluster NAME`` does."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--controller", metavar="URL", help="controller URL (http(s):// or grpc://)")
    where.add_argument("--cluster", metavar="NAME",
                       help="named Marin cluster (a manifest in ~/.config/marin/clusters or Iris's own; "
                            "needs fray-jupyter[marin])")


RESOURCE_FLAGS: Final[dict[str, str]] = {
    "tpu": "--tpu", "gpu": "--gpu", "slices": "--slices", "alternative": "--alternative", "cpu": "--cpu",
    "memory": "--memory", "disk": "--disk", "region": "--region", "any_region": "--any-region", "zone": "--zone",
    "non_preemptible": "--non-preemptible", "target_cluster": "--target-cluster", "image": "--image",
}
"""Parsed name -> flag, for every flag that describes the ``ResourceConfig`` (what ``base`` replaces)."""


def resource_flags_given(ns: argparse.Namespace) -> list[str]:
    """The resource flags set on the command line, as spelled there (``["--tpu", "--zone"]``)."""
    return [flag for dest, flag in RESOURCE_FLAGS.items() if getattr(ns, dest) not in (None, False, [])]


def _resources(ns: argparse.Namespace) -> ResourceConfig:
    from fray_jupyter.resources.config import ANY_REGION, ResourceConfig

    if ns.any_region and ns.region:
        raise ValueError("--any-region cannot be combined with --region")
    if ns.slices is not None and not ns.tpu:
        raise ValueError("--slices needs --tpu")
    if ns.alternative and not (ns.tpu or ns.gpu):
        raise ValueError("--alternative needs --tpu or --gpu")
    common: dict[str, Any] = {
        "cpu": ns.cpu, "ram": ns.memory, "disk": ns.disk, "zone": ns.zone, "target_cluster": ns.target_cluster,
        "image": ns.image, "preemptible": not ns.non_preemptible,
        "regions": [ANY_REGION] if ns.any_region else (list(ns.region) or None),
    }
    given = {key: value for key, value in common.items() if value is not None}
    if ns.tpu:  # --replicas stays a job-level override of slices x VMs (plan() notes it)
        slices = 1 if ns.slices is None else ns.slices
        return ResourceConfig.with_tpu([ns.tpu, *ns.alternative], slice_count=slices, **given)
    if ns.replicas is not None:  # the resources' own replica count, as Fray's builders take it
        given["replicas"] = ns.replicas
    if ns.gpu:
        variant, count = parse_gpu_spec(ns.gpu)
        return ResourceConfig.with_gpu(variant, count=count, device_alternatives=ns.alternative or None, **given)
    return ResourceConfig.with_cpu(**given)


def job_from_args(ns: argparse.Namespace, entrypoint: Entrypoint, *, default_name: str = "job",
                  base: ResourceConfig | None = None, base_name: str = "a given ResourceConfig") -> JobRequest:
    """The ``JobRequest`` the parsed flags describe. ``base`` (e.g. from ``--resources``, named
    ``base_name`` in errors) replaces the resource flags, so giving both is an error. Bad values
    raise ``ValueError`` naming the flag or value."""
    from fray_jupyter.resources.environment import EnvironmentConfig
    from fray_jupyter.resources.job import JobRequest

    if base is not None and (given := resource_flags_given(ns)):
        raise ValueError(f"{base_name} cannot be combined with {', '.join(given)}; "
                         "set those on the ResourceConfig instead")
    resources = base if base is not None else _resources(ns)
    environment = (EnvironmentConfig(workspace=os.getcwd(), env_vars=dict(ns.env), extras=list(ns.extra))
                   if ns.env or ns.extra else None)
    fields: dict[str, Any] = {
        "name": ns.name or default_name, "entrypoint": entrypoint, "resources": resources, "environment": environment,
        "replicas": ns.replicas, "max_retries_failure": ns.max_retries, "max_task_failures": ns.max_task_failures,
        "timeout": ns.timeout,
    }
    if ns.priority is not None:
        fields["priority"] = int(ns.priority) if ns.priority.isdigit() else ns.priority
    return JobRequest(**fields)


def command_entrypoint(argv: Sequence[str]) -> Entrypoint:
    """The entrypoint for a command line after ``--``."""
    from fray_jupyter.resources.entrypoint import Entrypoint

    if not argv:
        raise ValueError("give the command to run after --, e.g. -- python train.py")
    return Entrypoint.from_binary(argv[0], list(argv[1:]))
