"""Conformance of ``iris.budget`` with Iris's own budget code (marin-iris 0.2.227), called directly:
the resource value (``resource_value``), the accelerators a task's device counts
(``device_counts_from_json``), INHERIT's resolution (``resolve_priority_band``), the effective band
(``compute_effective_band``) and the scheduling order inside a band (``interleave_by_user``: where a
new job's first task lands is ``queued_ahead``). Nothing is started."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format
from hypothesis import given
from hypothesis import strategies as st
from iris.cluster import types as their_types
from iris.cluster.controller import budget as theirs
from iris.cluster.controller import codec
from iris.cluster.controller.ops import job as ops_job
from iris.rpc import job_pb2 as their_job

from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, plan
from fray_jupyter.iris import budget as ours
from fray_jupyter.iris.proto import job_pb2

J = job_pb2
BANDS = st.sampled_from(ours.BANDS)


@given(cpu=st.integers(0, 10**7), memory=st.integers(0, 2**45), chips=st.integers(0, 64))
def test_resource_value_is_irises(cpu: int, memory: int, chips: int) -> None:
    assert ours.resource_value(cpu, memory, chips) == theirs.resource_value(cpu, memory, chips)


def _their_device_json(device: J.DeviceConfig) -> str:
    their = their_job.DeviceConfig.FromString(device.SerializeToString())
    return json_format.MessageToJson(their, preserving_proto_field_name=True)


@pytest.mark.parametrize("device", [
    J.DeviceConfig(tpu=J.TpuDevice(variant="v5p-64", count=4)),
    J.DeviceConfig(tpu=J.TpuDevice(variant="v4-8")),
    J.DeviceConfig(gpu=J.GpuDevice(variant="H100", count=8)),
    J.DeviceConfig(gpu=J.GpuDevice(variant="H100")),
    J.DeviceConfig(cpu=J.CpuDevice(variant="cpu")),
    J.DeviceConfig(),
], ids=["v5p-64", "tpu-no-count", "h100x8", "gpu-no-count", "cpu", "none"])
def test_accelerators_are_what_iris_counts_per_task(device: J.DeviceConfig) -> None:
    counts = codec.device_counts_from_json(_their_device_json(device))
    assert ours.accelerators(device) == counts.gpu + counts.tpu


def test_a_v5p_64_job_is_8_tasks_of_4_chips_and_spends_what_iris_computes() -> None:
    request = plan(JobRequest(name="big", entrypoint=Entrypoint.from_binary("true", []),
                              resources=ResourceConfig.with_tpu("v5p-64")), user="alice").request
    res = request.resources
    counts = codec.device_counts_from_json(_their_device_json(res.device))
    per_task = theirs.resource_value(res.cpu_millicores, res.memory_bytes, counts.gpu + counts.tpu)
    picture = ours.budget_picture(request)
    assert (request.replicas, counts.tpu, picture.task_value) == (8, 4, per_task)
    assert picture.job_spend == 8 * per_task == 37_952


@pytest.mark.parametrize("requested", [J.PRIORITY_BAND_INHERIT, *ours.BANDS])
@pytest.mark.parametrize("parent", [None, *ours.BANDS])
def test_inherit_resolves_as_launch_job_does(requested: int, parent: int | None) -> None:
    assert ours.resolve_band(requested, parent) == ops_job.resolve_priority_band(requested, parent)


@given(band=BANDS, spent=st.integers(0, 10**6), limit=st.integers(-5, 10**6), has_row=st.booleans(),
       default=st.integers(0, 10**6))
def test_effective_band_is_irises(band: int, spent: int, limit: int, has_row: bool, default: int) -> None:
    rows = {"alice": limit} if has_row else {}
    defaults = their_types.UserBudgetDefaults(budget_limit=default)
    expected = theirs.compute_effective_band(band, "alice", {"alice": spent}, rows, defaults)
    assert ours.effective_band(band, spent, limit if has_row else default) == expected


USERS = ("alice", "bob", "carol", "dave")


@given(pending=st.dictionaries(st.sampled_from(USERS), st.integers(1, 6), max_size=4),
       spend=st.dictionaries(st.sampled_from(USERS), st.integers(0, 5), max_size=4),
       user=st.sampled_from(USERS))
def test_queued_ahead_is_where_irises_round_robin_puts_the_new_job(
        pending: dict[str, int], spend: dict[str, int], user: str) -> None:
    """Iris's order of one band's tasks (existing tasks oldest first, the new job's last), and the
    position of the new job's first task in it; ties of spend are where the order depends on which
    user's tasks came first, so a tie is counted as ahead (the most the new job can wait behind)."""
    tasks: list[Any] = [theirs.UserTask(user_id=u, task=(u, i)) for u, count in pending.items() for i in range(count)]
    tasks.append(theirs.UserTask(user_id=user, task=(user, "new")))
    order = theirs.interleave_by_user(tasks, spend)
    position = order.index((user, "new"))
    ahead = ours.queued_ahead(pending, spend, user)
    tied = sum(1 for other in pending if other != user and spend.get(other, 0) == spend.get(user, 0)
               and pending[other] > pending.get(user, 0))
    assert position <= ahead <= position + tied


@given(pending=st.lists(st.tuples(st.sampled_from(USERS), BANDS), max_size=20),
       spend=st.dictionaries(st.sampled_from(USERS), st.integers(0, 3), max_size=4))
def test_scheduling_order_is_irises_band_by_band_round_robin(pending: list[tuple[str, int]],
                                                              spend: dict[str, int]) -> None:
    """Iris's ``compute_scheduling_order`` on pending items oldest first: grouped by effective band in
    rank order, each band's items through ``interleave_by_user``."""
    by_band: dict[int, list[Any]] = {}
    for index, (user, band) in enumerate(pending):
        by_band.setdefault(band, []).append(theirs.UserTask(user_id=user, task=index))
    expected = [index for band in sorted(by_band, key=ours.band_rank)
                for index in theirs.interleave_by_user(by_band[band], spend)]
    assert ours.scheduling_order(pending, spend) == expected
