"""Task status text on the embedded controller: a task sets its own with Iris's own call, as on a real
cluster, and it is read back as Iris's dashboard reads it (SQL over ``iris.task_status``) — through
fray-jupyter's client and through finelog's own client; the service keeps the newest report per attempt,
only for tasks it has, and its SQL reads that one table and nothing else."""

from __future__ import annotations

import shlex
import sys
import time

import pytest

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.status_text import StatusText, status_text_sql
from fray_jupyter.controller.api.service import ControllerService
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.iris import arrow_ipc
from fray_jupyter.iris.proto import controller_pb2, finelog_stats_pb2
from fray_jupyter.iris.states import is_job_finished
from tests.controller_harness import (
    ControllerProcess,
    launch_request,
    status_text_rows,
)
from tests.waiting import until

C = controller_pb2.Controller
S = finelog_stats_pb2
DETAIL = "**step 3/10** (30.0%)\n\n- **loss**: 2.3100\n\n[W&B run](https://wandb.ai/team/run-1)"
SUMMARY = "step 3/10 (30.0%) · loss 2.310"
REPORT = f"""
import time
from iris.client.client import get_iris_ctx
from iris.cluster.client.job_info import get_job_info
info = get_job_info()
get_iris_ctx().client.report_task_status_text(info.task_id, info.attempt_id, {DETAIL!r}, {SUMMARY!r})
time.sleep(120)
"""


def test_a_task_sets_its_status_text_as_iris_tasks_do(controller: ControllerProcess) -> None:
    """Iris's ``report_task_status_text`` from inside a task, through ``IRIS_CONTROLLER_ADDRESS`` and the
    ``/system/log-server`` endpoint, arrives; fray-jupyter's client and finelog's read it back."""
    with FrayClient(controller.info.url, controller.info.token) as client:
        job_id = client.submit(launch_request("reports", f"exec {shlex.quote(sys.executable)} -c {shlex.quote(REPORT)}"))
        submitted = client.status(job_id).submitted_at.epoch_ms

        def reported() -> dict[str, StatusText] | None:
            texts = client.status_texts([f"{job_id}/0"], since_ms=submitted)
            assert texts or not is_job_finished(client.status(job_id).state), client.logs(job_id).entries
            return texts or None

        found = until(reported, f"{job_id}/0's status text", feed=client)
        assert found == {f"{job_id}/0": StatusText(DETAIL, SUMMARY, 0)}
        assert submitted <= found[f"{job_id}/0"].ts_ms <= time.time() * 1000
        assert client.status_texts([f"{job_id}/0"], since_ms=int(time.time() * 1000) + 60_000) == {}
        from finelog.client import LogClient

        finelog = LogClient.connect(controller.info.url + "/proxy/system.log-server")
        try:
            table = finelog.query(status_text_sql([f"{job_id}/0"], submitted))
        finally:
            finelog.close()
        (row,) = table.to_pylist()
        assert row.pop("ts") is not None  # when it was reported: what the panel's "reported 4 min ago" counts from
        assert row == {"task_id": f"{job_id}/0", "attempt_id": 0, "status_text_detail_md": DETAIL,
                       "status_text_summary_md": SUMMARY}
        client.terminate(job_id)


# -- the service, in process (conftest's ``service``) ----------------------------------------------------
def _rows(task_ids: list[str], attempts: list[int], ts: list[int], details: list[str]) -> S.WriteRowsRequest:
    return status_text_rows(task_ids, attempts, details, [d.upper() for d in details], ts)


def _query(service: ControllerService, sql: str) -> list[dict[str, object]]:
    return arrow_ipc.rows(arrow_ipc.read(service.query(S.QueryRequest(sql=sql)).arrow_ipc))


def _refused(code: Code, call: object) -> str:
    with pytest.raises(RpcError) as error:
        call()  # type: ignore[operator]
    assert error.value.code == code, error.value.message
    return error.value.message


def test_the_newest_report_of_each_attempt_is_kept_for_tasks_that_exist(service: ControllerService) -> None:
    job = service.launch_job(launch_request("j", "sleep 30", replicas=2)).job_id
    written = service.write_rows(_rows([f"{job}/0", f"{job}/0", f"{job}/0", f"{job}/1", f"{job}/7", "/nobody/x/0"],
                                       [0, 0, 1, 0, 0, 0], [20, 10, 5, 1, 1, 1], ["new", "old", "retry", "b", "x", "y"]))
    assert written.rows_written == 4  # task 7 and the unknown job's are not kept
    rows = _query(service, 'SELECT task_id, attempt_id, status_text_detail_md FROM "iris.task_status" '
                           "ORDER BY task_id, attempt_id")
    assert [(r["task_id"], r["attempt_id"], r["status_text_detail_md"]) for r in rows] == [
        (f"{job}/0", 0, "new"), (f"{job}/0", 1, "retry"), (f"{job}/1", 0, "b")]
    newest = _query(service, status_text_sql([f"{job}/0", f"{job}/1"], 0))
    assert {r["task_id"]: r["status_text_detail_md"] for r in newest} == {f"{job}/0": "new", f"{job}/1": "b"}


def test_a_query_that_runs_too_long_is_stopped(service: ControllerService) -> None:
    job = service.launch_job(launch_request("many", "true")).job_id
    service.write_rows(_rows([f"{job}/0"] * 200, list(range(200)), [1] * 200, ["x"] * 200))
    sql = 'SELECT count(*) FROM "iris.task_status" a, "iris.task_status" b, "iris.task_status" c, "iris.task_status" d'
    assert "step limit" in _refused(Code.INVALID_ARGUMENT, lambda: service.query(S.QueryRequest(sql=sql)))


def test_a_replaced_job_takes_its_status_text_with_it(service: ControllerService) -> None:
    request = launch_request("again", "true")
    job = service.launch_job(request).job_id
    service.write_rows(_rows([f"{job}/0"], [0], [1], ["first run"]))
    service.terminate_job(C.TerminateJobRequest(job_id=job))
    request.existing_job_policy = 3  # RECREATE
    service.launch_job(request)
    assert _query(service, 'SELECT * FROM "iris.task_status"') == []
    service.terminate_job(C.TerminateJobRequest(job_id=job))


def test_other_namespaces_and_bad_batches_are_refused(service: ControllerService) -> None:
    message = _refused(Code.INVALID_ARGUMENT, lambda: service.register_table(S.RegisterTableRequest(namespace="iris.worker")))
    assert "it keeps 'iris.task', 'iris.task_event', 'iris.profile', 'iris.task_status'" in message
    assert "tasks write 'iris.task_status' (task status text) only" in _refused(Code.INVALID_ARGUMENT, lambda: (
        service.write_rows(S.WriteRowsRequest(namespace="iris.task", arrow_ipc=b""))))
    schema = S.Schema(columns=[S.Column(name="task_id", type=S.COLUMN_TYPE_STRING)], key_column="task_id")
    echoed = service.register_table(S.RegisterTableRequest(namespace="iris.task_status", schema=schema))
    assert echoed.effective_schema == schema
    assert "malformed" in _refused(Code.INVALID_ARGUMENT, lambda: service.write_rows(
        S.WriteRowsRequest(namespace="iris.task_status", arrow_ipc=b"\xff\xff\xff\xff\x10\x00\x00\x00junk")))
    wrong = arrow_ipc.write([arrow_ipc.Column("task_id", "int64", [1])])
    assert "'task_id' must be a string" in _refused(Code.INVALID_ARGUMENT, lambda: service.write_rows(
        S.WriteRowsRequest(namespace="iris.task_status", arrow_ipc=wrong)))


@pytest.mark.parametrize("sql", [
    "SELECT * FROM jobs",
    'SELECT * FROM "iris.task_status", logs',
    "ATTACH DATABASE '/tmp/x' AS x",
    'DELETE FROM "iris.task_status"',
    "SELECT load_extension('x')",
    "SELECT * FROM range(1000000000000)",
    "COPY (SELECT 1) TO '/tmp/x.csv'",
    "SELECT * FROM '/etc/passwd'",
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
    'SELECT 1; DROP TABLE "iris.task_status"',
])
def test_the_sql_reads_the_status_table_and_nothing_else(service: ControllerService, sql: str) -> None:
    assert "query failed" in _refused(Code.INVALID_ARGUMENT, lambda: service.query(S.QueryRequest(sql=sql)))
    assert _query(service, 'SELECT count(*) AS n FROM "iris.task_status"') == [{"n": 0}]


def test_the_log_server_endpoint_is_the_controller_s_own_proxy(service: ControllerService) -> None:
    service.engine.controller_url = "http://127.0.0.1:5000/"
    (endpoint,) = service.list_endpoints(C.ListEndpointsRequest(prefix="/system/log-server", exact=True)).endpoints
    assert (endpoint.name, endpoint.address) == ("/system/log-server", "http://127.0.0.1:5000/proxy/system.log-server")
    assert len(service.list_endpoints(C.ListEndpointsRequest(prefix="/system/")).endpoints) == 1
    assert not service.list_endpoints(C.ListEndpointsRequest(prefix="/alice/")).endpoints
    assert not service.list_endpoints(C.ListEndpointsRequest(prefix="/system/log", exact=True)).endpoints
