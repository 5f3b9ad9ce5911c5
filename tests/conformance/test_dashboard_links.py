"""A job's link to a cluster's own Iris dashboard is Iris's: ``tests/data/dashboard_links.json`` (the
vectors the sidebar's ``dashboardJobUrl`` runs, ``labextension/test/links.test.ts``) is what marin-iris's
``JobName.dashboard_url`` gives for each origin and job id, hostile and non-ASCII ones included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

import pytest
from iris.cluster.types import JobName

VECTORS: Final[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[1] / "data" / "dashboard_links.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", VECTORS["cases"], ids=lambda case: f"{case['origin']} {case['job_id']}")
def test_the_sidebars_dashboard_links_are_iris_s(case: dict[str, str]) -> None:
    assert JobName.from_string(case["job_id"]).dashboard_url(case["origin"]) == case["url"]


def test_the_vectors_cover_what_encodes_differently_in_a_browser() -> None:
    """``encodeURIComponent`` leaves ``!'()*`` as they are; Iris's ``quote(safe="")`` does not."""
    ids = "".join(case["job_id"] for case in VECTORS["cases"])
    assert all(char in ids for char in "!'()*~ %#?&=/") and any(ord(char) > 127 for char in ids)
