"""Job flags -> JobRequest, shared by the CLI and the magic."""

from __future__ import annotations

import argparse

import pytest

from fray_jupyter.flags import add_job_arguments, command_entrypoint, job_from_args
from fray_jupyter.resources import ANY_REGION, GpuConfig, TpuConfig


def _job(*argv: str):  # type: ignore[no-untyped-def]
    parser = argparse.ArgumentParser()
    add_job_arguments(parser)
    return job_from_args(parser.parse_args(list(argv)), command_entrypoint(["true"]))


def test_tpu_flags() -> None:
    job = _job("--tpu", "v4-32", "--slices", "2", "--region", "us-central2", "--alternative", "v5p-32",
               "--non-preemptible", "-e", "A", "1", "--name", "t", "--max-retries", "2", "--priority", "batch")
    assert job.resources.device == TpuConfig("v4-32") and job.replicas == 8
    assert job.resources.device_alternatives == ["v5p-32"] and job.resources.preemptible is False
    assert job.resources.regions == ["us-central2"] and job.environment is not None
    assert job.environment.env_vars == {"A": "1"} and job.max_retries_failure == 2 and job.priority == 3


def test_gpu_and_host_flags() -> None:
    job = _job("--gpu", "H100x8", "--replicas", "2", "--cpu", "32", "--memory", "512g", "--any-region")
    assert job.resources.device == GpuConfig("H100", count=8) and job.replicas == 2
    assert (job.resources.cpu, job.resources.ram, job.resources.regions) == (32, "512g", [ANY_REGION])


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--any-region", "--region", "x"], "--any-region cannot be combined"),
    (["--slices", "2"], "--slices needs --tpu"),
    (["--alternative", "v5p-8"], "--alternative needs"),
    (["--tpu", "v5p-7"], "did you mean 'v5p-8'"),
    (["--memory", "lots"], "'lots' is not a size"),
    (["--priority", "urgent"], "unknown priority 'urgent'"),
])
def test_bad_flag_values(argv: list[str], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        _job(*argv)


def test_command_needed() -> None:
    with pytest.raises(ValueError, match="after --"):
        command_entrypoint([])
