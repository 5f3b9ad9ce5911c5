"""Gang scheduling: Fray's ``resolve_coscheduling``, the NVL72 rack rules, and the
concrete task groups a plan shows."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fray_jupyter.iris.coscheduling import (
    CoschedulingConfig,
    gpu_gang_coscheduling_level,
    rack_slice_size,
    resolve_coscheduling,
    task_groups,
)
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.resources import GpuConfig, ResourceConfig, TpuConfig

RC = ResourceConfig
SUB_NODE = "sliced multi-rack placement requires node-saturating NVL72 pods (4 GPUs each); got {}"


def group_by(rc: ResourceConfig, replicas: int) -> str | None:
    config = resolve_coscheduling(rc, replicas)
    return None if config is None else config.group_by


@pytest.mark.parametrize(
    ("rc", "replicas", "expected"),
    [
        (RC(), 1, None),
        (RC(), 8, None),  # CPU never coschedules
        (RC.with_tpu("v4-32"), 1, None),  # replicas <= 1 (Iris then adjusts 1 -> 4)
        (RC.with_tpu("v4-32"), 4, "tpu-name"),
        (RC.with_tpu("v4-32"), 8, "tpu-name"),
        (RC.with_tpu("v5litepod-16"), 4, "tpu-name"),
        (RC.with_tpu("v5p-8"), 2, None),  # single-VM slices are independent (PR #5226)
        (RC.with_tpu("v6e-8"), 5, None),
        (RC.with_gpu("H100", count=8), 1, None),
        (RC.with_gpu("H100", count=8), 2, "leafgroup"),
        (RC.with_gpu("A100", count=1), 70, "leafgroup"),
        (RC.with_gpu("auto", count=8), 3, "leafgroup"),
        (RC.with_gpu("GB200", count=4), 2, "nvlink.domain"),
        (RC.with_gpu("GB200", count=4), 16, "nvlink.domain"),
        (RC.with_gpu("GB200", count=1), 16, "nvlink.domain"),  # one rack takes any pod size
        (RC.with_gpu("GB200", count=4), 20, "nvlink.domain.sliced"),
        (RC.with_gpu("GB200", count=4), 32, "nvlink.domain.sliced"),
        (RC.with_gpu("GB200", count=4), 64, "nvlink.domain.sliced"),
        (RC.with_gpu("gb300", count=4), 48, "nvlink.domain.sliced"),  # case-insensitive
        (RC.with_gpu("GB200", count=4, device_alternatives=["GB300"]), 32, "nvlink.domain.sliced"),
        (RC.with_gpu("H100", count=8, device_alternatives=["A100", "H200"]), 4, "leafgroup"),
        (RC.with_gpu("GB200", count=4, device_alternatives=["H100"]), 1, None),  # no gang, no check
    ],
)
def test_resolve_coscheduling(rc: ResourceConfig, replicas: int, expected: str | None) -> None:
    assert group_by(rc, replicas) == expected


@pytest.mark.parametrize(
    ("rc", "replicas", "message"),
    [
        (RC.with_gpu("GB200", count=1), 32, SUB_NODE.format(1)),
        (RC.with_gpu("GB200", count=2), 20, SUB_NODE.format(2)),
        (RC.with_gpu("GB200", count=8), 32, SUB_NODE.format(8)),
        (
            RC.with_gpu("GB200", count=4, device_alternatives=["H100"]),
            32,
            "GPU alternatives must share one coscheduling topology; got GB200=nvlink.domain.sliced, H100=leafgroup",
        ),
        (
            RC.with_gpu("GB200", count=4, device_alternatives=["H100"]),
            2,
            "GPU alternatives must share one coscheduling topology; got GB200=nvlink.domain, H100=leafgroup",
        ),
        (
            RC.with_gpu("H100", count=4, device_alternatives=["GB300"]),
            20,
            "GPU alternatives must share one coscheduling topology; got H100=leafgroup, GB300=nvlink.domain.sliced",
        ),
    ],
)
def test_coscheduling_errors_exact_text(rc: ResourceConfig, replicas: int, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        resolve_coscheduling(rc, replicas)
    assert str(caught.value) == message


@pytest.mark.parametrize("replicas", [17, 18, 19, 25, 31, 35, 40])
def test_uneven_or_thin_rack_splits_are_errors_naming_the_gang(replicas: int) -> None:
    # 40 would fit 4 racks of 10, but Iris splits over the fewest racks (3), as coreweave_topology does.
    with pytest.raises(ValueError) as caught:
        resolve_coscheduling(RC.with_gpu("GB200", count=4), replicas)
    assert str(replicas) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize(("replicas", "size"), [(20, 10), (22, 11), (32, 16), (33, 11), (48, 16), (64, 16)])
def test_rack_slice_size(replicas: int, size: int) -> None:
    assert rack_slice_size(4, replicas) == size


@given(replicas=st.integers(min_value=17, max_value=400))
@settings(max_examples=200, deadline=None, database=None)
def test_rack_slices_are_balanced_and_more_than_half_a_rack(replicas: int) -> None:
    try:
        size = rack_slice_size(4, replicas)
    except ValueError:
        racks = -(-replicas // 16)
        assert replicas % racks or replicas // racks < 10
        return
    assert 10 <= size <= 16 and replicas % size == 0


def test_gpu_level_helper() -> None:
    assert gpu_gang_coscheduling_level("H100", 8, 1000) == "leafgroup"
    assert gpu_gang_coscheduling_level("GB200-NVL", 4, 16) == "nvlink.domain"
    assert gpu_gang_coscheduling_level("Gb300", 4, 32) == "nvlink.domain.sliced"
    assert gpu_gang_coscheduling_level("B200", 1, 64) == "leafgroup"  # B200 is not an NVL72 part


def test_coscheduling_config_wire_form() -> None:
    assert CoschedulingConfig("tpu-name").to_proto() == job_pb2.CoschedulingConfig(group_by="tpu-name")


# -- task groups ------------------------------------------------------------------------------------


def groups_of(rc: ResourceConfig, replicas: int) -> list[tuple[tuple[int, ...], bool, bool]]:
    groups = task_groups(rc, replicas, resolve_coscheduling(rc, replicas))
    return [(g.tasks, g.gang, g.hard) for g in groups]


def test_a_multi_slice_tpu_job_is_one_gang_not_one_per_slice() -> None:
    """Iris 0.2.227: a coscheduled job is ONE gang on one tpu-name (its scheduler places it at once)."""
    assert groups_of(RC.with_tpu("v4-32"), 8) == [(tuple(range(8)), True, True)]
    assert groups_of(RC.with_tpu("v4-32"), 4) == [((0, 1, 2, 3), True, True)]


def test_single_vm_tpu_slices_are_independent() -> None:
    assert groups_of(RC.with_tpu("v5p-8"), 3) == [
        ((0,), False, False),
        ((1,), False, False),
        ((2,), False, False),
    ]


def test_nvl72_gangs_are_one_gang() -> None:
    assert groups_of(RC.with_gpu("GB200", count=4), 32) == [(tuple(range(32)), True, True)]
    assert groups_of(RC.with_gpu("GB200", count=4), 16) == [(tuple(range(16)), True, True)]


def test_leafgroup_is_one_required_gang() -> None:
    assert groups_of(RC.with_gpu("H100", count=8), 3) == [((0, 1, 2), True, True)]


def test_uncoscheduled_tasks_are_singletons() -> None:
    assert groups_of(RC(), 3) == [((0,), False, False), ((1,), False, False), ((2,), False, False)]
    assert groups_of(RC.with_gpu("H100", count=8), 1) == [((0,), False, False)]


def test_group_labels() -> None:
    assert [g.label for g in task_groups(RC.with_tpu("v4-16"), 2, CoschedulingConfig("tpu-name"))] == ["slice 0"]
    assert [g.label for g in task_groups(RC.with_tpu("v4-16"), 4, CoschedulingConfig("tpu-name"))] == ["tpu-name"]
    assert [g.label for g in task_groups(RC.with_gpu("GB200", count=4), 8, CoschedulingConfig("nvlink.domain"))] == [
        "rack 0"]
    assert [g.label for g in task_groups(RC.with_tpu("v5p-8"), 2, None)] == ["slice 0", "slice 1"]


def test_a_direct_multi_vm_tpu_with_one_requested_replica_is_not_ganged() -> None:
    """Fray resolves coscheduling before Iris raises replicas 1 -> vm_count, so nothing is sent;
    Iris then places the slice's 4 tasks independently."""
    rc = RC(device=TpuConfig("v4-32"))
    assert resolve_coscheduling(rc, 1) is None
    assert [(g.tasks, g.gang) for g in task_groups(rc, 4, None)] == [((i,), False) for i in range(4)]


def test_gpu_config_positional_in_groups() -> None:
    rc = RC(device=GpuConfig("H100", "gpu", 8), replicas=2)
    assert groups_of(rc, 2) == [((0, 1), True, True)]
