"""The coscheduling SVG: groups -> tasks -> chips, colours per gang, collapsing, legend, escaping."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, plan
from fray_jupyter.planning import Plan
from fray_jupyter.views.diagram import INDEPENDENT, MAX_TASKS, NEVER, PALETTE, WIDTH, render_diagram_svg

SVG = "{http://www.w3.org/2000/svg}"


def _plan(resources: ResourceConfig) -> Plan:
    return plan(JobRequest(name="d", entrypoint=Entrypoint.from_binary("true"), resources=resources), user="u")


def _svg(resources: ResourceConfig) -> ET.Element:
    return ET.fromstring(render_diagram_svg(_plan(resources)))  # also proves it is well-formed XML


def _groups(svg: ET.Element) -> list[ET.Element]:
    return [g for g in svg.iter(f"{SVG}g") if g.get("class") == "fray-group"]


def _tasks(svg: ET.Element) -> list[str]:
    return [g.get("data-task", "") for g in svg.iter(f"{SVG}g") if g.get("class") == "fray-task"]


def _texts(svg: ET.Element) -> str:
    return " | ".join(t.text or "" for t in svg.iter(f"{SVG}text"))


def _chips(svg: ET.Element) -> list[str]:
    return [r.get("fill", "") for r in svg.iter(f"{SVG}rect") if r.get("class") == "fray-chip"]


def test_one_multi_vm_slice_is_one_gang() -> None:
    svg = _svg(ResourceConfig.with_tpu("v4-32"))
    groups = _groups(svg)
    assert len(groups) == 1 and groups[0].get("data-gang") == "true"
    assert _tasks(svg) == ["0", "1", "2", "3"] and _chips(svg) == [PALETTE[0]] * 16  # 4 chips per VM
    text = _texts(svg)
    assert "slice 0 · tasks 0-3 · one gang on one tpu-name" in text and "never" not in text
    assert "one gang: all its tasks start together on workers sharing one tpu-name" in text
    assert "one TPU chip (v4); a box is one task" in text
    assert svg.get("data-never") is None


def test_multi_slice_gang_is_one_gang_drawn_as_never_placed() -> None:
    """Iris 0.2.227 places a coscheduled job as ONE gang on one tpu-name: two v4-32 slices make one
    8-task gang no 4-VM slice can hold, not two gangs of 4."""
    svg = _svg(ResourceConfig.with_tpu("v4-32", slice_count=2))
    groups = _groups(svg)
    assert len(groups) == 1 and groups[0].get("data-gang") == "true"
    assert "tasks 0-7 · one gang on one tpu-name · never placed by Iris" in _texts(svg)
    assert set(_chips(svg)) == {NEVER} and svg.get("data-never") == "true"
    assert svg.get("data-groups") == "1" and svg.get("data-replicas") == "8"


def test_single_vm_slices_share_one_independent_row() -> None:
    svg = _svg(ResourceConfig.with_tpu("v5p-8", slice_count=3))
    assert len(_groups(svg)) == 1 and _groups(svg)[0].get("data-gang") == "false"
    assert _tasks(svg) == ["0", "1", "2"] and set(_chips(svg)) == {INDEPENDENT}
    assert "3 independent slices · each placed on its own" in _texts(svg)
    assert "no gang: each task is placed independently" in _texts(svg)


@pytest.mark.parametrize("slices", [1, 2, 5, 16, 64])
def test_one_to_sixty_four_slices_stay_readable(slices: int) -> None:
    svg = _svg(ResourceConfig.with_tpu("v5p-128", slice_count=slices))  # 16 VMs per slice
    groups = _groups(svg)
    assert len(groups) == 1
    assert len([g for g in groups[0].iter(f"{SVG}g") if g.get("class") in ("fray-task", "fray-more")]) == MAX_TASKS
    assert int(svg.get("width", 0)) == WIDTH and int(svg.get("height", 0)) < 600
    text = _texts(svg)
    assert f"… {slices * 16 - 5} more" in text  # tasks 0-3, … N more, the last task
    assert ("never placed by Iris" in text) == (slices > 1)


def test_nvl72_gangs_are_one_gang() -> None:
    sliced = _svg(ResourceConfig.with_gpu("GB200", count=4, replicas=32))
    assert len(_groups(sliced)) == 1
    assert "tasks 0-31 · one gang on one nvlink.domain.sliced" in _texts(sliced)
    assert "one GPU (GB200)" in _texts(sliced)
    one_rack = _svg(ResourceConfig.with_gpu("GB300", count=4, replicas=16))
    assert len(_groups(one_rack)) == 1 and "rack 0 · tasks 0-15 · one gang on one nvlink.domain" in _texts(one_rack)


def test_leafgroup_is_a_required_gang() -> None:
    """Iris's scheduler requires every task of a gang on one value of group_by (no 'preferred' gangs)."""
    svg = _svg(ResourceConfig.with_gpu("H100", count=8, replicas=2))
    assert "tasks 0-1 · one gang on one leafgroup" in _texts(svg)
    assert "workers sharing one leafgroup" in _texts(svg) and len(_chips(svg)) == 16


def test_many_gpus_per_task_are_counted_not_all_drawn() -> None:
    svg = _svg(ResourceConfig.with_gpu("H100", count=64))
    assert len(_chips(svg)) == 7 and "+57" in _texts(svg)


def test_cpu_tasks_show_cores_and_no_chip_legend() -> None:
    svg = _svg(ResourceConfig.with_cpu(cpu=0.5, replicas=1))
    assert _tasks(svg) == ["0"] and "0.5 cores" in _texts(svg) and "1 task · task 0" in _texts(svg)
    assert "chip" not in _texts(svg) and not _chips(svg)
    assert "1 core |" in _texts(_svg(ResourceConfig.with_cpu(replicas=2))) + " |"


def test_job_text_is_escaped() -> None:
    svg = render_diagram_svg(_plan(ResourceConfig.with_gpu("H<b>&", count=2)))
    assert "H<b>" not in svg and "H&lt;b&gt;&amp;" in svg
    ET.fromstring(svg)
