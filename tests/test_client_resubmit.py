"""``client.resubmit`` against the real embedded controller: the stored request sent again under
``-r2``, ``-r3`` or a given name, unchanged but for its name and run again; a cell's file, which no
controller returns, taken from what this machine kept when it sent it (``client.sent``); refused in one
line, with nothing sent, when the name is taken or a needed file was neither returned nor kept here."""

from __future__ import annotations

from pathlib import Path

import pytest

from fray_jupyter.client import sent
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import InvalidRequest
from fray_jupyter.client.resubmit import missing_files, resubmit
from fray_jupyter.client.sent import sent_dir
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.states import is_job_finished
from tests.controller_harness import launch_request
from tests.waiting import until


def _ended(client: FrayClient, job_id: str) -> J.JobStatus:
    def ended() -> J.JobStatus | None:
        status = client.status(job_id)
        return status if is_job_finished(status.state) else None

    return until(ended, f"{job_id} ending", feed=client)


def test_the_same_request_runs_again_under_a_fresh_name(client: FrayClient) -> None:
    request = launch_request("again", "echo ran-$MODE", max_retries_failure=2)
    request.environment.env_vars["MODE"] = "fast"
    first = client.submit(request)
    assert _ended(client, first).state == J.JOB_STATE_SUCCEEDED
    second = resubmit(client, first)
    assert second == "/alice/again-r2"
    assert _ended(client, second).state == J.JOB_STATE_SUCCEEDED
    sent, again = client.job(first).request, client.job(second).request
    again.name = sent.name
    assert again == sent  # nothing but the name changed
    lines = [entry.data for entry in client.logs(second).entries]
    assert "ran-fast" in lines
    assert resubmit(client, second) == "/alice/again-r3"  # the suffix is counted on, not stacked
    assert resubmit(client, first, "named-copy") == "/alice/named-copy"
    with pytest.raises(InvalidRequest, match="^.*/alice/named-copy already exists; give another name"):
        resubmit(client, first, "named-copy")
    with pytest.raises(InvalidRequest, match="one path component"):
        resubmit(client, first, "a/b")


def _cell_like(name: str) -> Controller.LaunchJobRequest:
    request = launch_request(name, "true")
    del request.entrypoint.run_command.argv[:]
    request.entrypoint.run_command.argv.extend(["bash", "-c", "exec $IRIS_PYTHON -u $IRIS_WORKDIR/_fray_cell.py"])
    request.entrypoint.workdir_files["_fray_cell.py"] = b"print('cell ran')\n"
    return request


def test_a_cell_s_file_comes_back_from_what_this_machine_kept(client: FrayClient, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    job = client.submit(_cell_like("cell-like"))
    assert missing_files(client.job(job).request) == ["_fray_cell.py"]  # the controller returns no payloads
    again = resubmit(client, job)
    assert _ended(client, again).state == J.JOB_STATE_SUCCEEDED
    assert "cell ran" in [entry.data for entry in client.logs(again).entries]
    assert [path.stat().st_mode & 0o777 for path in sent_dir().glob("*.pb")] == [0o600, 0o600]


def test_a_file_neither_returned_nor_kept_here_is_refused(client: FrayClient, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "elsewhere"))
    job = client.submit(_cell_like("sent-elsewhere"))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "here"))
    with pytest.raises(InvalidRequest, match=r"^cannot resubmit /alice/sent-elsewhere: its command runs _fray_cell.py"):
        resubmit(client, job)
    assert client.list(user="alice", name_filter="sent-elsewhere-r").jobs == ()


def test_kept_files_belong_to_one_command_and_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path))
    monkeypatch.setattr(sent, "MAX_KEPT", 2)
    entry = _cell_like("x").entrypoint
    for index in range(3):
        sent.keep("http://c", f"/u/j{index}", entry)
    assert sent.held("http://c", "/u/j0", entry.run_command.argv) == {}  # the oldest went
    assert sent.held("http://c", "/u/j2", entry.run_command.argv) == {"_fray_cell.py": b"print('cell ran')\n"}
    assert sent.held("http://c", "/u/j2", ["other"]) == {} and sent.held("http://other", "/u/j2", ["x"]) == {}
    sent.keep("http://c", "/u/none", J.RuntimeEntrypoint())  # no files: nothing kept
    assert len(list(sent_dir().glob("*.pb"))) == 2
