"""A job submitted from inside an Iris task: fray-jupyter's request equals what Marin's real client
sends from the same task (``IRIS_TASK_ID`` and the variables a worker sets), for parents with and
without env vars, setup scripts, region/zone constraints and a worker region, and children that
override each or say nothing; and both refuse an integer child name.

Iris merges a child's canonical constraints in ``frozenset`` order (it varies between processes),
so constraints are compared as a set; everything else byte for byte, after ``normalize``."""

from __future__ import annotations

import json
from typing import Any

import fray.types as real_types
import pytest
from google.protobuf import text_format

import fray_jupyter.resources as our_types
from fray_jupyter.iris.parent import parent_job
from fray_jupyter.planning import plan
from tests.conformance.differences import LaunchJobRequest, normalize
from tests.conformance.oracle import Oracle, canonical_bytes
from tests.conformance.specs import Spec, build

USER = "alice"
REGION_EQ = {"key": "region", "op": "CONSTRAINT_OP_EQ", "value": {"string_value": "us-central1"}}
ZONE_EQ = {"key": "zone", "op": "CONSTRAINT_OP_EQ", "value": {"string_value": "us-central1-a"}}

PARENTS: dict[str, dict[str, str]] = {
    "bare task": {"IRIS_TASK_ID": "/alice/coord/0:0"},
    "env and setup": {"IRIS_TASK_ID": "/alice/coord/0:2", "IRIS_JOB_ENV": json.dumps({"FOO": "parent", "BAR": "p"}),
                      "IRIS_JOB_SETUP_SCRIPTS": json.dumps(["echo parent-setup"])},
    "no setup ([])": {"IRIS_TASK_ID": "/alice/coord/0:0", "IRIS_JOB_SETUP_SCRIPTS": "[]"},
    "region and zone": {"IRIS_TASK_ID": "/alice/coord/3:0", "IRIS_JOB_CONSTRAINTS": json.dumps([REGION_EQ, ZONE_EQ]),
                        "IRIS_JOB_SETUP_SCRIPTS": "[]"},
    "worker region": {"IRIS_TASK_ID": "/alice/coord/mid/0:0", "IRIS_WORKER_REGION": "us-east5",
                      "IRIS_JOB_SETUP_SCRIPTS": "[]"},
}
_WORKSPACE = {"workspace": "/tmp"}
CHILDREN: dict[str, Spec] = {
    "cpu, nothing said": Spec("cpu", name="step"),
    "own env": Spec("cpu", name="step", env={**_WORKSPACE, "env_vars": {"BAR": "child", "NEW": "1"}}),
    "own setup": Spec("cpu", name="step", env={**_WORKSPACE, "setup_scripts": ["echo child-setup"]}),
    "extras own the setup": Spec("cpu", name="step", env={**_WORKSPACE, "extras": ["tpu"]}),
    "tpu v5p-8": Spec("tpu", tpu_types=("v5p-8",), name="train"),
    "own region": Spec("tpu", tpu_types=("v5p-8",), name="train", resource_kwargs={"regions": ["us-east5"]}),
    "ANY region": Spec("tpu", tpu_types=("v5p-8",), name="train", resource_kwargs={"regions": ["*"]}),
    "own zone, not preemptible": Spec("cpu", name="eval", resource_kwargs={"zone": "us-central1-b",
                                                                          "preemptible": False}),
}


def _sorted_constraints(request: LaunchJobRequest) -> LaunchJobRequest:
    copy = LaunchJobRequest()
    copy.CopyFrom(request)
    ordered = sorted(copy.constraints, key=lambda c: c.SerializeToString(deterministic=True))
    del copy.constraints[:]
    copy.constraints.extend(ordered)
    return copy


def _default_setup(spec: Spec, task_env: dict[str, str]) -> bool:
    """Whether Marin's client generates its default uv-sync setup: the child's setup scripts end
    None (its own, when it says anything about setup; else the parent's)."""
    env: dict[str, Any] = spec.env or {}
    owns = env.get("setup_scripts") is not None or bool(env.get("extras") or env.get("pip_packages"))
    if owns:
        return env.get("setup_scripts") is None
    return "IRIS_JOB_SETUP_SCRIPTS" not in task_env


@pytest.mark.parametrize("child", CHILDREN, ids=list(CHILDREN))
@pytest.mark.parametrize("parent", PARENTS, ids=list(PARENTS))
def test_a_child_request_equals_marins(real_client: Oracle, parent: str, child: str) -> None:
    task_env, spec = PARENTS[parent], CHILDREN[child]
    ours = plan(build(our_types, spec), user="someone-else", parent=parent_job(task_env)).request
    theirs = LaunchJobRequest.FromString(real_client.capture(build(real_types, spec), user=USER, task_env=task_env))
    expected = normalize(theirs, default_setup=_default_setup(spec, task_env))
    if canonical_bytes(_sorted_constraints(ours).SerializeToString()) != canonical_bytes(
            _sorted_constraints(expected).SerializeToString()):
        pytest.fail(f"child requests differ\n--- fray-jupyter\n{text_format.MessageToString(ours)}"
                    f"--- Marin (normalized)\n{text_format.MessageToString(expected)}")
    assert ours.name == task_env["IRIS_TASK_ID"].rsplit("/", 1)[0] + "/" + spec.name


@pytest.mark.parametrize("name", ["-1", "1_0"])
def test_both_refuse_an_integer_child_name(real_client: Oracle, name: str) -> None:
    """Iris reads ``int(name)`` as a task index; digit-only names are refused even for root jobs
    (``test_translation.STRICTER``), these only for children."""
    task_env = PARENTS["bare task"]
    with pytest.raises(ValueError, match="Nested Job name cannot be an integer") as theirs:
        real_client.capture(build(real_types, Spec("cpu", name=name)), user=USER, task_env=task_env)
    with pytest.raises(ValueError) as ours:
        plan(build(our_types, Spec("cpu", name=name)), parent=parent_job(task_env))
    assert str(ours.value) == str(theirs.value)
