"""client.listing: the query a page of jobs is asked with (whose jobs, which scope, what order),
each refusal one line naming the value, and the page with each row's parent filled in."""

from __future__ import annotations

from typing import Any

import pytest

from fray_jupyter.client.listing import SCOPES, SORT_FIELDS, job_page, job_query
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.proto.controller_pb2 import Controller

DEFAULTS: dict[str, Any] = {"user": "", "scope": "roots", "parent": "", "prefix": "", "name_filter": "",
                            "state": "", "sort": "date", "descending": True, "offset": 0, "limit": 50}


def query(**change: Any) -> Controller.JobQuery:
    return job_query(lambda: "me", **{**DEFAULTS, **change})


@pytest.mark.parametrize(("change", "prefix", "scope"), [
    ({}, "/me/", "roots"),
    ({"user": "bob"}, "/bob/", "roots"),
    ({"user": None, "scope": "all"}, "", "all"),
    ({"user": "", "prefix": "/alice/exp-"}, "/alice/exp-", "roots"),
    ({"scope": "children", "parent": "/me/p"}, "", "children"),
])
def test_whose_jobs_and_which_scope(change: dict[str, Any], prefix: str, scope: str) -> None:
    asked = query(**change)
    assert asked.job_id_prefix == prefix and asked.scope == SCOPES[scope]


def test_order_state_and_paging_reach_the_query() -> None:
    asked = query(sort="failures", descending=False, state="JOB_STATE_RUNNING", offset=10, limit=5)
    assert asked.sort_field == SORT_FIELDS["failures"] and asked.sort_direction == Controller.SORT_DIRECTION_ASC
    assert (asked.state_filter, asked.offset, asked.limit) == ("running", 10, 5)


@pytest.mark.parametrize(("change", "message"), [
    ({"sort": "age"}, "sort 'age' must be one of date, name, state, failures, preemptions"),
    ({"scope": "mine"}, "scope 'mine' must be one of all, roots, children"),
    ({"scope": "children"}, "scope 'children' needs parent=<job id>"),
    ({"parent": "/me/p"}, "parent='/me/p' is only for scope 'children' (got scope 'roots')"),
    ({"user": "bob", "prefix": "/x/"}, "prefix='/x/' names its own jobs; give it without user='bob'"),
    ({"scope": "children", "parent": "/me/p", "user": "bob"},
     "user='bob' is for scopes 'roots' and 'all'; a parent's children are its own"),
])
def test_a_bad_listing_is_one_line_naming_the_value(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        query(**change)
    assert str(raised.value) == message


def test_a_page_fills_only_the_parents_the_controller_left_empty() -> None:
    response = Controller.ListJobsResponse(jobs=[job_pb2.JobStatus(job_id="/me/a/b"),
                                                 job_pb2.JobStatus(job_id="/me/c", parent_job_id="/me/kept")],
                                           total_count=7, has_more=True)
    page = job_page(response, scope="all", parent="")
    assert [job.parent_job_id for job in page.jobs] == ["/me/a", "/me/kept"] and (page.total, page.has_more) == (7, True)
    roots = job_page(Controller.ListJobsResponse(jobs=[job_pb2.JobStatus(job_id="/me/r")]), scope="roots", parent="")
    assert roots.jobs[0].parent_job_id == ""
