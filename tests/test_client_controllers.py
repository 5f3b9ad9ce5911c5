"""One client test matrix against every controller the client must work with: a real Iris local
controller (Connect; logs from its finelog log service) and the embedded controller over both of
its transports (Connect URL and gRPC URL from its runtime file)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from fray_jupyter.client import (
    AuthenticationFailed,
    FrayClient,
    FrayError,
    JobNotFound,
)
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.proto.logging_pb2 import LogEntry
from fray_jupyter.iris.states import split_key
from fray_jupyter.planning import Plan, plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.environment import EnvironmentConfig
from fray_jupyter.runtime_file import ControllerInfo, read_runtime_file
from tests.real_iris import real_iris_controller
from tests.waiting import until

USER = "fray-test"
BACKENDS = ("real-iris", "embedded-connect", "embedded-grpc")


@pytest.fixture(scope="session")
def real_iris_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with real_iris_controller(tmp_path_factory.mktemp("real-iris")) as url:
        yield url


@pytest.fixture(scope="session")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerInfo]:
    state = tmp_path_factory.mktemp("embedded")
    runtime_file = state / "runtime.json"
    with (state / "controller.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "fray_jupyter.controller", "--host", "127.0.0.1", "--port", "0",
             "--grpc-port", "0", "--state-dir", str(state), "--runtime-file", str(runtime_file), "--slots", "4"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def started() -> ControllerInfo | None:
            if process.poll() is not None:
                pytest.fail(f"embedded controller did not start: {(state / 'controller.log').read_text()[-2000:]}")
            return read_runtime_file(runtime_file)

        yield until(started, "the embedded controller's runtime file")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(params=BACKENDS)
def client(request: pytest.FixtureRequest) -> Iterator[FrayClient]:
    if request.param == "real-iris":
        url, token = request.getfixturevalue("real_iris_url"), None
    else:
        info: ControllerInfo = request.getfixturevalue("embedded")
        url, token = (info.url if request.param == "embedded-connect" else info.grpc_url), info.token
    with FrayClient(url, token, timeout=10) as opened:
        yield opened


def _plan(tmp_path: Path, command: str, replicas: int = 2) -> Plan:
    job = JobRequest(
        name=f"t-{uuid.uuid4().hex[:8]}", entrypoint=Entrypoint.from_binary("sh", ["-c", command]),
        resources=ResourceConfig(cpu=1, ram="512m", disk="1g"), replicas=replicas,
        environment=EnvironmentConfig(workspace=str(tmp_path), setup_scripts=[]))
    return plan(job, user=USER)


def _wait_running(client: FrayClient, job_id: str) -> None:
    until(lambda: client.status(job_id).state == job_pb2.JOB_STATE_RUNNING, f"{job_id} running", feed=client)


def test_two_replica_job_runs_to_success_with_logs(client: FrayClient, tmp_path: Path,
                                                   request: pytest.FixtureRequest) -> None:
    job = _plan(tmp_path, "echo hello-$IRIS_TASK_ID; echo to-stderr >&2")
    job_id = client.submit(job)
    assert job_id == job.job_id

    followed = list(client.follow(job_id, timeout=30))
    final = client.wait(job_id, timeout=10)
    assert final.state == job_pb2.JOB_STATE_SUCCEEDED, final

    both = {f"{job_id}/0", f"{job_id}/1"}

    def complete(entries: Sequence[LogEntry]) -> bool:
        hello = {split_key(entry.key)[0] for entry in entries if entry.data.startswith("hello-")}
        return hello == both and any(entry.data == "to-stderr" for entry in entries)

    if request.node.callspec.params["client"] == "real-iris":
        # a genuine worker ships a task's lines on its own cadence: a follow that ended may miss the last ones, as
        # Iris's own `job run` does ("draining logs (total_lines=0)"); they are read once shipped
        followed = until(lambda: (entries := list(client.logs(job_id).entries)) and complete(entries) and entries,
                         f"every line of {job_id}")
    assert complete(followed), followed
    for entry in followed:
        if entry.data.startswith("hello-"):
            task_id, attempt = split_key(entry.key)
            assert entry.data.startswith(f"hello-{task_id}") and attempt == entry.attempt_id == 0
            assert entry.source == "stdout"
    assert all(entry.source == "stderr" for entry in followed if entry.data == "to-stderr")

    tasks_seen = client.tasks(job_id)
    assert [t.task_id for t in tasks_seen] == [f"{job_id}/0", f"{job_id}/1"]
    assert all(t.state == job_pb2.TASK_STATE_SUCCEEDED for t in tasks_seen)
    assert client.state([job_id]) == {job_id: job_pb2.JOB_STATE_SUCCEEDED}


def test_logs_page_by_cursor_tail_and_substring(client: FrayClient, tmp_path: Path) -> None:
    job_id = client.submit(_plan(tmp_path, "for i in 1 2 3 4 5; do echo line-$i; done", replicas=1))
    client.wait(job_id, timeout=30)
    everything = client.logs(job_id)
    lines = [entry.data for entry in everything.entries if entry.data.startswith("line-")]
    assert lines == [f"line-{i}" for i in range(1, 6)]

    assert client.logs(job_id, cursor=everything.cursor).entries == ()
    first = client.logs(job_id, max_lines=2)
    rest = client.logs(job_id, cursor=first.cursor)
    assert [e.data for e in first.entries + rest.entries] == [e.data for e in everything.entries]
    assert [e.data for e in client.logs(job_id, tail=True, max_lines=1).entries] == [everything.entries[-1].data]
    assert [e.data for e in client.logs(job_id, substring="line-3").entries] == ["line-3"]


def test_logs_filter_by_level_page_back_and_read_whole(client: FrayClient, tmp_path: Path,
                                                        request: pytest.FixtureRequest) -> None:
    """Levels as Iris gives them (stdout INFO, stderr ERROR, a glog prefix wins); ``before`` pages
    back from a cursor; ``log_pages`` reads every row once, oldest first."""
    script = "echo info-1; echo W0101 warn-2 >&2; echo err-3 >&2; for i in $(seq 4 30); do echo row-$i; done"
    job_id = client.submit(_plan(tmp_path, script, replicas=1))
    client.wait(job_id, timeout=30)
    everything = [e for e in client.logs(job_id).entries if e.data.split("-")[0] in ("info", "W0101 warn", "err", "row")]
    assert len(everything) == 30
    assert [e.data for e in client.logs(job_id, min_level="warning").entries] == ["W0101 warn-2", "err-3"]
    assert [e.data for e in client.logs(job_id, min_level="ERROR").entries] == ["err-3"]
    with pytest.raises(ValueError, match="'LOUD' is not a log level; use one of DEBUG, INFO, WARNING, ERROR, CRITICAL"):
        client.logs(job_id, min_level="LOUD")
    paged = [e.data for page in client.log_pages(job_id, page_lines=7) for e in page.entries]
    assert paged == [e.data for e in client.logs(job_id).entries]
    if request.node.callspec.params["client"] == "embedded-grpc":
        with pytest.raises(FrayError, match="needs the log service, served over Connect only"):
            client.logs(job_id, before=everything[10].seq)
        return
    older = client.logs(job_id, before=everything[10].seq, tail=True, max_lines=4)
    assert [e.data for e in older.entries] == [e.data for e in everything[6:10]]


def test_list_filters_and_pages(client: FrayClient, tmp_path: Path) -> None:
    job_id = client.submit(_plan(tmp_path, "true", replicas=1))
    client.wait(job_id, timeout=30)
    page = client.list(user=USER, name_filter=job_id.rsplit("/", 1)[1].upper())
    assert [job.job_id for job in page.jobs] == [job_id] and page.total == 1 and not page.has_more
    assert job_id in {job.job_id for job in client.list(user=USER, state="succeeded", limit=500).jobs}
    assert job_id not in {job.job_id for job in client.list(user=USER, state="running", limit=500).jobs}
    first = client.list(user=USER, limit=1, sort="name", descending=False)
    assert len(first.jobs) == 1 and first.total >= 1 and first.has_more == (first.total > 1)


def test_terminate_kills_a_running_job(client: FrayClient, tmp_path: Path) -> None:
    job_id = client.submit(_plan(tmp_path, "sleep 120"))
    _wait_running(client, job_id)
    client.terminate(job_id)
    final = client.wait(job_id, timeout=10)
    assert final.state == job_pb2.JOB_STATE_KILLED, final
    client.terminate(job_id)  # terminating a finished job is harmless


def test_resubmitting_with_keep_returns_the_same_job(client: FrayClient, tmp_path: Path) -> None:
    job = _plan(tmp_path, "true", replicas=1)
    assert client.submit(job) == client.submit(job) == job.job_id
    client.wait(job.job_id, timeout=30)
    assert client.list(user=USER, name_filter=job.job_id.rsplit("/", 1)[1]).total == 1


def test_unknown_job_is_job_not_found(client: FrayClient) -> None:
    missing = f"/{USER}/no-such-job-{uuid.uuid4().hex[:6]}"
    for verb in (client.status, client.terminate, lambda job_id: client.state([job_id])):
        with pytest.raises(JobNotFound) as caught:
            verb(missing)
        message = str(caught.value)
        assert missing in message and client.url in message and "\n" not in message


@pytest.mark.parametrize("transport", ["url", "grpc_url"])
@pytest.mark.parametrize("token", ["wrong-token", "truncated"])
def test_embedded_controller_refuses_a_bad_token(embedded: ControllerInfo, transport: str, token: str) -> None:
    """A wrong token is refused even from the controller's own OS user (who may send none)."""
    token = embedded.token[:-1] if token == "truncated" else token
    url = getattr(embedded, transport)
    with FrayClient(url, token, timeout=5) as client, pytest.raises(AuthenticationFailed) as caught:
        client.list()
    assert url in str(caught.value) and "\n" not in str(caught.value)
