"""Text and JSON renderings of a Plan."""

from __future__ import annotations

import json

from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, plan
from fray_jupyter.views.format import counted, flops, index_ranges, size
from fray_jupyter.views.text import render_json, render_text


def _plan(resources: ResourceConfig):  # type: ignore[no-untyped-def]
    return plan(JobRequest(name="v", entrypoint=Entrypoint.from_binary("true"), resources=resources), user="u")


def test_formatters() -> None:
    assert size(240518168576) == "224 GiB" and size(None) == "—"
    assert flops(3.672e15) == "3.67 PFLOP/s" and flops(None) == "—"
    assert index_ranges([0, 1, 2, 3, 5, 7, 8]) == "0-3, 5, 7-8" and index_ranges([]) == ""
    assert (counted(1, "failure"), counted(0, "failure"), counted(2, "more child job")) == (
        "1 failure", "0 failures", "2 more child jobs")


def test_text_shows_every_section() -> None:
    text = render_text(_plan(ResourceConfig.with_tpu("v5p-8", slice_count=2, regions=["*"])))
    for fragment in ("Replicas      2", "104 cores · 224 GiB RAM · 50 GiB disk · 4 × v5p-8", "8 chips",
                     "3.67 PFLOP/s", "Fray: region EXISTS", "wire: (none)", "(device)", "(iris-topology)",
                     "! regions=[ANY_REGION]", "LaunchJobRequest,"):
        assert fragment in text


def test_independent_tasks_are_one_line() -> None:
    text = render_text(_plan(ResourceConfig.with_tpu("v5p-8", slice_count=20)))
    assert "Coscheduling  none: 20 independent tasks\n" in text


def test_a_gang_larger_than_a_slice_is_an_error() -> None:
    text = render_text(_plan(ResourceConfig.with_tpu("v4-16", slice_count=20)))
    assert "Coscheduling  tpu-name: one gang of tasks 0-39\n" in text
    assert "Errors        ✗ a v4-16 slice has 2 VMs: this 40-task gang can never be placed by Iris 0.2.227" in text


def test_json_round_trips_the_figures() -> None:
    p = _plan(ResourceConfig.with_gpu("H100", count=8, replicas=2))
    document = json.loads(render_json(p))
    assert document["replicas"] == 2 and document["coscheduling"]["group_by"] == "leafgroup"
    assert document["request"]["name"] == "/u/v" and document["request_size"] == p.request_size
