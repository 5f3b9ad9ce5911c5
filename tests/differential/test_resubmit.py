"""Resubmit (``client.resubmit``) on the embedded controller and on a genuine Iris (the twin): the
stored request comes back the same on both, its environment redacted as Iris redacts it, is sent again
under ``-r2`` and runs again on both; and where a value came back redacted, resubmit refuses in one line
naming it, sending nothing, rather than send ``[REDACTED]``."""

from __future__ import annotations

import pytest

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.resubmit import ResubmitRefused, resubmit
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.redaction import REDACTED, redact_env
from fray_jupyter.views.request import request_text
from tests.controller_harness import launch_request

USER = "resubmit"


def test_a_job_runs_again_under_a_fresh_name_on_both(twin: FrayClient, embedded: FrayClient) -> None:
    shown = {}
    for client in (twin, embedded):
        request = launch_request("again", "echo ran-$MODE", user=USER)
        request.environment.env_vars["MODE"] = "fast"
        first = client.submit(request)
        assert client.wait(first, timeout=120).state == J.JOB_STATE_SUCCEEDED
        second = resubmit(client, first)
        assert second == f"/{USER}/again-r2"
        assert client.wait(second, timeout=120).state == J.JOB_STATE_SUCCEEDED
        sent, again = client.job(first).request, client.job(second).request
        again.name = sent.name
        assert again == sent, client.url
        shown[client.url] = request_text(sent)
    assert shown[twin.url] == shown[embedded.url]  # what the panel shows of it, the same on both


def test_a_value_returned_redacted_is_never_resent_on_either(twin: FrayClient, embedded: FrayClient) -> None:
    request = launch_request("with-token", "true", user=USER)
    request.environment.env_vars.update({"HF_TOKEN": "hf_not_for_display", "MODE": "fast"})
    request.environment.secrets["WANDB_API_KEY"] = "wandb-secret"
    stored = {}
    for client in (twin, embedded):
        job = client.submit(request)
        environment = client.job(job).request.environment
        stored[client.url] = (dict(environment.env_vars), dict(environment.secrets))
        with pytest.raises(ResubmitRefused, match=r"^cannot resubmit /resubmit/with-token(-\d+)?: the controller "
                                                  r"returned the values of HF_TOKEN, WANDB_API_KEY redacted"):
            resubmit(client, job)
        assert [j.job_id for j in client.list(user=USER, name_filter="with-token-r").jobs] == []
    # Iris redacts a stored request's environment; so does the embedded controller, by the same rule
    assert stored[twin.url] == stored[embedded.url] == redact_env(request.environment.env_vars,
                                                                  request.environment.secrets)
    assert (stored[twin.url][0]["HF_TOKEN"], stored[twin.url][0]["MODE"]) == (REDACTED, "fast")
