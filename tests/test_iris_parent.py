"""The rules a child job follows, read from its parent task's variables (``iris.parent``); the
byte-for-byte comparison with Marin's client is ``tests/conformance/test_children.py``."""

from __future__ import annotations

import json

import pytest
from google.protobuf import json_format

from fray_jupyter.iris.constraints import Constraint
from fray_jupyter.iris.convert import EnvironmentSpec
from fray_jupyter.iris.parent import ParentJob, parent_job
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig

REGION = {"key": "region", "op": "CONSTRAINT_OP_IN",
          "values": [{"string_value": "us-central1"}, {"string_value": "us-east5"}]}


def test_outside_a_task_there_is_no_parent() -> None:
    assert parent_job({}) is None
    assert parent_job({"IRIS_TASK_ID": "/alice/train"}) is None  # a job id, not a task id
    assert parent_job({"IRIS_TASK_ID": "/alice/train/0:x"}) is None


def test_the_parent_is_the_task_s_job_with_what_it_passes_on() -> None:
    parent = parent_job({"IRIS_TASK_ID": "/alice/coord/step/3:1", "IRIS_JOB_ENV": json.dumps({"A": "1"}),
                         "IRIS_JOB_SETUP_SCRIPTS": "[]", "IRIS_JOB_CONSTRAINTS": json.dumps([REGION]),
                         "IRIS_WORKER_REGION": "us-east5"})
    assert parent == ParentJob("/alice/coord/step", {"A": "1"}, (),
                               (Constraint("region", "IN", ("us-central1", "us-east5")),), "us-east5")
    assert parent.user == "alice"
    assert parent.child_id("eval") == "/alice/coord/step/eval"
    with pytest.raises(ValueError, match="Nested Job name cannot be an integer: '7'"):
        parent.child_id("7")


@pytest.mark.parametrize(("name", "value", "said"), [
    ("IRIS_JOB_ENV", "{oops", "$IRIS_JOB_ENV is not JSON"),
    ("IRIS_JOB_ENV", "[1]", "$IRIS_JOB_ENV must be a JSON object"),
    ("IRIS_JOB_SETUP_SCRIPTS", '"echo"', "$IRIS_JOB_SETUP_SCRIPTS must be a JSON list"),
    ("IRIS_JOB_CONSTRAINTS", '[{"key": "region", "op": "NOPE"}]', "$IRIS_JOB_CONSTRAINTS holds a constraint"),
])
def test_a_variable_iris_could_not_read_is_one_line_naming_it(name: str, value: str, said: str) -> None:
    with pytest.raises(ValueError, match=said.replace("$", r"\$")):
        parent_job({"IRIS_TASK_ID": "/alice/coord/0:0", name: value})


def test_env_is_the_parents_under_the_childs_own_and_setup_is_the_parents_unless_the_child_says() -> None:
    parent = ParentJob("/a/p", {"A": "parent", "B": "parent"}, ("echo p",))
    assert parent.environment_for(None) == EnvironmentSpec(env_vars={"A": "parent", "B": "parent"},
                                                           setup_scripts=("echo p",))
    own = parent.environment_for(EnvironmentSpec(env_vars={"B": "child"}))
    assert own.env_vars == {"A": "parent", "B": "child"} and own.setup_scripts == ("echo p",)
    assert parent.environment_for(EnvironmentSpec(setup_scripts=())).setup_scripts == ()
    assert parent.environment_for(EnvironmentSpec(pip_packages=("x",))).setup_scripts is None


def test_constraints_merge_onto_the_parents_and_default_to_its_worker_region() -> None:
    zone_a = Constraint("zone", "EQ", ("us-central1-a",))
    parent = ParentJob("/a/p", constraints=(zone_a,), worker_region="us-central1")
    assert parent.constraints_for([]) == [zone_a, Constraint("region", "EQ", ("us-central1",))]
    own = [Constraint("zone", "EQ", ("us-east5-b",)), Constraint("preemptible", "EQ", ("false",))]
    assert parent.constraints_for(own) == [*own, Constraint("region", "EQ", ("us-central1",))]
    assert parent.constraints_for([Constraint("region", "EXISTS")]) == [zone_a, Constraint("region", "EXISTS")]


def test_plan_inside_a_task_makes_a_child_and_says_what_it_inherits(monkeypatch: pytest.MonkeyPatch) -> None:
    job = JobRequest(name="train", entrypoint=Entrypoint.from_binary("true", []),
                     resources=ResourceConfig.with_tpu("v5p-8", regions=["*"]))
    monkeypatch.setenv("IRIS_TASK_ID", "/bob/coord/0:0")
    monkeypatch.setenv("IRIS_JOB_ENV", json.dumps({"WANDB_MODE": "offline"}))
    monkeypatch.setenv("IRIS_WORKER_REGION", "us-central1")
    child = plan(job, user="alice")
    assert child.job_id == "/bob/coord/train" and child.user == "bob" and child.parent is not None
    assert child.request.environment.env_vars["WANDB_MODE"] == "offline"
    assert not [c for c in child.request.constraints if c.key == "region"]  # ANY: neither inherited nor sent
    assert child.warnings[-1] == ("a child job of /bob/coord (submitted from its task): id /bob/coord/train; "
                                  "inherits env WANDB_MODE")
    assert plan(job, user="alice", parent=None).job_id == "/alice/train"


def test_the_childs_warning_names_the_constraints_it_inherits_not_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    zone = json_format.MessageToDict(Constraint("zone", "EQ", ("us-central1-a",)).to_proto())
    monkeypatch.setenv("IRIS_TASK_ID", "/bob/coord/0:0")
    monkeypatch.setenv("IRIS_JOB_CONSTRAINTS", json.dumps([zone]))
    monkeypatch.setenv("IRIS_WORKER_REGION", "us-central1")
    job = JobRequest(name="train", entrypoint=Entrypoint.from_binary("true", []),
                     resources=ResourceConfig.with_tpu("v5p-8", preemptible=False))
    child = plan(job)
    assert [c.key for c in child.request.constraints] == ["zone", "preemptible", "region"]
    assert child.warnings[-1].endswith("; inherits constraints zone EQ us-central1-a, region EQ us-central1")
