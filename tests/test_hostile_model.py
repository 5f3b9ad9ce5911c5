"""Hostile input to the resource model and ``plan()``: each bad value is refused with ONE plain
``ValueError`` line that names it (never pydantic's multi-line text, a traceback, or another
exception type), and what Fray accepts is read exactly as Fray reads it."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.config import ANY_REGION
from fray_jupyter.resources.devices import GpuConfig, TpuConfig
from fray_jupyter.resources.environment import EnvironmentConfig
from fray_jupyter.resources.sizes import parse_size
from tests.assertions import one_line_value_error

RUN = Entrypoint.from_binary("python", ["train.py"])


def planned(resources: ResourceConfig | None = None, **fields: Any) -> Any:
    """Build the job and plan it: some rules (ANY with regions, container profiles) live in plan()."""
    fields.setdefault("name", "train")
    job = JobRequest(entrypoint=RUN, resources=resources or ResourceConfig(), **fields)
    return plan(job, user="alice")


def env(**env_vars: Any) -> EnvironmentConfig:
    return EnvironmentConfig(workspace="/tmp", env_vars=env_vars)


# (id, what to build, fragments the one line must contain — the bad value, as the user wrote it)
CASES: list[tuple[str, Callable[[], Any], tuple[str, ...]]] = [
    # sizes
    ("ram-negative", lambda: ResourceConfig(ram="-1g"), ("ram", "'-1g'")),
    ("ram-exponent", lambda: ResourceConfig(ram="1e3"), ("ram", "'1e3'")),
    ("ram-empty", lambda: ResourceConfig(ram=""), ("ram", "''")),
    ("ram-nan", lambda: ResourceConfig(ram="nan"), ("'nan'",)),
    ("ram-inf", lambda: ResourceConfig(ram="inf"), ("'inf'",)),
    ("ram-huge", lambda: ResourceConfig(ram="9999999t"), ("'9999999t'", "out of range")),
    ("ram-words", lambda: ResourceConfig(ram="sixteen gigs"), ("'sixteen gigs'",)),
    ("ram-list", lambda: ResourceConfig(ram=[16]), ("ram", "[16]")),
    ("ram-float", lambda: ResourceConfig(ram=1.5), ("ram", "1.5")),
    ("disk-negative-zero", lambda: ResourceConfig(disk="-0"), ("disk", "'-0'")),
    ("disk-huge-int", lambda: ResourceConfig(disk=2**70), ("disk", str(2**70))),
    # counts
    ("cpu-zero", lambda: ResourceConfig(cpu=0), ("cpu 0",)),
    ("cpu-negative", lambda: ResourceConfig(cpu=-1), ("cpu -1",)),
    ("cpu-nan", lambda: ResourceConfig(cpu=math.nan), ("cpu nan",)),
    ("cpu-inf", lambda: ResourceConfig(cpu=math.inf), ("cpu inf",)),
    ("cpu-huge", lambda: ResourceConfig(cpu=1e12), ("cpu 1000000000000.0",)),
    ("cpu-text", lambda: ResourceConfig(cpu="lots"), ("cpu", "'lots'")),
    ("gpu-count-zero", lambda: ResourceConfig.with_gpu("H100", 0), ("GPU count 0",)),
    ("gpu-count-negative", lambda: ResourceConfig.with_gpu("H100", -1), ("GPU count -1",)),
    ("gpu-count-huge", lambda: ResourceConfig.with_gpu("H100", 10**9), ("GPU count 1000000000",)),
    ("gpu-count-fraction", lambda: ResourceConfig.with_gpu("H100", 1.5), ("count", "1.5")),
    ("slices-zero", lambda: ResourceConfig.with_tpu("v5p-8", slice_count=0), ("slice_count 0",)),
    ("slices-negative", lambda: ResourceConfig.with_tpu("v5p-8", slice_count=-1), ("slice_count -1",)),
    ("slices-bool", lambda: ResourceConfig.with_tpu("v5p-8", slice_count=True), ("slice_count True",)),
    ("slices-huge", lambda: ResourceConfig.with_tpu("v5p-8", slice_count=10**7), ("replicas 10000000",)),
    ("replicas-zero", lambda: ResourceConfig(replicas=0), ("replicas 0",)),
    ("replicas-negative", lambda: planned(replicas=-1), ("replicas -1",)),
    ("replicas-huge", lambda: planned(replicas=10**9), ("replicas 1000000000",)),
    ("retries-negative", lambda: planned(max_retries_failure=-1), ("max_retries_failure -1",)),
    ("retries-huge", lambda: planned(max_retries_failure=2**40), ("max_retries_failure 1099511627776",)),
    ("preemption-retries-negative", lambda: planned(max_retries_preemption=-3), ("max_retries_preemption -3",)),
    ("task-failures-negative", lambda: planned(max_task_failures=-1), ("max_task_failures -1",)),
    ("processes-zero", lambda: planned(processes_per_task=0), ("processes_per_task 0",)),
    ("priority-seven", lambda: planned(priority=7), ("priority 7",)),
    ("priority-negative", lambda: planned(priority=-1), ("priority -1",)),
    ("priority-huge", lambda: planned(priority=10**30), (str(10**30),)),
    ("priority-word", lambda: planned(priority="urgent"), ("'urgent'",)),
    ("timeout-negative", lambda: planned(timeout=-5), ("timeout -5",)),
    ("timeout-nan", lambda: planned(timeout=math.nan), ("timeout nan",)),
    ("timeout-inf", lambda: planned(timeout=math.inf), ("timeout inf",)),
    ("timeout-huge", lambda: planned(timeout=1e30), ("timeout 1e+30",)),
    # unknown types
    ("tpu-unknown", lambda: ResourceConfig.with_tpu("v9-8"), ("'v9-8'", "did you mean")),
    ("tpu-case", lambda: ResourceConfig.with_tpu("V5P-8"), ("'V5P-8'", "'v5p-8'")),
    ("tpu-empty", lambda: ResourceConfig.with_tpu(""), ("unknown TPU type ''",)),
    ("tpu-none", lambda: ResourceConfig.with_tpu(None), ("tpu_type", "None")),
    ("tpu-number", lambda: ResourceConfig.with_tpu(8), ("tpu_type", "8")),
    ("tpu-empty-list", lambda: ResourceConfig.with_tpu([]), ("tpu_type must be non-empty",)),
    ("tpu-config-unknown", lambda: TpuConfig("v5p-7"), ("'v5p-7'", "'v5p-8'")),
    ("gpu-spec-as-variant", lambda: ResourceConfig.with_gpu("H100 x8"), ("'H100 x8'",)),
    ("gpu-empty-variant", lambda: ResourceConfig.with_gpu(""), ("GPU variant ''",)),
    ("gpu-positional-count", lambda: GpuConfig("H100", 8), ("GpuConfig('H100', count=8)",)),
    ("device-kind", lambda: ResourceConfig(device={"kind": "fpga"}), ("'fpga'", "'cpu', 'gpu', 'tpu'")),
    ("device-text", lambda: ResourceConfig(device="tpu"), ("device", "'tpu'")),
    ("container-profile", lambda: planned(ResourceConfig(container_profile="superuser")), ("'superuser'",)),
    ("container-profile-type", lambda: ResourceConfig(container_profile=5), ("container_profile", "5")),
    ("unknown-field", lambda: ResourceConfig(gpus=8), ("gpus", "8")),
    # mixed-shape alternatives
    ("tpu-alternatives-vms", lambda: ResourceConfig.with_tpu(["v5p-8", "v5p-16"]), ("v5p-8 (1 VM", "v5p-16 (2 VM")),
    ("tpu-alternatives-chips", lambda: ResourceConfig.with_tpu(["v5litepod-4", "v5litepod-8"]),
     ("v5litepod-4", "v5litepod-8")),
    ("tpu-alternative-gpu", lambda: ResourceConfig.with_tpu(["v5p-8", "H100"]), ("'H100'",)),
    ("tpu-device-alternatives", lambda: ResourceConfig(device=TpuConfig("v4-8"), device_alternatives=["v4-32"]),
     ("v4-8 (1 VM", "v4-32 (4 VM")),
    ("gpu-alternatives-topology", lambda: planned(ResourceConfig.with_gpu(
        "H100", 4, replicas=20, device_alternatives=["GB200"])), ("H100=", "GB200=")),
    ("alternatives-bare-string", lambda: ResourceConfig(device_alternatives="v5p-8"), ("bare string 'v5p-8'",)),
    ("alternatives-empty-entry", lambda: ResourceConfig(device_alternatives=[""]), ("device_alternatives", "''")),
    # regions
    ("region-bare-string", lambda: ResourceConfig(regions="us-central1"), ("bare string 'us-central1'",)),
    ("region-empty-entry", lambda: ResourceConfig(regions=["", "us-east1"]), ("regions", "''")),
    ("region-blank-entry", lambda: ResourceConfig(regions=["  "]), ("regions", "'  '")),
    ("region-none-entry", lambda: ResourceConfig(regions=[None]), ("regions", "None")),
    ("region-any-with-others", lambda: planned(ResourceConfig(regions=[ANY_REGION, "us-central1"])),
     ("ANY_REGION", "'us-central1'")),
    # names
    ("name-space", lambda: planned(name="my job"), ("'my job'",)),
    ("name-slash", lambda: planned(name="a/b"), ("'a/b'",)),
    ("name-digits", lambda: planned(name="123"), ("'123'",)),
    ("name-300", lambda: planned(name="x" * 300), ("'" + "x" * 300 + "'", "256")),
    ("name-control", lambda: planned(name="bell\x07"), (r"'bell\x07'",)),
    ("name-nul", lambda: planned(name="a\x00b"), (r"'a\x00b'",)),
    ("name-rtl-override", lambda: planned(name="evil\u202egnp"), (r"'evil\u202egnp'",)),
    ("name-tab", lambda: planned(name="a\tb"), (r"'a\tb'",)),
    ("name-empty", lambda: planned(name=""), ("must not be empty",)),
    ("name-type", lambda: planned(name=5), ("name", "5")),
    # environment
    ("env-equals", lambda: env(**{"A=B": "1"}), ("'A=B'",)),
    ("env-nul-name", lambda: env(**{"A\x00": "1"}), (r"'A\x00'",)),
    ("env-empty-name", lambda: env(**{"": "1"}), ("name ''",)),
    ("env-nul-value", lambda: env(A="x\x00y"), ("variable A", "NUL")),
    ("env-value-type", lambda: env(A=5), ("env_vars.A", "5")),
    ("env-two-sources", lambda: EnvironmentConfig(workspace="/tmp", docker_image="img"), ("workspace", "docker_image")),
    ("entrypoint-empty-command", lambda: Entrypoint.from_binary("", []), ("empty string",)),
]


@pytest.mark.parametrize(("build", "fragments"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_each_bad_value_is_one_line_naming_it(build: Callable[[], Any], fragments: tuple[str, ...]) -> None:
    with pytest.raises(ValueError) as caught:
        build()
    message = one_line_value_error(caught, *fragments)
    for leak in ("Traceback", "pydantic", "errors.pydantic.dev", "For further information", "validation error"):
        assert leak not in message, message


def test_the_corpus_is_large_and_ids_are_unique() -> None:
    ids = [case[0] for case in CASES]
    assert len(ids) == len(set(ids)) and len(ids) >= 60


# -- what Fray accepts is read as Fray reads it ----------------------------------------------------------
@pytest.mark.parametrize(("size", "expected"), [
    ("16 gigs", 16 * 2**30), ("16g", 16 * 2**30), ("16GB", 16 * 2**30), ("16 GiB", 16 * 2**30), ("1.5g", 3 * 2**29),
    ("2048", 2048), (" 512m ", 512 * 2**20),
])
def test_sizes_fray_accepts_give_the_bytes_fray_sends(size: str, expected: int) -> None:
    """humanfriendly in binary mode, as Fray and Iris read ``ram``/``disk`` ("16 gigs" is 16 GiB)."""
    assert parse_size(size) == expected
    request = planned(ResourceConfig(ram=size, disk=size)).request
    assert request.resources.memory_bytes == request.resources.disk_bytes == expected
    from iris.cluster import types as iris_types
    assert iris_types.parse_memory_string(size) == expected


def test_the_longest_timeout_still_plans() -> None:
    longest = timedelta(days=timedelta.max.days)
    assert planned(timeout=longest.total_seconds()).request.timeout.milliseconds == longest // timedelta(milliseconds=1)
