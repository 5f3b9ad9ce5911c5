"""The differential corpus: jobs a Fray user might submit to a cluster shaped like the built-in profile
(``fray_jupyter/cluster/default.yaml``: cpu, v5p-8, v5p-16, v4-8, v4-32, v6e-8, H100x8 with a leafgroup),
chosen to cross every placement rule — single- and multi-VM TPU slices with 1–4 slices, v5e/v6e/v5p/v4,
regions pinned and ANY, zones, preemptible or not, GPU single-host and leafgroup gangs, CPU, oversize
resources and variants no group offers. Each is planned with ``plan()`` and sent to both controllers.

Every task prints the names of its environment variables on one line (with the Python both controllers
name in ``IRIS_PYTHON``: values may span lines) and exits, so jobs that run finish in about a second.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fray_jupyter.planning import Plan, plan
from fray_jupyter.resources import ANY_REGION, Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.devices import GpuConfig
from fray_jupyter.resources.environment import EnvironmentConfig

ENV_COMMAND = 'exec "$IRIS_PYTHON" -c "import os; print(\' \'.join(sorted(os.environ)))"'
USER = "diff"
"""The user every corpus job is planned for."""


@dataclass(frozen=True)
class Case:
    """One corpus job: a name (also the job name) and the resources it asks for."""

    name: str
    resources: ResourceConfig


def plan_of(case: Case, workspace: Path) -> Plan:
    """The corpus job ``case`` planned for ``USER`` as a task printing its environment's names, with
    ``workspace`` as its workspace and no setup scripts."""
    job = JobRequest(name=case.name, entrypoint=Entrypoint.from_binary("sh", ["-c", ENV_COMMAND]),
                     resources=case.resources, environment=EnvironmentConfig(workspace=str(workspace), setup_scripts=[]))
    return plan(job, user=USER)


def _tpu(name: str, variant: str | list[str], slices: int = 1, **kw: object) -> Case:
    return Case(name, ResourceConfig.with_tpu(variant, slice_count=slices, **kw))  # type: ignore[arg-type]


def _gpu(name: str, variant: str, count: int, **kw: object) -> Case:
    return Case(name, ResourceConfig.with_gpu(variant, count=count, **kw))  # type: ignore[arg-type]


CORPUS: tuple[Case, ...] = (
    # -- single-VM TPU slices: no gang, one task per slice
    _tpu("v5p-8", "v5p-8"),
    _tpu("v5p-8x2", "v5p-8", 2),
    _tpu("v5p-8x3", "v5p-8", 3),  # more slices than the group's max_slices: waits its turn, then runs
    _tpu("v5p-8x4", "v5p-8", 4),
    _tpu("v4-8", "v4-8"),
    _tpu("v4-8x2", "v4-8", 2),
    _tpu("v6e-8", "v6e-8"),
    _tpu("v6e-8x2", "v6e-8", 2),
    # -- multi-VM TPU slices: one gang on one tpu-name
    _tpu("v5p-16", "v5p-16"),
    _tpu("v5p-16x2", "v5p-16", 2),
    _tpu("v4-32", "v4-32"),
    _tpu("v4-32x2", "v4-32", 2),
    _tpu("v4-32x3", "v4-32", 3),
    _tpu("v4-32x4", "v4-32", 4),
    # -- regions and zones
    _tpu("v5p-8-in-us-central1", "v5p-8", regions=["us-central1"]),
    _tpu("v5p-8-in-us-east5", "v5p-8", regions=["us-east5"]),
    _tpu("v5p-8-any-region", "v5p-8", regions=[ANY_REGION]),
    _tpu("v5p-8-zone-a", "v5p-8", zone="us-central1-a"),
    _tpu("v5p-8-zone-b", "v5p-8", zone="us-central1-b"),
    _tpu("v6e-8-in-europe-west4", "v6e-8", regions=["europe-west4"]),
    _tpu("v6e-8-in-us-east5", "v6e-8", regions=["us-east5"]),
    _tpu("v4-32-in-us-central2", "v4-32", regions=["us-central2"]),
    # -- capacity type
    _tpu("v5p-8-on-demand", "v5p-8", preemptible=False),
    _tpu("v4-32-on-demand", "v4-32", preemptible=False),
    # -- variants no group offers (v5e, other sizes), and alternatives
    _tpu("v5e-4", "v5litepod-4"),
    _tpu("v5e-16", "v5litepod-16"),
    _tpu("v6e-4", "v6e-4"),
    _tpu("v6e-16", "v6e-16"),
    _tpu("v5p-32", "v5p-32"),
    _tpu("v5p-8-or-v4-8", ["v5p-8", "v4-8"]),
    _tpu("v6e-16-or-v5e-16", ["v6e-16", "v5litepod-16"]),
    # -- oversize per-VM resources on a TPU host
    _tpu("v5p-8-ram-500g", "v5p-8", ram="500g"),
    _tpu("v5p-8-cpu-300", "v5p-8", cpu=300),
    _tpu("v4-32-disk-200g", "v4-32", disk="200g"),
    # -- GPUs: single host, leafgroup gangs, oversize, variants no group offers
    _gpu("h100x8", "H100", 8),
    _gpu("h100x4", "H100", 4),
    _gpu("h100x8-gang2", "H100", 8, replicas=2),
    _gpu("h100x8-gang3", "H100", 8, replicas=3),
    _gpu("h100x16", "H100", 16),
    _gpu("h100x8-cpu-200", "H100", 8, cpu=200),
    _gpu("h100x8-in-us-central1", "H100", 8, regions=["us-central1"]),
    _gpu("a100x8", "A100", 8),
    Case("gb200x4-rack", ResourceConfig(device=GpuConfig("GB200", count=4), replicas=16)),
    # -- CPU
    Case("cpu-fray-default", ResourceConfig()),
    Case("cpu-2x3", ResourceConfig(cpu=2, ram="8g", disk="10g", replicas=3)),
    Case("cpu-16", ResourceConfig(cpu=16, ram="16g", disk="10g")),
    Case("cpu-32", ResourceConfig(cpu=32, ram="16g", disk="10g")),
    Case("cpu-ram-128g", ResourceConfig(cpu=1, ram="128g", disk="10g")),
    Case("cpu-disk-200g", ResourceConfig(cpu=1, ram="4g", disk="200g")),
    Case("cpu-on-demand", ResourceConfig(cpu=1, ram="4g", disk="10g", preemptible=False)),
    Case("cpu-in-us-central1", ResourceConfig(cpu=1, ram="4g", disk="10g", regions=["us-central1"])),
    Case("cpu-any-region", ResourceConfig(cpu=1, ram="4g", disk="10g", regions=[ANY_REGION])),
)
