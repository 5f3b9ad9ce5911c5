"""Copyable snippets: the Python builder call evaluates back, the %%fray line parses back with
fray_jupyter.flags to the same job, and iris job run spells out what Iris's CLI needs."""

from __future__ import annotations

import argparse
import shlex
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fray_jupyter import (
    ANY_REGION,
    Entrypoint,
    EnvironmentConfig,
    JobRequest,
    ResourceConfig,
    TpuConfig,
    plan,
)
from fray_jupyter.flags import add_job_arguments, command_entrypoint, job_from_args
from fray_jupyter.resources.tables import GPU_FAMILIES, TPU_TOPOLOGIES
from fray_jupyter.views.snippets import iris_command, magic_line, python_snippet
from tests.resource_corpus import CORPUS, NAMESPACE


def _flags_job(line: str) -> JobRequest:
    argv = shlex.split(line)
    assert argv[0] == "%%fray"
    parser = argparse.ArgumentParser()
    add_job_arguments(parser)
    return job_from_args(parser.parse_args(argv[1:]), command_entrypoint(["python", "train.py"]))


def _job(resources: ResourceConfig, **fields: object) -> JobRequest:
    return JobRequest(name="train", entrypoint=Entrypoint.from_binary("python", ["train.py"]), resources=resources,
                      **fields)  # type: ignore[arg-type]


def test_python_snippets_are_minimal() -> None:
    assert python_snippet(ResourceConfig.with_tpu("v5p-8", slice_count=2, regions=["us-central1"])) == (
        'ResourceConfig.with_tpu("v5p-8", slice_count=2, regions=["us-central1"])')
    assert python_snippet(ResourceConfig()) == "ResourceConfig.with_cpu()"
    assert python_snippet(ResourceConfig.with_gpu("H100", count=8, replicas=2)) == (
        'ResourceConfig.with_gpu("H100", count=8, replicas=2)')
    assert python_snippet(ResourceConfig.with_tpu(["v4-8", "v5p-8"], regions=[ANY_REGION], cpu=8)) == (
        'ResourceConfig.with_tpu(["v4-8", "v5p-8"], cpu=8, regions=[ANY_REGION])')


def test_configs_with_tpu_cannot_build_use_the_constructor() -> None:
    for rc in (ResourceConfig(device=TpuConfig("v4-32")), ResourceConfig(device=TpuConfig("v4-32", topology="2x2x4"))):
        snippet = python_snippet(rc)
        assert snippet.startswith("ResourceConfig(device=TpuConfig(") and eval(snippet, NAMESPACE) == rc


@pytest.mark.parametrize("rc", CORPUS, ids=range(len(CORPUS)))
def test_python_snippet_evaluates_to_an_equal_config(rc: ResourceConfig) -> None:
    assert eval(python_snippet(rc), NAMESPACE) == rc


@pytest.mark.parametrize("rc", CORPUS, ids=range(len(CORPUS)))
def test_magic_line_parses_back_to_the_same_job(rc: ResourceConfig) -> None:
    job = _job(rc)
    parsed = _flags_job(magic_line(job))
    # flags put --replicas on the JobRequest, builders on the ResourceConfig: compare what is sent
    assert parsed.resources.model_copy(update={"replicas": parsed.replicas}) == rc
    assert plan(parsed, user="u").request_bytes == plan(job, user="u").request_bytes


def test_magic_line_carries_the_job_fields() -> None:
    job = _job(ResourceConfig.with_tpu("v5p-8", slice_count=2), priority="batch", max_retries_failure=2,
               max_task_failures=1, timeout=timedelta(minutes=90),
               environment=EnvironmentConfig(workspace=".", env_vars={"A": "x y", "B": "<b>"}))
    line = magic_line(job)
    assert line == ("%%fray --tpu v5p-8 --slices 2 --name train -e A 'x y' -e B '<b>' --priority batch "
                    "--max-retries 2 --max-task-failures 1 --timeout 5400")
    parsed = _flags_job(line)
    assert (parsed.priority, parsed.max_retries_failure, parsed.max_task_failures, parsed.timeout) == (
        3, 2, 1, timedelta(minutes=90))
    assert parsed.environment is not None and parsed.environment.env_vars == {"A": "x y", "B": "<b>"}


def test_a_gpu_model_flags_cannot_read_is_flagged() -> None:
    assert "\n" not in magic_line(_job(ResourceConfig.with_gpu("MI300X", count=8)))
    line, note = magic_line(_job(ResourceConfig.with_gpu("mi300x", count=8))).split("\n")
    assert "--gpu mi300xx8" in line and note.startswith("# --gpu mi300xx8 does not parse back")


def test_iris_command_spells_out_host_resources_and_extra_resources() -> None:
    job = _job(ResourceConfig.with_tpu("v4-32", slice_count=2, regions=["us-central2"]), max_retries_failure=3,
               environment=EnvironmentConfig(workspace=".", env_vars={"WANDB_MODE": "offline"}))
    assert iris_command(job) == (
        "iris job run --job-name train --tpu v4-32 --enable-extra-resources --cpu 120 --memory 200g --disk 50g "
        "--replicas 8 --region us-central2 --max-retries 3 -e WANDB_MODE offline -- python train.py")
    small = iris_command(_job(ResourceConfig.with_cpu(cpu=0.5, ram="1g", disk="5g")))
    assert "--enable-extra-resources" not in small and "--cpu 0.5 --memory 1g --disk 5g" in small
    assert iris_command(_job(ResourceConfig.with_gpu("H100", count=8))).split()[5:8] == [
        "--gpu", "H100x8", "--enable-extra-resources"]


def test_iris_command_names_what_it_cannot_express() -> None:
    job = JobRequest(name="t", entrypoint=Entrypoint.from_callable(print),
                     resources=ResourceConfig.with_tpu(["v4-8", "v5p-8"], preemptible=False, regions=[ANY_REGION]))
    command, note = iris_command(job).split("\n")
    assert command.endswith("-- python main.py")
    assert note == ("# iris job run has no flag for: preemptible=False, device_alternatives, regions=[ANY_REGION], "
                    "a Python callable (shown as python main.py)")


def test_iris_command_for_a_cell_runs_the_cell_saved_as_a_file() -> None:
    job = JobRequest(name="cell-1", entrypoint=Entrypoint.from_cell("print('hi')\n"), resources=ResourceConfig())
    save, command = iris_command(job).split("\n")
    assert save.startswith("# save the cell's code as cell.py in the directory you run this from")
    assert command.endswith("-- python cell.py") and "no flag" not in command


_tpu = st.builds(lambda info, slices: ResourceConfig.with_tpu(info.name, slice_count=slices),
                 st.sampled_from(TPU_TOPOLOGIES), st.integers(1, 64))
_gpu = st.builds(lambda model, count, replicas: ResourceConfig.with_gpu(model, count=count, replicas=replicas),
                 st.sampled_from([m for models in GPU_FAMILIES.values() for m in models]), st.integers(1, 64),
                 st.integers(1, 8))
_overrides = st.fixed_dictionaries({}, optional={
    "cpu": st.sampled_from([0.5, 2.0, 7.25]), "ram": st.sampled_from(["3g", "16GiB", "100m"]),
    "preemptible": st.just(False), "zone": st.sampled_from(["us-east5-a", "z"]),
    "regions": st.sampled_from([["us-central1"], ["a", "b"], [ANY_REGION]]), "image": st.just("img:1"),
})


@settings(max_examples=150, deadline=None)
@given(base=st.one_of(_tpu, _gpu, st.just(ResourceConfig())), overrides=_overrides)
def test_every_snippet_round_trips(base: ResourceConfig, overrides: dict[str, object]) -> None:
    rc = ResourceConfig(**{**dict(base), **overrides})
    assert eval(python_snippet(rc), NAMESPACE) == rc
    parsed = _flags_job(magic_line(_job(rc)))
    assert parsed.resources.model_copy(update={"replicas": parsed.replicas}) == rc
