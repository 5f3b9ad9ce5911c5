"""The HTML preview of a Plan: figures as sent, sections, change highlighting, escaping, errors."""

from __future__ import annotations

import re

import pytest

from fray_jupyter import ANY_REGION, Entrypoint, EnvironmentConfig, JobRequest, ResourceConfig, plan
from fray_jupyter.planning import Plan
from fray_jupyter.views.preview import changed_fields, render_error_html, render_preview_html


def _plan(resources: ResourceConfig, env: dict[str, str] | None = None, name: str = "train") -> Plan:
    environment = EnvironmentConfig(workspace=".", env_vars=env) if env else None
    return plan(JobRequest(name=name, entrypoint=Entrypoint.from_binary("python", ["train.py"]), resources=resources,
                           environment=environment), user="alice")


def _card(html: str, css: str) -> str:
    match = re.search(rf'<b class="{css}">([^<]*)</b>', html)
    assert match, css
    return match.group(1)


def _marked(html: str) -> list[str]:
    return re.findall(r"<mark>([^<]*)</mark>", html)


def test_tpu_figures_are_as_sent() -> None:
    html = render_preview_html(_plan(ResourceConfig.with_tpu("v4-32", slice_count=2, regions=["us-central2"])))
    assert _card(html, "fray-replicas") == "8" and _card(html, "fray-chips") == "32"
    assert _card(html, "fray-group-by") == "tpu-name"
    assert ">1 TiB</b><span>HBM in total" in html and ">8.8 PFLOP/s</b><span>peak bf16" in html
    assert "Per task, as sent: 120 cores · 200 GiB RAM · 50 GiB disk · 4 × v4-32" in html
    assert '<code class="fray-job-id">/alice/train</code>' in html
    assert 'class="fray-diagram"' in html and 'data-groups="1"' in html
    assert '<span class="fray-size">' in html and "replicas: 8" in html
    error = html[html.index('class="fray-error fray-placement-error"'):]
    assert 'role="alert">a v4-32 slice has 4 VMs: this 8-task gang can never be placed by Iris 0.2.227' in error


def test_constraints_fray_versus_wire_and_warnings() -> None:
    html = render_preview_html(_plan(ResourceConfig.with_tpu(["v5p-8", "v4-8"], regions=[ANY_REGION],
                                                             preemptible=False)))
    table = html[html.index('<table class="fray-constraints">'):]
    fray, wire = re.findall(r"<td>(.*?)</td>", table)[:2]
    assert fray.split("<br>") == ["preemptible EQ false", "region EXISTS", "device-variant IN [v5p-8, v4-8]"]
    assert wire.split("<br>") == ["preemptible EQ false", "device-variant IN [v5p-8, v4-8]"]
    assert '<ul class="fray-warnings"><li>regions=[ANY_REGION] sends no region constraint' in html


def test_cpu_preview_has_no_accelerator_figures() -> None:
    html = render_preview_html(_plan(ResourceConfig.with_cpu(replicas=3)))
    assert _card(html, "fray-replicas") == "3" and _card(html, "fray-chips") == "0"
    assert "HBM" not in html and "peak bf16" not in html and "Warnings" not in html
    assert "Per task, as sent: 1 core · 4 GiB RAM · 64 GiB disk<" in html
    assert '<table class="fray-constraints"><tr><th>Fray</th><th>on the wire</th></tr><tr><td><span' in html


def test_env_vars_with_sources_and_snippets() -> None:
    html = render_preview_html(_plan(ResourceConfig.with_tpu("v5p-8", slice_count=2), env={"WANDB_MODE": "offline"}))
    rows = dict(re.findall(r"<tr><td><code>([^<]*)</code></td><td><code>[^<]*</code></td>"
                           r'<td class="fray-dim">([^<]*)</td></tr>', html))
    assert rows == {"HF_DATASETS_TRUST_REMOTE_CODE": "iris", "IRIS_SLICE_COUNT": "iris-topology",
                    "IRIS_TASKS_PER_SLICE": "iris-topology", "JAX_PLATFORMS": "device", "LIBTPU_INIT_ARGS": "device",
                    "TOKENIZERS_PARALLELISM": "iris", "WANDB_MODE": "user"}
    assert ("resources = ResourceConfig.with_tpu(&quot;v5p-8&quot;, slice_count=2)" in html
            and "%%fray --tpu v5p-8 --slices 2 --name train -e WANDB_MODE offline" in html
            and "iris job run --job-name train --tpu v5p-8" in html)


def test_changes_since_the_previous_plan_are_highlighted() -> None:
    before = _plan(ResourceConfig.with_tpu("v4-32", slice_count=1))
    after = _plan(ResourceConfig.with_tpu("v4-32", slice_count=2))
    assert changed_fields(before.request, after.request) == ["environment.env_vars", "replicas"]
    html = render_preview_html(after, previous=before)
    assert "Changed by the last edit: <code>environment.env_vars, replicas</code>" in html
    assert "replicas: 8" in _marked(html) and '    key: &quot;IRIS_SLICE_COUNT&quot;' in _marked(html)
    assert not any("cpu_millicores" in line for line in _marked(html))
    assert _marked(render_preview_html(after)) == []
    assert "No change to the request." in render_preview_html(after, previous=after)


def test_json_toggle_highlights_too() -> None:
    before, after = _plan(ResourceConfig.with_cpu()), _plan(ResourceConfig.with_cpu(cpu=2))
    html = render_preview_html(after, previous=before, request_format="json")
    assert 'data-format="json"' in html and "· JSON ·" in html
    assert _marked(html) == ['    &quot;cpuMillicores&quot;: 2000,']
    with pytest.raises(ValueError, match="request_format 'yaml'"):
        render_preview_html(after, request_format="yaml")  # type: ignore[arg-type]


def test_hostile_job_text_is_escaped_everywhere() -> None:
    hostile = "<img src=x onerror=alert(1)>"
    html = render_preview_html(_plan(ResourceConfig.with_gpu("H100", count=1), env={"X<script>": hostile},
                                     name="a<b>"), request_format="json")
    assert "<img" not in html and "<script>" not in html and "a<b>" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html and "X&lt;script&gt;" in html


def test_long_request_lines_are_cut_for_display() -> None:
    job = JobRequest(name="call", entrypoint=Entrypoint.from_callable(print, args=("x" * 2000,)),
                     resources=ResourceConfig())
    html = render_preview_html(plan(job, user="alice"))
    assert re.search(r"… \(\d{4,} characters\)", html)


def test_error_names_the_control_and_greys_the_stale_preview() -> None:
    valid = render_preview_html(_plan(ResourceConfig()))
    html = render_error_html("ram 'lots' is not a size; use '16g'", control="RAM <b>", stale_html=valid)
    assert '<div class="fray-error" role="alert"><b>RAM &lt;b&gt;</b>: ram &#x27;lots&#x27; is not a size' in html
    assert "NOT what would be sent" in html and f'<div class="fray-stale">{valid}</div>' in html
    bare = render_error_html("boom", control=None)
    assert "fray-stale" not in bare.split("</style>")[1] and '<div class="fray-error" role="alert">boom</div>' in bare


def test_the_budget_lines_are_marked_by_band_and_escaped() -> None:
    from fray_jupyter.iris.budget import budget_picture
    from fray_jupyter.iris.proto import controller_pb2

    planned = plan(JobRequest(name="train", entrypoint=Entrypoint.from_binary("true", []),
                              resources=ResourceConfig.with_tpu("v5p-8")), user="<i>eve&")
    over = controller_pb2.Controller.GetUserBudgetResponse(budget_spent=10, budget_limit=5)
    html = render_preview_html(planned, budget=budget_picture(planned.request, over))
    assert '<div class="fray-budget" data-band="batch" data-over="true"><code>budget: ' in html
    assert "&lt;i&gt;eve&amp; has spent 10 of 5, over the limit" in html and "<i>eve" not in html
    unknown = render_preview_html(planned, budget=budget_picture(planned.request), style=False)
    assert 'data-band="unknown" data-over="false"' in unknown
    assert "fray-budget" not in render_preview_html(planned, style=False)
