"""ListJobs' query over the embedded controller's ``jobs`` table: Iris's paging bounds, scopes,
filters and sort orders, as the store's typed ``JobsPage`` (``jobs_query``).

Rules (Iris 0.2.227's ``ListJobs``):

* ``limit`` 0 or above 500 means 500 (``MAX_LIST_JOBS_LIMIT``); ``offset`` below 0 is 0, above
  5000 INVALID_ARGUMENT (``MAX_LIST_JOBS_OFFSET``).
* ``scope``: ALL (every job), ROOTS (jobs without a parent), CHILDREN (the direct children of
  ``parent_job_id``; required: INVALID_ARGUMENT without it, or when it is no job id).
* ``state_filter`` names one state (any case); a name that is no state gives an empty page.
  ``name_filter`` matches inside the lower-cased name, ``job_id_prefix`` the start of the id, both
  literally (``%`` and ``_`` are plain characters).
* Sort: by submission date newest first unless asked otherwise; a field sorts ascending by
  default; by state in ``JOB_STATE_SORT_ORDER``; ties by row id, in the same direction.
"""

from __future__ import annotations

from typing import Final

from fray_jupyter.controller.api import validation
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.store.store import JobSort, JobsPage
from fray_jupyter.iris.proto import controller_pb2
from fray_jupyter.iris.states import MAX_LIST_JOBS_LIMIT, MAX_LIST_JOBS_OFFSET, job_state_from_name

C = controller_pb2.Controller
_SORTS: Final[dict[int, JobSort]] = {
    C.JOB_SORT_FIELD_DATE: "date", C.JOB_SORT_FIELD_NAME: "name", C.JOB_SORT_FIELD_STATE: "state",
    C.JOB_SORT_FIELD_FAILURES: "failures", C.JOB_SORT_FIELD_PREEMPTIONS: "preemptions",
}


def jobs_query(query: C.JobQuery) -> JobsPage | None:
    """The page ``query`` asks for (see the module rules); None when its ``state_filter`` names no
    state (the page is empty); ``RpcError`` INVALID_ARGUMENT naming a bad offset or parent."""
    limit = query.limit if 0 < query.limit <= MAX_LIST_JOBS_LIMIT else MAX_LIST_JOBS_LIMIT
    offset = max(query.offset, 0)
    if offset > MAX_LIST_JOBS_OFFSET:
        raise RpcError(Code.INVALID_ARGUMENT,
                       f"query.offset={offset} exceeds MAX_LIST_JOBS_OFFSET={MAX_LIST_JOBS_OFFSET}; narrow the "
                       "result set with state_filter/name_filter/parent_job_id instead of paging deeper.")
    state = None
    if query.state_filter:
        state = job_state_from_name(query.state_filter)
        if state is None:
            return None
    field = query.sort_field or C.JOB_SORT_FIELD_DATE
    direction = query.sort_direction or (
        C.SORT_DIRECTION_DESC if field == C.JOB_SORT_FIELD_DATE else C.SORT_DIRECTION_ASC)
    return JobsPage(limit, offset, roots_only=query.scope == C.JOB_QUERY_SCOPE_ROOTS, parent_job_id=_parent(query),
                    state=state, name_contains=query.name_filter.lower(), id_prefix=query.job_id_prefix,
                    sort=_SORTS.get(field, "date"), descending=direction == C.SORT_DIRECTION_DESC)


def _parent(query: C.JobQuery) -> str | None:
    """The parent whose direct children the query's scope asks for (None: not the CHILDREN scope)."""
    if query.scope != C.JOB_QUERY_SCOPE_CHILDREN:
        return None
    if not query.parent_job_id:
        raise RpcError(Code.INVALID_ARGUMENT, "query.parent_job_id is required for JOB_QUERY_SCOPE_CHILDREN")
    try:
        validation.job_id_user(query.parent_job_id)
    except RpcError:
        raise RpcError(Code.INVALID_ARGUMENT, f"query.parent_job_id {query.parent_job_id!r} is not a job id "
                                              "('/<user>/<name>[/<child>…]')") from None
    return query.parent_job_id
