"""``%fray resubmit`` and ``%fray status --request`` in a real IPython shell against a real embedded
controller: the request read back with its secrets redacted, the job sent again under ``-r2`` with
its panel shown, and a cell job sent again with its cell."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from fray_jupyter.client import FrayClient
from fray_jupyter.magics import ControllerError
from fray_jupyter.widgets.status import JobStatusPanel
from tests.controller_harness import ControllerProcess, launch_request
from tests.jupyter_isolation import magics_controller, magics_shell

USER = "resubmitter"


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    with magics_controller(tmp_path_factory.mktemp("magics-resubmit"), USER) as process:
        yield process


@pytest.fixture(scope="module")
def ip(controller: ControllerProcess) -> InteractiveShell:
    return magics_shell()


def test_the_request_is_shown_and_the_job_resubmitted(ip: InteractiveShell, client: FrayClient) -> None:
    request = launch_request("sent-once", "echo $GREETING", user=USER)
    request.environment.env_vars["GREETING"] = "hello"
    job = client.submit(request)
    client.wait(job, timeout=60)
    with capture_output() as captured:
        assert ip.run_line_magic("fray", "status sent-once --request") is None
    (shown,) = captured.outputs
    text = shown.data["text/plain"]
    assert text.startswith(f"request of /{USER}/sent-once:") and "GREETING=hello" in text
    with capture_output() as captured:
        panel = ip.run_line_magic("fray", "resubmit sent-once")
    assert captured.stdout.strip() == f"resubmitted /{USER}/sent-once as /{USER}/sent-once-r2"
    assert isinstance(panel, JobStatusPanel) and panel.job_id == f"/{USER}/sent-once-r2"
    assert panel.join(timeout=60) and panel.state == "succeeded"
    assert "hello" in panel.lines[-1]


def test_a_secret_is_shown_redacted_and_never_resent(ip: InteractiveShell, client: FrayClient) -> None:
    request = launch_request("with-secret", "true", user=USER)
    request.environment.env_vars["HF_TOKEN"] = "hf_secret_value"
    client.wait(client.submit(request), timeout=60)
    with capture_output() as captured:
        assert ip.run_line_magic("fray", "status with-secret --request") is None
    (shown,) = captured.outputs
    assert "HF_TOKEN=[REDACTED]" in shown.data["text/plain"] and "hf_secret_value" not in shown.data["text/html"]
    with pytest.raises(ControllerError, match="returned the values of HF_TOKEN redacted") as raised:
        ip.run_line_magic("fray", "resubmit with-secret")
    assert "re-run the cell" in str(raised.value)


def test_a_cell_job_runs_again_with_its_cell(ip: InteractiveShell) -> None:
    with capture_output():
        ip.run_cell_magic("fray", "--wait --name a-cell", "print('cell ran')\n")
    with capture_output() as captured:
        panel = ip.run_line_magic("fray", "resubmit a-cell --name a-cell-again")
    assert captured.stdout.strip() == f"resubmitted /{USER}/a-cell as /{USER}/a-cell-again"
    assert panel.join(timeout=60) and panel.state == "succeeded" and panel.lines == ["[0] cell ran"]
    with pytest.raises(ControllerError) as raised:
        ip.run_line_magic("fray", "resubmit a-cell --name a-cell-again")
    assert str(raised.value).count("already exists; give another name") == 1
