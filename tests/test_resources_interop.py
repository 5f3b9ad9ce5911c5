"""Interop: Marin's own ``fray.types`` objects are accepted wherever fray-jupyter takes its own.

The shape-based tests run without Marin's packages (a dataclass whose module is under ``fray``);
the rest use the installed marin-fray (a test dependency)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from fray import types as ft
from pydantic import ValidationError

from fray_jupyter import plan
from fray_jupyter.resources import (
    CpuConfig,
    Entrypoint,
    EnvironmentConfig,
    GpuConfig,
    JobRequest,
    ResourceConfig,
    TpuConfig,
)
from fray_jupyter.resources.interop import coerce, is_fray_object


@dataclasses.dataclass
class ResourceConfigLookalike:
    cpu: float = 2
    ram: str = "8g"


ResourceConfigLookalike.__name__ = "ResourceConfig"
ResourceConfigLookalike.__module__ = "fray.types"


def test_ours_pass_through_unchanged() -> None:
    rc = ResourceConfig()
    assert coerce(rc, ResourceConfig) is rc


def test_shape_based_conversion_without_marin() -> None:
    fake = ResourceConfigLookalike()
    assert is_fray_object(fake)
    converted = coerce(fake, ResourceConfig)
    assert isinstance(converted, ResourceConfig)
    assert (converted.cpu, converted.ram, converted.disk) == (2, "8g", "64g")


@pytest.mark.parametrize("value", [42, {"name": "j"}, None, ResourceConfig(), ResourceConfigLookalike()])
def test_anything_else_is_a_value_error_naming_the_type(value: object) -> None:
    with pytest.raises(ValueError) as caught:
        coerce(value, JobRequest)
    message = str(caught.value)
    assert type(value).__name__ in message and "\n" not in message


def test_is_fray_object() -> None:
    assert not is_fray_object(ResourceConfig())
    assert not is_fray_object(timedelta(1))


def test_plan_rejects_what_is_not_a_job() -> None:
    with pytest.raises(ValueError, match="expected a JobRequest"):
        plan(ResourceConfig(), user="alice")  # type: ignore[arg-type]


# -- with Marin's real fray.types -------------------------------------------------------------------


def test_real_job_request_converts_field_by_field() -> None:
    from rigging.timing import Duration

    real = ft.JobRequest(
        name="j",
        entrypoint=ft.Entrypoint.from_binary("echo", ["hi"]),
        resources=ft.ResourceConfig.with_tpu(
            "v4-32", slice_count=2, regions=("us-central2",), preemptible=False
        ),
        environment=ft.EnvironmentConfig(
            workspace="/w", env_vars={"A": "1"}, extras=["tpu"], secret_behavior=ft.SecretBehavior.ISOLATE
        ),
        timeout=Duration.from_seconds(90),
        priority=3,
        max_retries_failure=2,
    )
    ours = coerce(real, JobRequest)
    assert isinstance(ours, JobRequest)
    assert ours.resources.device == TpuConfig("v4-32")
    assert (ours.resources.cpu, ours.resources.ram, ours.resources.disk) == (120, "200g", "50g")
    assert (ours.resources.regions, ours.resources.preemptible, ours.resources.replicas) == (
        ["us-central2"],
        False,
        8,
    )
    assert ours.replicas == 8
    assert ours.environment == EnvironmentConfig(
        workspace="/w", env_vars={"A": "1"}, extras=["tpu"], secret_behavior="isolate"
    )
    assert ours.timeout == timedelta(seconds=90)
    assert (ours.priority, ours.max_retries_failure, ours.max_retries_preemption) == (3, 2, 100)


def test_real_devices_convert() -> None:
    assert coerce(ft.CpuConfig(), CpuConfig) == CpuConfig()
    assert coerce(ft.GpuConfig("H100", count=8), GpuConfig) == GpuConfig("H100", count=8)
    assert coerce(ft.TpuConfig("v5p-8", topology="2x2x1"), TpuConfig) == TpuConfig("v5p-8", topology="2x2x1")
    rc = coerce(ft.ResourceConfig.with_tpu(["v4-8", "v5p-8"]), ResourceConfig)
    assert rc.device_alternatives == ["v5p-8"]


def test_real_callable_keeps_the_function_itself() -> None:
    def work(x: int) -> int:
        return x

    entry = coerce(ft.Entrypoint.from_callable(work, args=[1], kwargs={"y": 2}), Entrypoint)
    assert entry.callable_entrypoint.callable is work
    assert (entry.callable_entrypoint.args, entry.callable_entrypoint.kwargs) == ((1,), {"y": 2})


def test_real_create_environment_converts() -> None:
    env = coerce(ft.create_environment(workspace="/w", env_vars={"B": "2"}), EnvironmentConfig)
    assert env.env_vars == {"HF_DATASETS_TRUST_REMOTE_CODE": "1", "TOKENIZERS_PARALLELISM": "false", "B": "2"}


def test_invalid_real_values_get_our_one_line_error() -> None:
    with pytest.raises(ValueError) as caught:
        coerce(ft.ResourceConfig.with_gpu("H100", count=0), ResourceConfig)
    assert type(caught.value) is ValueError and not isinstance(caught.value, ValidationError)
    assert "count 0" in str(caught.value) and "\n" not in str(caught.value)


def test_a_real_object_of_the_wrong_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="expected a ResourceConfig .* got CpuConfig"):
        coerce(ft.CpuConfig(), ResourceConfig)


def test_plan_of_a_real_job_equals_plan_of_ours() -> None:
    real = ft.JobRequest(
        name="j",
        entrypoint=ft.Entrypoint.from_binary("echo", ["hi"]),
        resources=ft.ResourceConfig.with_gpu("H100", count=8, replicas=2, regions=["us-east5"]),
    )
    ours = JobRequest(
        name="j",
        entrypoint=Entrypoint.from_binary("echo", ["hi"]),
        resources=ResourceConfig.with_gpu("H100", count=8, replicas=2, regions=["us-east5"]),
    )
    theirs_plan, our_plan = plan(real, user="alice"), plan(ours, user="alice")
    assert theirs_plan.request == our_plan.request
    assert theirs_plan.group_by == "leafgroup" and theirs_plan.replicas == 2
