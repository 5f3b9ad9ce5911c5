"""Listing jobs (``FrayClient.list``): the query a page of ``ListJobs`` is asked with, and the page.

Rules:

* ``scope`` is one of ``SCOPES`` (Iris's ``JobQueryScope``) and ``sort`` one of ``SORT_FIELDS``;
  scope ``"children"`` goes with a ``parent`` and only then; a ``prefix`` (Iris's
  ``job_id_prefix``) names its own jobs, so it comes without a user's name; a parent's children are
  listed whoever's they are. Anything else is a one-line ``ValueError`` naming the value.
* By default (``user=""``) the listing is the client's own user's (``/<user>/``), a name lists that
  user's, None everyone's.
* A row's ``parent_job_id`` is the controller's, and where it leaves it empty (an Iris listing does)
  the ``parent`` asked for, or in scope "all" the id's own parent (a root's is empty).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.iris.proto.job_pb2 import JobStatus
from fray_jupyter.iris.states import parent_job_id
from fray_jupyter.iris.user import resolve_user

SCOPES: Final[dict[str, Controller.JobQueryScope]] = {
    "all": Controller.JOB_QUERY_SCOPE_ALL,
    "roots": Controller.JOB_QUERY_SCOPE_ROOTS,
    "children": Controller.JOB_QUERY_SCOPE_CHILDREN,
}
"""``list``'s scopes, Iris's ``JobQueryScope``: every job, jobs without a parent, one job's children."""
SORT_FIELDS: Final[dict[str, Controller.JobSortField]] = {
    "date": Controller.JOB_SORT_FIELD_DATE,
    "name": Controller.JOB_SORT_FIELD_NAME,
    "state": Controller.JOB_SORT_FIELD_STATE,
    "failures": Controller.JOB_SORT_FIELD_FAILURES,
    "preemptions": Controller.JOB_SORT_FIELD_PREEMPTIONS,
}


class JobPage(NamedTuple):
    """One page of ``ListJobs``: the jobs, how many matched before paging, whether more follow."""

    jobs: tuple[JobStatus, ...]
    total: int
    has_more: bool


def job_query(own_user: Callable[[], str], *, user: str | None, scope: str, parent: str, prefix: str,
              name_filter: str, state: str, sort: str, descending: bool, offset: int,
              limit: int) -> Controller.JobQuery:
    """The ``JobQuery`` of one page (see the module rules; ``own_user()`` names the client's user)."""
    if sort not in SORT_FIELDS:
        raise ValueError(f"sort {sort!r} must be one of {', '.join(SORT_FIELDS)}")
    if scope not in SCOPES:
        raise ValueError(f"scope {scope!r} must be one of {', '.join(SCOPES)}")
    if (scope == "children") != bool(parent):
        raise ValueError("scope 'children' needs parent=<job id>" if parent == "" else
                         f"parent={parent!r} is only for scope 'children' (got scope {scope!r})")
    if prefix and user:
        raise ValueError(f"prefix={prefix!r} names its own jobs; give it without user={user!r}")
    if scope == "children" and user:
        raise ValueError(f"user={user!r} is for scopes 'roots' and 'all'; a parent's children are its own")
    mine = user is not None and scope != "children"
    direction = Controller.SORT_DIRECTION_DESC if descending else Controller.SORT_DIRECTION_ASC
    query = Controller.JobQuery(
        name_filter=name_filter, state_filter=state.lower().removeprefix("job_state_"),
        sort_field=SORT_FIELDS[sort], sort_direction=direction, offset=offset, limit=limit,
        scope=SCOPES[scope], parent_job_id=parent,
        job_id_prefix=prefix or (f"/{resolve_user(user) if user else own_user()}/" if mine else ""))
    return query


def job_page(response: Controller.ListJobsResponse, *, scope: str, parent: str) -> JobPage:
    """The page of ``response``, each row's empty ``parent_job_id`` filled in (see the module rules)."""
    for job in response.jobs:
        if not job.parent_job_id and scope != "roots":
            job.parent_job_id = parent or parent_job_id(job.job_id)
    return JobPage(tuple(response.jobs), response.total_count, response.has_more)
