"""Budgets and bands on the embedded controller, in process: LaunchJob's band rules, spend over active
tasks, the effective band (and its order and stamp in the scheduler), and the budget RPCs' answers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fray_jupyter.controller.engine.budgets import default_limit
from fray_jupyter.controller.rpc_error import Code
from fray_jupyter.iris.proto import controller_pb2, job_pb2
from fray_jupyter.iris.states import parent_job_id
from fray_jupyter.resources import ResourceConfig
from tests.controller_harness import launch_request
from tests.service_core import Core, refused, run

C = controller_pb2.Controller
J = job_pb2
RESOURCES = ResourceConfig(cpu=2, ram="3g", disk="1g")
VALUE = 3 + 5 * 2  # 3 GiB + 5 per core, per task


def job(name: str, command: str = "sleep 30", *, user: str = "alice", replicas: int = 1,
        band: int = J.PRIORITY_BAND_INHERIT) -> C.LaunchJobRequest:
    return launch_request(name, command, user=user, replicas=replicas, resources=RESOURCES, priority_band=band)


def budget(core: Core, user: str) -> C.GetUserBudgetResponse:
    return core.service.get_user_budget(C.GetUserBudgetRequest(user_id=user))


def set_budget(core: Core, user: str, limit: int, max_band: int = 0) -> None:
    core.service.set_user_budget(C.SetUserBudgetRequest(user_id=user, budget_limit=limit, max_band=max_band))


def state(core: Core) -> C.GetSchedulerStateResponse:
    return core.service.get_scheduler_state(C.GetSchedulerStateRequest())


def test_a_user_without_a_row_has_the_defaults_unlimited_and_interactive(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        answer = budget(core, "nobody")
        assert (answer.user_id, answer.budget_limit, answer.budget_spent, answer.max_band) == (
            "nobody", 0, 0, J.PRIORITY_BAND_INTERACTIVE)
        assert not core.service.list_user_budgets(C.ListUserBudgetsRequest()).users
        refused(Code.INVALID_ARGUMENT, lambda: budget(core, ""))

    run(tmp_path, body)


def test_spend_counts_the_active_tasks_of_jobs_not_submitted_at_batch(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        big = core.launch(job("big", replicas=3))
        core.launch(job("cheap", band=J.PRIORITY_BAND_BATCH))
        await core.running(big)
        assert budget(core, "alice").budget_spent == 3 * VALUE
        core.service.terminate_job(C.TerminateJobRequest(job_id=big))
        assert budget(core, "alice").budget_spent == 0

    run(tmp_path, body, slots=4)


def test_set_user_budget_is_kept_and_listed(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        set_budget(core, "bob", 500)
        set_budget(core, "carol", 0, J.PRIORITY_BAND_PRODUCTION)
        answer = budget(core, "bob")
        assert (answer.budget_limit, answer.max_band) == (500, J.PRIORITY_BAND_INTERACTIVE)
        listed = core.service.list_user_budgets(C.ListUserBudgetsRequest()).users
        assert [(u.user_id, u.budget_limit, u.max_band) for u in listed] == [
            ("bob", 500, J.PRIORITY_BAND_INTERACTIVE), ("carol", 0, J.PRIORITY_BAND_PRODUCTION)]
        assert "user_id" in refused(Code.INVALID_ARGUMENT, lambda: set_budget(core, "", 1))
        assert "max_band 9" in refused(Code.INVALID_ARGUMENT, lambda: set_budget(core, "bob", 1, 9))

    run(tmp_path, body)


def test_launch_job_resolves_inherit_refuses_unknown_bands_and_bands_above_the_max(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        job_id = core.launch(job("plain", "true"))
        launched = core.service.get_job_status(C.GetJobStatusRequest(job_id=job_id)).request
        assert launched.priority_band == J.PRIORITY_BAND_INTERACTIVE
        assert "priority_band 7" in refused(Code.INVALID_ARGUMENT, lambda: core.launch(job("odd", band=7)))
        message = refused(Code.PERMISSION_DENIED, lambda: core.launch(job("prod", band=J.PRIORITY_BAND_PRODUCTION)))
        assert "alice" in message and "interactive" in message and "production" in message
        set_budget(core, "alice", 0, J.PRIORITY_BAND_PRODUCTION)
        assert core.launch(job("prod", "true", band=J.PRIORITY_BAND_PRODUCTION)) == "/alice/prod"
        refused(Code.PERMISSION_DENIED, lambda: core.launch(job("sys", band=J.PRIORITY_BAND_SYSTEM)))
        await core.wait(job_id)

    run(tmp_path, body)


def test_over_budget_work_waits_and_runs_at_batch_and_the_band_is_stamped(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        set_budget(core, "alice", VALUE - 1)  # one running task puts alice over
        first = core.launch(job("first"))
        await core.running(first)
        second = core.launch(job("second", replicas=2))
        answer = state(core)
        assert [(b.band, b.user_id, b.job_id, b.count) for b in answer.pending_buckets] == [
            (J.PRIORITY_BAND_BATCH, "alice", second, 2)]  # over budget: waits at batch
        assert [(b.band, b.job_id, b.count) for b in answer.running_buckets] == [(J.PRIORITY_BAND_INTERACTIVE, first, 1)]
        (alice,) = answer.user_budgets
        assert (alice.budget_spent, alice.budget_limit, alice.effective_band) == (VALUE, VALUE - 1,
                                                                                   J.PRIORITY_BAND_BATCH)
        assert alice.utilization_percent == pytest.approx(VALUE / (VALUE - 1) * 100)
        assert (answer.total_pending, answer.total_running) == (2, 1)
        core.service.terminate_job(C.TerminateJobRequest(job_id=first))
        await core.until(lambda: any(b.job_id == second for b in state(core).running_buckets), "the second job running")
        (placed,) = [b for b in state(core).running_buckets if b.job_id == second]
        assert (placed.band, placed.count) == (J.PRIORITY_BAND_INTERACTIVE, 1)  # placed when back under the limit
        (waiting,) = state(core).pending_buckets
        assert (waiting.band, waiting.count) == (J.PRIORITY_BAND_BATCH, 1)  # its running task put alice over again

    run(tmp_path, body, slots=1)


def test_the_scheduler_takes_bands_highest_first(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        blocker = core.launch(job("blocker"))
        await core.running(blocker)
        batch = core.launch(job("batch", band=J.PRIORITY_BAND_BATCH))
        interactive = core.launch(job("interactive"))
        core.service.terminate_job(C.TerminateJobRequest(job_id=blocker))
        await core.running(interactive)
        assert core.status(batch).state == J.JOB_STATE_PENDING
        (bucket,) = [b for b in state(core).running_buckets]
        assert (bucket.job_id, bucket.band) == (interactive, J.PRIORITY_BAND_INTERACTIVE)

    run(tmp_path, body, slots=1)


def test_inside_a_band_the_user_who_spent_less_goes_first(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        blocker, spending = core.launch(job("blocker", user="x")), core.launch(job("a0"))
        await core.running(blocker)
        await core.running(spending)
        older, newer = core.launch(job("a1")), core.launch(job("b1", user="bob"))
        core.service.terminate_job(C.TerminateJobRequest(job_id=blocker))
        await core.running(newer)  # alice has a task running, bob none: bob's turn comes first
        assert core.status(older).state == J.JOB_STATE_PENDING

    run(tmp_path, body, slots=2)


def test_a_user_over_budget_starts_interactive_work_at_batch(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        set_budget(core, "alice", 1)
        first = core.launch(job("first"))
        await core.running(first)
        later = core.launch(job("later"))
        await core.running(later)
        bands = {b.job_id: b.band for b in state(core).running_buckets}
        assert bands == {first: J.PRIORITY_BAND_INTERACTIVE, later: J.PRIORITY_BAND_BATCH}
        assert budget(core, "alice").budget_spent == 2 * VALUE  # moved down by the scheduler: still counted

    run(tmp_path, body, slots=2)


def test_default_limit_comes_from_the_option_then_the_environment() -> None:
    assert default_limit(None, {}) == 0
    assert default_limit(None, {"FRAY_CONTROLLER_BUDGET_LIMIT": "75000"}) == 75_000
    assert default_limit(10, {"FRAY_CONTROLLER_BUDGET_LIMIT": "75000"}) == 10
    for bad in ("-1", "lots", "1.5"):
        with pytest.raises(ValueError, match=f"budget limit '{bad}'"):
            default_limit(None, {"FRAY_CONTROLLER_BUDGET_LIMIT": bad})


@pytest.mark.parametrize(("flags", "env"), [(["--budget-limit", "-3"], {}), ([], {"FRAY_CONTROLLER_BUDGET_LIMIT": "x"})])
def test_a_bad_budget_limit_is_one_line_exit_2(flags: list[str], env: dict[str, str], tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "fray_jupyter.controller", "--state-dir", str(tmp_path), *flags],
                            env={**os.environ, **env}, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert result.stderr.splitlines()[-1].startswith("fray-jupyter controller: error: budget limit ")
    assert result.stderr.splitlines()[-1].endswith("must be a whole number >= 0 (0: unlimited)")


def test_a_child_job_has_a_parent() -> None:
    assert parent_job_id("/alice/a/b") == "/alice/a"
    assert parent_job_id("/alice/a") == ""
