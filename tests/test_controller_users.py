"""``ListUsers`` on the embedded controller: who is listed, their counts, and Iris's order."""

from __future__ import annotations

from pathlib import Path

from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.iris.states import JOB_STATES
from tests.controller_harness import launch_request
from tests.service_core import Core, run

C = controller_pb2.Controller
J = job_pb2


def test_users_with_jobs_or_budgets_busiest_first_counting_only_unfinished_jobs(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        done = core.launch(launch_request("done", "true", user="zed"))
        await core.wait(done)
        busy = core.launch(launch_request("busy", "sleep 30", user="bob", replicas=2))
        core.launch(launch_request("one", "sleep 30", user="amy"))
        core.service.set_user_budget(C.SetUserBudgetRequest(user_id="budget-only", budget_limit=5))
        await core.running(busy)
        users = core.service.list_users(C.ListUsersRequest()).users
        assert [u.user for u in users] == ["bob", "amy", "budget-only", "zed"]
        bob, _, only, zed = users
        assert set(bob.job_state_counts) == set(JOB_STATES) and bob.job_state_counts["running"] == 1
        assert bob.task_state_counts["running"] == 2 and "missing" not in bob.task_state_counts
        assert sum(zed.job_state_counts.values()) == 0 and sum(zed.task_state_counts.values()) == 0
        assert sum(only.job_state_counts.values()) == 0 and {u.role for u in users} == {"user"}

    run(tmp_path, body, slots=4)
