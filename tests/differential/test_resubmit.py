"""Resubmit (``client.resubmit``) on the embedded controller and on a genuine Iris (the twin): the
stored request comes back the same on both (but for the redaction Iris applies to a stored request's
environment), is sent again under ``-r2`` and runs again on both; and where the twin returned a value
redacted, resubmit refuses in one line naming it, sending nothing, rather than send ``[REDACTED]``."""

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


def test_a_value_the_twin_returns_redacted_is_never_resent(twin: FrayClient, embedded: FrayClient) -> None:
    request = launch_request("with-token", "true", user=USER)
    request.environment.env_vars.update({"HF_TOKEN": "hf_not_for_display", "MODE": "fast"})
    job = twin.submit(request)
    stored = twin.job(job).request.environment
    assert dict(stored.env_vars)["HF_TOKEN"] == REDACTED  # Iris redacts a stored request's env
    assert redact_env(request.environment.env_vars, {})[0] == {
        name: value for name, value in stored.env_vars.items() if name in request.environment.env_vars}
    with pytest.raises(ResubmitRefused, match=r"^cannot resubmit /resubmit/with-token: the controller returned the "
                                              r"values of HF_TOKEN redacted"):
        resubmit(twin, job)
    assert [j.job_id for j in twin.list(user=USER, name_filter="with-token-r").jobs] == []
    # the embedded controller returns the request as sent (a listed difference: Iris redacts it), so there
    # resubmit sends the real value; what the panel shows is redacted on both (views.request)
    kept = embedded.submit(request)
    assert dict(embedded.job(kept).request.environment.env_vars)["HF_TOKEN"] == "hf_not_for_display"
    assert "HF_TOKEN=[REDACTED]" in "\n".join(request_text(embedded.job(kept).request))
