"""client: verbs build the right requests, retry only what is safe to resend, and poll with
backoff. Uses a scripted in-memory transport registered for the ``fake://`` scheme."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any, ClassVar

import pytest
from google.protobuf.message import Message

from fray_jupyter.client import client as client_module
from fray_jupyter.client import retry
from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import ControllerUnreachable, FrayError, JobNotFound, RpcFailed, error_for
from fray_jupyter.client.logs import LogQuery, from_fetch_logs, log_line
from fray_jupyter.client.transport import TRANSPORTS
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.proto.logging_pb2 import LogEntry
from fray_jupyter.planning import Plan, plan
from fray_jupyter.resources import Entrypoint, JobRequest
from fray_jupyter.resources.environment import EnvironmentConfig
from tests.instant_clock import InstantClock

URL = "fake://controller"
Reply = Message | FrayError | Callable[[Message], Message]


class FakeTransport:
    """Answers each method from a per-method script (the last reply repeats); records requests."""

    script: ClassVar[dict[str, list[Reply]]] = {}
    calls: ClassVar[list[tuple[str, Message]]] = []
    kind, local, json_calls = "fake", True, False  # a controller on this machine, unary calls only

    def __init__(self, url: str, token: str | None = None, *, headers: Any = None) -> None:
        self.url = url

    def call(self, method: str, request: Message, response_type: type[Any], timeout: float, service: str = "") -> Any:
        FakeTransport.calls.append((method, request))
        replies = FakeTransport.script[method]
        reply = replies.pop(0) if len(replies) > 1 else replies[0]
        if isinstance(reply, FrayError):
            raise reply
        return reply(request) if callable(reply) else reply

    def close(self) -> None:
        pass


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[FrayClient]:
    """A client of the scripted transport, its retries timed by an ``InstantClock``: on the wall clock a
    loaded machine's stall between two sends could use up the 0.5 s budget and end a retry early."""
    monkeypatch.setitem(TRANSPORTS, "fake", FakeTransport)
    monkeypatch.setattr(retry, "CLOCK", InstantClock())
    monkeypatch.setattr(client_module, "LOG_DRAIN_GRACE", 0.001)
    FakeTransport.script, FakeTransport.calls = {}, []
    with FrayClient(URL, retry_for=0.5) as opened:
        yield opened


def unavailable(retryable: bool = True) -> FrayError:
    error = error_for("unavailable", "restarting", url=URL, method="x")
    error.retryable = retryable
    return error


def methods() -> list[str]:
    return [method for method, _ in FakeTransport.calls]


def states(*names: str) -> list[Reply]:
    return [Controller.GetJobStateResponse(states={"/u/j": getattr(job_pb2, f"JOB_STATE_{n}")}) for n in names]


def _plan(tmp_path: Path, policy: str) -> Plan:
    job = JobRequest(name="j", entrypoint=Entrypoint.from_binary("true"),
                     environment=EnvironmentConfig(workspace=str(tmp_path), setup_scripts=[]))
    return plan(job, user="u", existing_job_policy=policy)


def test_idempotent_calls_retry_while_unavailable(client: FrayClient) -> None:
    status = Controller.GetJobStatusResponse(job=job_pb2.JobStatus(job_id="/u/j"))
    FakeTransport.script["GetJobStatus"] = [unavailable(), unavailable(), status]
    assert client.status("/u/j").job_id == "/u/j"
    assert methods() == ["GetJobStatus"] * 3


def test_retries_stop_at_the_deadline(client: FrayClient) -> None:
    """A local controller's policy: back off about doubling (within its jitter) while the next
    retry still starts within ``retry_for``; then raise, with the job named."""
    clock = retry.CLOCK
    assert isinstance(clock, InstantClock)
    FakeTransport.script["GetJobStatus"] = [unavailable()]
    with pytest.raises(ControllerUnreachable) as caught:
        client.status("/u/j")
    slept, policy = clock.slept, client.policy
    assert policy.first_ms == retry.LOCAL.first_ms and policy.budget_ms == 500
    assert len(slept) >= 2 and sum(slept) <= policy.budget_ms < sum(slept) + slept[-1] * 3
    assert all(later / earlier <= 2 * (1 + policy.jitter) / (1 - policy.jitter) for earlier, later in pairwise(slept))
    assert methods() == ["GetJobStatus"] * (len(slept) + 1) and caught.value.job_id == "/u/j"


def test_not_retryable_errors_are_raised_at_once_with_the_job(client: FrayClient) -> None:
    FakeTransport.script["GetJobStatus"] = [unavailable(retryable=False)]
    with pytest.raises(ControllerUnreachable):
        client.status("/u/j")
    FakeTransport.script["TerminateJob"] = [error_for("not_found", "Job /u/x not found", url=URL, method="TerminateJob")]
    with pytest.raises(JobNotFound, match=r"^job /u/x not found on fake://controller"):
        client.terminate("/u/x")
    assert methods() == ["GetJobStatus", "TerminateJob"]


def test_launch_is_resent_only_under_keep(client: FrayClient, tmp_path: Path) -> None:
    FakeTransport.script["LaunchJob"] = [unavailable(), Controller.LaunchJobResponse(job_id="/u/j")]
    assert client.submit(_plan(tmp_path, "keep")) == "/u/j"
    assert methods() == ["LaunchJob", "LaunchJob"]
    assert FakeTransport.calls[0][1] == _plan(tmp_path, "keep").request

    FakeTransport.calls.clear()
    FakeTransport.script["LaunchJob"] = [Controller.LaunchJobResponse(job_id="/u/j")]
    bare = _plan(tmp_path, "keep").request  # a LaunchJobRequest is sent as is, without a Plan
    assert client.submit(bare) == "/u/j" and FakeTransport.calls[0][1] == bare

    for policy in ("error", "recreate"):
        FakeTransport.calls.clear()
        FakeTransport.script["LaunchJob"] = [unavailable(), Controller.LaunchJobResponse(job_id="/u/j")]
        with pytest.raises(ControllerUnreachable):
            client.submit(_plan(tmp_path, policy))
        assert methods() == ["LaunchJob"]


def test_wait_polls_the_light_state_then_returns_full_status(client: FrayClient) -> None:
    FakeTransport.script["GetJobState"] = states("PENDING", "RUNNING", "RUNNING", "SUCCEEDED")
    FakeTransport.script["GetJobStatus"] = [Controller.GetJobStatusResponse(
        job=job_pb2.JobStatus(job_id="/u/j", state=job_pb2.JOB_STATE_SUCCEEDED))]
    assert client.wait("/u/j", timeout=5).state == job_pb2.JOB_STATE_SUCCEEDED
    assert methods() == ["GetJobState"] * 4 + ["GetJobStatus"]


def test_wait_times_out(client: FrayClient) -> None:
    FakeTransport.script["GetJobState"] = states("RUNNING")
    with pytest.raises(TimeoutError, match="job /u/j not finished after 0.2 s"):
        client.wait("/u/j", timeout=0.2)


def test_state_of_an_unknown_job_is_job_not_found(client: FrayClient) -> None:
    FakeTransport.script["GetJobState"] = [Controller.GetJobStateResponse()]  # what a real Iris answers
    with pytest.raises(JobNotFound, match="/u/nope"):
        client.state(["/u/nope"])


def _log_page(cursor: int, *lines: str) -> Controller.GetTaskLogsResponse:
    entries = [LogEntry(data=line, key="/u/j/0:0") for line in lines]
    return Controller.GetTaskLogsResponse(cursor=cursor, task_logs=[Controller.TaskLogBatch(task_id="/u/j/0", logs=entries)])


def test_follow_yields_new_lines_until_finished_and_drained(client: FrayClient) -> None:
    pages = {0: _log_page(2, "a", "b"), 2: _log_page(3, "c"), 3: _log_page(3)}
    late = iter([_log_page(4, "d"), _log_page(4)])  # a line that lands after the job finished

    def logs(request: Message) -> Message:
        assert isinstance(request, Controller.GetTaskLogsRequest)
        return pages[request.cursor] if request.cursor < 3 else next(late)

    FakeTransport.script["GetTaskLogs"] = [logs]
    FakeTransport.script["GetJobState"] = states("RUNNING", "RUNNING", "SUCCEEDED")
    assert [entry.data for entry in client.follow("/u/j", timeout=5)] == ["a", "b", "c", "d"]


def test_logs_do_not_fall_back_without_connect(client: FrayClient) -> None:
    FakeTransport.script["GetTaskLogs"] = [error_for("unimplemented", "", url=URL, method="GetTaskLogs")]
    with pytest.raises(RpcFailed, match="unimplemented"):
        client.logs("/u/j")


def test_list_builds_the_query(client: FrayClient) -> None:
    FakeTransport.script["ListJobs"] = [Controller.ListJobsResponse(
        jobs=[job_pb2.JobStatus(job_id="/u/j")], total_count=7, has_more=True)]
    page = client.list(name_filter="tr", state="JOB_STATE_RUNNING", sort="name", descending=False, offset=5, limit=1)
    assert ([job.job_id for job in page.jobs], page.total, page.has_more) == (["/u/j"], 7, True)
    query = FakeTransport.calls[0][1].query  # type: ignore[attr-defined]
    assert (query.name_filter, query.state_filter, query.offset, query.limit) == ("tr", "running", 5, 1)
    assert query.sort_field == Controller.JOB_SORT_FIELD_NAME
    assert query.sort_direction == Controller.SORT_DIRECTION_ASC
    with pytest.raises(ValueError, match="sort 'age' must be one of date, name, state"):
        client.list(sort="age")


def test_list_asks_for_a_scope_and_fills_each_parent_only_where_the_controller_left_it(client: FrayClient) -> None:
    """Iris's listing leaves ``parent_job_id`` empty: a CHILDREN row's is the parent asked for, an
    ALL row's the id's own parent; ``has_children`` is always the controller's."""
    rows = [job_pb2.JobStatus(job_id="/u/c/step", has_children=True), job_pb2.JobStatus(job_id="/u/c"),
            job_pb2.JobStatus(job_id="/u/d/x", parent_job_id="/u/d")]
    FakeTransport.script["ListJobs"] = [lambda request: Controller.ListJobsResponse(jobs=rows, total_count=3)]
    every = client.list(scope="all")
    assert [(j.parent_job_id, j.has_children) for j in every.jobs] == [("/u/c", True), ("", False), ("/u/d", False)]
    client.list(scope="children", parent="/u/c")
    query = FakeTransport.calls[-1][1].query  # type: ignore[attr-defined]
    assert (query.scope, query.parent_job_id) == (Controller.JOB_QUERY_SCOPE_CHILDREN, "/u/c")
    client.list(scope="roots")
    assert FakeTransport.calls[-1][1].query.scope == Controller.JOB_QUERY_SCOPE_ROOTS  # type: ignore[attr-defined]
    for bad, said in (({"scope": "tree"}, "scope 'tree' must be one of all, roots, children"),
                      ({"scope": "children"}, "scope 'children' needs parent=<job id>"),
                      ({"parent": "/u/c"}, "parent='/u/c' is only for scope 'children'")):
        with pytest.raises(ValueError, match=said):
            client.list(**bad)  # type: ignore[arg-type]


def test_list_opens_on_my_top_level_jobs_as_iris_s_dashboard_does(client: FrayClient,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """By default: the client's user's roots (``job_id_prefix="/<user>/"``, scope ROOTS); a name for
    another user's, None for everyone's; a prefix of one's own; a parent's children whoever's."""
    monkeypatch.setenv("IRIS_USER", "alice")
    FakeTransport.script["ListJobs"] = [lambda request: Controller.ListJobsResponse(total_count=0)]

    def sent(**kwargs: Any) -> tuple[int, str]:
        client.list(**kwargs)
        query = FakeTransport.calls[-1][1].query  # type: ignore[attr-defined]
        return query.scope, query.job_id_prefix

    roots, every = Controller.JOB_QUERY_SCOPE_ROOTS, Controller.JOB_QUERY_SCOPE_ALL
    assert client.user == "alice" and sent() == (roots, "/alice/")
    assert sent(user="bob") == (roots, "/bob/") and sent(user=None) == (roots, "")
    assert sent(user=None, scope="all") == (every, "") and sent(scope="all") == (every, "/alice/")
    assert sent(prefix="/carol/exp-") == (roots, "/carol/exp-")
    assert sent(scope="children", parent="/bob/coord") == (Controller.JOB_QUERY_SCOPE_CHILDREN, "")
    with FrayClient(URL, user="dave") as dave:
        assert dave.user == "dave"
    for bad, said in (({"user": "bob", "prefix": "/bob/x"}, "prefix='/bob/x' names its own jobs"),
                      ({"user": "bob", "scope": "children", "parent": "/a/c"}, "user='bob' is for scopes"),
                      ({"user": "a b"}, "must be a non-empty name")):
        with pytest.raises(ValueError, match=said):
            client.list(**bad)  # type: ignore[arg-type]


def test_children_pages_until_the_controller_says_no_more(client: FrayClient) -> None:
    def page(request: Message) -> Controller.ListJobsResponse:
        offset = request.query.offset  # type: ignore[attr-defined]
        ids = [f"/u/c/s{i}" for i in range(offset, min(offset + 2, 5))]
        return Controller.ListJobsResponse(jobs=[job_pb2.JobStatus(job_id=i) for i in ids], total_count=5,
                                           has_more=offset + 2 < 5)
    FakeTransport.script["ListJobs"] = [page]
    assert [j.job_id for j in client.children("/u/c")] == [f"/u/c/s{i}" for i in range(5)]
    assert [call[1].query.offset for call in FakeTransport.calls] == [0, 2, 4]  # type: ignore[attr-defined]


def test_logs_of_a_tree_ask_for_the_children_and_keep_their_rows(client: FrayClient) -> None:
    FakeTransport.script["GetTaskLogs"] = [Controller.GetTaskLogsResponse()]
    client.logs("/u/c", include_children=True)
    assert FakeTransport.calls[-1][1].include_children  # type: ignore[attr-defined]
    payload = {"entries": [{"key": "/u/c/0:0", "data": "own"}, {"key": "/u/c/step/0:1", "data": "child"}]}
    assert [e.data for e in from_fetch_logs("/u/c", payload, LogQuery()).entries] == ["own"]
    tree = from_fetch_logs("/u/c", payload, LogQuery(include_children=True)).entries
    assert [log_line(e, "/u/c") for e in tree] == ["[0] own", "[step/0:1] child"]
