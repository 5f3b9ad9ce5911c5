"""What a run of ``examples/zephyr.ipynb`` must leave behind, on whichever controller ran it: every
record that passed the filter written once, by several workers into several files (the notebook's
own output), a coordinator job and its workers' child job on that controller, both ended, and no
endpoint of theirs still registered."""

from __future__ import annotations

import re

import nbformat

from fray_jupyter.client.client import FrayClient
from fray_jupyter.iris.states import is_job_finished
from tests.waiting import until

RECORDS = 1000
"""The notebook's dataset: ``range(1000)``, of which the filter keeps the numbers not divisible by 3."""
ENDPOINTS_GONE_S = 60.0


def check_zephyr_run(notebook: nbformat.NotebookNode, client: FrayClient, user: str) -> None:
    """Assert the module's rule for a run of the notebook by ``user`` on ``client``'s controller."""
    text = "".join(o.get("text", "") for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs)
    shown = re.search(r"(\d+) rows in (\d+) file\(s\)", text)
    assert shown, text
    assert int(shown.group(1)) == sum(1 for n in range(RECORDS) if n % 3), text
    assert int(shown.group(2)) > 1, text  # several shards, written by several workers
    roots = client.list(user=user, limit=500).jobs
    coordinators = [job for job in roots if "coordinator" in job.job_id]
    assert coordinators, [job.job_id for job in roots]
    children = [child for job in coordinators for child in client.children(job.job_id)]
    assert [child for child in children if "workers" in child.job_id], [job.job_id for job in children]
    ended = {job.job_id: job.state for job in (*coordinators, *children)}
    assert all(is_job_finished(state) for state in ended.values()), ended
    # Iris drops them with the job; leases bound the rest
    until(lambda: not client.endpoints(f"/{user}/"), f"every endpoint under /{user}/ gone", hang_guard=ENDPOINTS_GONE_S)
