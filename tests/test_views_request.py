"""``views.request``: a stored ``LaunchJobRequest`` read back — command, setup, resources,
constraints, band, retries — with its environment shown as Iris shows it (secrets redacted), escaped."""

from __future__ import annotations

from fray_jupyter.iris.constraints import Constraint
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.redaction import REDACTED
from fray_jupyter.resources import ResourceConfig
from fray_jupyter.views.request import request_html, request_text
from tests.controller_harness import launch_request

XSS = "<img src=x onerror=alert(1)>"


def _request() -> Controller.LaunchJobRequest:
    request = launch_request("train", f"python train.py --note '{XSS}'",
                             resources=ResourceConfig.with_tpu("v5p-16"))
    request.constraints.append(Constraint("region", "EQ", ("us-central2",)).to_proto())
    request.environment.env_vars.update({"HF_TOKEN": "hf_abc", "MODE": "fast", "KEY": "sk-" + "a1B2" * 8})
    request.environment.secrets["WANDB_API_KEY"] = "wandb-secret"
    request.entrypoint.setup_commands.append("pip install -e .")
    request.priority_band = J.PRIORITY_BAND_BATCH
    request.submit_argv.extend(["iris", "job", "run", "-e", "HF_TOKEN", "ghp_" + "x1Y2z3" * 7, "--", "python"])
    return request


def test_what_was_sent_is_shown_with_its_secrets_redacted() -> None:
    request = _request()
    lines = request_text(request)
    text = "\n".join(lines)
    assert lines[0] == "request of /alice/train:"
    assert "command" in text and "sh -c 'python train.py --note" in text
    assert "setup 1" in text and "pip install -e ." in text
    assert "priority band" in text and "batch" in text
    assert "tpu v5p-16 (4 chips)" in text and "replicas        2" in text
    assert "constraint      region EQ us-central2" in text and "coscheduled by  tpu-name" in text
    assert "max_task_failures" in text
    assert f"HF_TOKEN={REDACTED}" in text and "MODE=fast" in text and f"KEY={REDACTED}" in text
    assert f"WANDB_API_KEY={REDACTED}" in text and "wandb-secret" not in text and "hf_abc" not in text
    assert "submitted with" in text and "x1Y2z3" not in text  # the submit command's token is redacted too
    html = request_html(request)
    assert "<img" not in html and "&lt;img" in html and "hf_abc" not in html
    assert html.startswith('<details class="fray-status fray-request">')
