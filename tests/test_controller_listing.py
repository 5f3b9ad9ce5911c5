"""ListJobs' query (``controller.api.job_query``): Iris's page bounds, scopes, filters and orders, read as
SQL against a real store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.controller.api.job_query import jobs_query
from fray_jupyter.controller.kernel.rows import JobRow
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.proto import controller_pb2
from fray_jupyter.iris.proto import job_pb2 as J
from fray_jupyter.iris.states import MAX_LIST_JOBS_LIMIT, MAX_LIST_JOBS_OFFSET

C = controller_pb2.Controller


def _job(job_id: str, state: int, submitted_ms: int, parent: str = "") -> JobRow:
    return JobRow(0, job_id, job_id.lower(), "alice", state, submitted_ms, None, None, "", None, "", 1, 0, 0, 0,
                  None, None, 0, 0, b"", b"", "", parent_job_id=parent)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "db.sqlite3")
    with store.transaction():
        for row in (_job("/alice/coord", J.JOB_STATE_RUNNING, 1), _job("/alice/coord/step_1", J.JOB_STATE_PENDING, 2,
                                                                       "/alice/coord"),
                    _job("/alice/100%_done", J.JOB_STATE_SUCCEEDED, 3), _job("/alice/1000_done", J.JOB_STATE_FAILED, 4)):
            store.insert_job(row)
    yield store
    store.close()


def ids(store: Store, **fields: object) -> list[str]:
    page = jobs_query(C.JobQuery(**fields))  # type: ignore[arg-type]
    assert page is not None
    return [row.job_id for row in store.query_jobs(page)[0]]


def test_the_page_is_clamped_as_iris_clamps_it() -> None:
    for limit in (0, MAX_LIST_JOBS_LIMIT + 1):
        page = jobs_query(C.JobQuery(limit=limit, offset=-3))
        assert page is not None and (page.limit, page.offset) == (MAX_LIST_JOBS_LIMIT, 0)
    with pytest.raises(RpcError) as error:
        jobs_query(C.JobQuery(offset=MAX_LIST_JOBS_OFFSET + 1))
    assert error.value.code == Code.INVALID_ARGUMENT and f"offset={MAX_LIST_JOBS_OFFSET + 1}" in error.value.message


def test_scopes_filters_and_orders(store: Store) -> None:
    assert ids(store) == ["/alice/1000_done", "/alice/100%_done", "/alice/coord/step_1", "/alice/coord"]
    assert ids(store, scope=C.JOB_QUERY_SCOPE_ROOTS, sort_direction=C.SORT_DIRECTION_ASC) == [
        "/alice/coord", "/alice/100%_done", "/alice/1000_done"]
    assert ids(store, scope=C.JOB_QUERY_SCOPE_CHILDREN, parent_job_id="/alice/coord") == ["/alice/coord/step_1"]
    assert ids(store, name_filter="100%_") == ["/alice/100%_done"]  # % and _ are plain characters
    assert ids(store, job_id_prefix="/alice/coord/") == ["/alice/coord/step_1"]
    assert ids(store, state_filter=" Failed ") == ["/alice/1000_done"]
    assert ids(store, sort_field=C.JOB_SORT_FIELD_STATE) == [
        "/alice/coord", "/alice/coord/step_1", "/alice/100%_done", "/alice/1000_done"]
    assert jobs_query(C.JobQuery(state_filter="sleeping")) is None


@pytest.mark.parametrize("parent", ["", "alice/coord", "/alice"])
def test_children_need_a_parent_that_is_a_job_id(parent: str) -> None:
    with pytest.raises(RpcError) as error:
        jobs_query(C.JobQuery(scope=C.JOB_QUERY_SCOPE_CHILDREN, parent_job_id=parent))
    assert error.value.code == Code.INVALID_ARGUMENT and "parent_job_id" in error.value.message
    assert not parent or repr(parent) in error.value.message
