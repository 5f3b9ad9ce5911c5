"""A job submitted from inside an Iris task is a child of that task's job, and inherits from it,
as Iris's own client (``IrisClient.submit``) decides. The task's job is read from the variables an
Iris worker sets (the embedded controller sets the same ones), so the rules hold on every controller.

Rules (marin-iris 0.2.227, ``iris/client/client.py`` and ``iris/cluster/client/job_info.py``):

* Inside a task: ``IRIS_TASK_ID`` parses (``/<user>/<job>[/<child>…]/<index>[:<attempt>]``, as
  ``TaskAttempt.from_wire`` + ``JobName.require_task``: the attempt is what follows the last ``:``,
  the index the last component, the job everything before it). Outside one there is no parent.
* Id: a child's id is ``<parent id>/<name>``; its user is the parent's. A name that ``int()`` reads
  (``"3"``, ``"-1"``) is refused: "Nested Job name cannot be an integer".
* Environment: the child's env vars are the parent's (``IRIS_JOB_ENV``) overridden by its own. Its
  setup scripts are its own when it says anything about setup (setup scripts, pip packages,
  extras or sync packages), else the parent's (``IRIS_JOB_SETUP_SCRIPTS``; absent: none known).
* Constraints: none of its own → the parent's (``IRIS_JOB_CONSTRAINTS``: region and zone only);
  its own → merged onto the parent's (``merge_constraints``: its region replaces the parent's).
  Then, unless some constraint names ``region`` (the ANY-region marker included), the child is
  pinned to the region of the parent's worker (``IRIS_WORKER_REGION``). The marker is dropped
  before sending, as for any job.
* Workspace: a child sent without a workspace zip of its own names the parent's bundle
  (``IRIS_BUNDLE_ID``), as the client Iris builds inside a task does, so it runs on the same files.
* Sandboxed children and forwarded secrets are not modelled: fray-jupyter sends neither.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from google.protobuf import json_format

from fray_jupyter.iris.constraints import REGION, Constraint
from fray_jupyter.iris.convert import EnvironmentSpec
from fray_jupyter.iris.placement import merge_constraints
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import child_job_id, is_task_index, job_user, parse_task_attempt


@dataclass(frozen=True)
class ParentJob:
    """What a running task passes on to the jobs it submits (see the module rules)."""

    job_id: str
    env: Mapping[str, str] = field(default_factory=dict)
    setup_scripts: tuple[str, ...] | None = None
    """None: the task was given no ``IRIS_JOB_SETUP_SCRIPTS`` (not the same as ``()``, no setup)."""
    constraints: tuple[Constraint, ...] = ()
    worker_region: str = ""
    bundle_id: str = ""
    """The task's workspace bundle (``IRIS_BUNDLE_ID``): a child sent without one of its own names
    it, as Iris's in-task client does, so it runs on the same files."""

    @property
    def user(self) -> str:
        """The submitting user of the whole tree (the id's first component)."""
        return job_user(self.job_id)

    def child_id(self, name: str) -> str:
        """The id of this job's child ``name``; ``ValueError`` for an integer name (it names a task)."""
        if is_task_index(name):
            raise ValueError(f"Nested Job name cannot be an integer: {name!r}")
        return child_job_id(self.job_id, name)

    def environment_for(self, own: EnvironmentSpec | None) -> EnvironmentSpec:
        """The child's environment: the parent's env vars under its own; the parent's setup scripts
        unless it says anything about setup."""
        env = {**self.env, **(own.env_vars if own is not None else {})}
        if own is None:
            return EnvironmentSpec(env_vars=env, setup_scripts=self.setup_scripts)
        owns_setup = own.setup_scripts is not None or bool(own.extras or own.pip_packages or own.sync_packages)
        return replace(own, env_vars=env, setup_scripts=own.setup_scripts if owns_setup else self.setup_scripts)

    def constraints_for(self, own: Sequence[Constraint]) -> list[Constraint]:
        """The child's constraints before the ANY-region marker is dropped (see the module rules)."""
        merged = merge_constraints(self.constraints, own) if own else list(self.constraints)
        if self.worker_region and not any(constraint.key == REGION for constraint in merged):
            merged.append(Constraint(REGION, "EQ", (self.worker_region,)))
        return merged


def _json(env: Mapping[str, str], name: str, kind: type[list[Any] | dict[str, Any]]) -> Any:
    """``$name`` parsed as JSON of ``kind``: what Iris's ``get_job_info`` reads there."""
    try:
        value = json.loads(env[name])
    except json.JSONDecodeError as error:
        raise ValueError(f"${name} is not JSON ({error.msg}): {env[name][:80]!r}") from None
    if isinstance(value, kind):
        return value
    raise ValueError(f"${name} must be a JSON {'list' if kind is list else 'object'}, got {env[name][:80]!r}")


def _constraints(env: Mapping[str, str]) -> tuple[Constraint, ...]:
    if not env.get("IRIS_JOB_CONSTRAINTS"):
        return ()
    try:
        return tuple(Constraint.from_proto(json_format.ParseDict(item, job_pb2.Constraint()))
                     for item in _json(env, "IRIS_JOB_CONSTRAINTS", list))
    except (json_format.ParseError, ValueError) as error:
        raise ValueError(f"$IRIS_JOB_CONSTRAINTS holds a constraint Iris would not read: {error}") from None


def parent_job(environ: Mapping[str, str] | None = None) -> ParentJob | None:
    """The job of the task this process runs in, from ``environ`` (default ``os.environ``); None
    outside an Iris task. A variable Iris would fail to read (JSON that is not) is a ``ValueError``
    naming it."""
    env = os.environ if environ is None else environ
    parsed = parse_task_attempt(env.get("IRIS_TASK_ID", ""))
    if parsed is None:
        return None
    parts = parsed[0]
    job_env = _json(env, "IRIS_JOB_ENV", dict) if env.get("IRIS_JOB_ENV") else {}
    scripts = _json(env, "IRIS_JOB_SETUP_SCRIPTS", list) if "IRIS_JOB_SETUP_SCRIPTS" in env else None
    return ParentJob(
        job_id="/" + "/".join(parts[:-1]),
        env={str(k): str(v) for k, v in job_env.items()},
        setup_scripts=None if scripts is None else tuple(str(s) for s in scripts),
        constraints=_constraints(env),
        worker_region=env.get("IRIS_WORKER_REGION", ""),
        bundle_id=env.get("IRIS_BUNDLE_ID", ""),
    )
