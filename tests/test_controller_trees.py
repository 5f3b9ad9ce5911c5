"""Child jobs on the embedded controller, in process: admission under a parent, the ListJobs scopes,
what a job's end does to the jobs below it (``controller.kernel.trees``), replacing a tree, the tree's logs
and change-feed reports, and the lending rule for slots (``controller.kernel.scheduler``) with 1, 2 and
4 slots. The same scenarios against the genuine Iris scheduler: ``tests/differential/test_coordinators.py``;
tasks submitting their children through Marin's clients and ours: ``tests/test_marin_tools.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from fray_jupyter.controller.rpc_error import Code
from fray_jupyter.iris.proto import controller_pb2, finelog_logging_pb2, job_pb2
from tests.controller_harness import launch_request
from tests.service_core import Core, refused, run, zip_bundle

C = controller_pb2.Controller
J = job_pb2
F = finelog_logging_pb2


def child(parent: str, name: str, command: str, **fields: object) -> C.LaunchJobRequest:
    """The request a task of ``parent`` sends for its child ``name``."""
    request = launch_request("child", command, **fields)  # type: ignore[arg-type]
    request.name = f"{parent}/{name}"
    return request


async def stored_lines(core: Core, job_id: str) -> list[str]:
    """The job's log lines once there are some (a running job's lines reach the store in batches)."""
    return await core.until(lambda: core.lines(job_id), f"a line of {job_id} stored")


def listing(core: Core, scope: int, parent: str = "", limit: int = 0) -> C.ListJobsResponse:
    return core.service.list_jobs(C.ListJobsRequest(query=C.JobQuery(scope=scope, parent_job_id=parent, limit=limit)))


def test_a_child_needs_a_live_parent_and_a_name_that_is_not_an_integer(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        assert "parent job /alice/absent is absent from the database" in refused(
            Code.FAILED_PRECONDITION, lambda: core.launch(child("/alice/absent", "step", "true")))
        done = core.launch(launch_request("done", "true"))
        await core.wait(done)
        assert "parent job /alice/done has terminated (state=JOB_STATE_SUCCEEDED)" in refused(
            Code.FAILED_PRECONDITION, lambda: core.launch(child(done, "step", "true")))
        coord = core.launch(launch_request("coord", "sleep 30"))
        assert "cannot be an integer" in refused(Code.INVALID_ARGUMENT, lambda: core.launch(child(coord, "0", "true")))
        assert core.launch(child(coord, "step", "true")) == "/alice/coord/step"

    run(tmp_path, body)


def test_a_child_named_by_its_parents_bundle_runs_on_the_parents_files(tmp_path: Path) -> None:
    """Iris's in-task client sends the task's ``IRIS_BUNDLE_ID`` instead of a zip."""
    async def body(core: Core) -> None:
        coord = core.launch(launch_request("coord", "echo $IRIS_BUNDLE_ID; sleep 30",
                                           bundle_blob=zip_bundle({"step.txt": "from the parent's workspace\n"})))
        step = child(coord, "step", "cat step.txt", bundle_id=(await stored_lines(core, coord))[0])
        assert (await core.wait(core.launch(step))).state == J.JOB_STATE_SUCCEEDED
        assert core.lines(step.name) == ["from the parent's workspace"]
        unknown = child(coord, "lost", "true", bundle_id="0" * 64)
        assert "names no bundle this controller holds" in refused(Code.INVALID_ARGUMENT, lambda: core.launch(unknown))

    run(tmp_path, body)


def test_scopes_list_roots_or_one_jobs_children_with_has_children(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        coord = core.launch(launch_request("coord", "sleep 30"))
        steps = [core.launch(child(coord, f"step-{i}", "sleep 30")) for i in range(3)]
        grandchild = core.launch(child(steps[0], "sub", "sleep 30"))
        other = core.launch(launch_request("other", "true"))
        roots = listing(core, C.JOB_QUERY_SCOPE_ROOTS)
        assert [(j.job_id, j.has_children) for j in roots.jobs] == [(other, False), (coord, True)]
        assert roots.total_count == 2
        children = listing(core, C.JOB_QUERY_SCOPE_CHILDREN, coord, limit=2)
        assert [j.job_id for j in children.jobs] == steps[:0:-1] and (children.total_count, children.has_more) == (3, True)
        assert [j.has_children for j in listing(core, C.JOB_QUERY_SCOPE_CHILDREN, coord).jobs] == [False, False, True]
        every = listing(core, C.JOB_QUERY_SCOPE_ALL)
        assert every.total_count == 6 and not any(j.parent_job_id for j in every.jobs)  # as Iris lists them
        status = core.status(grandchild)
        assert (status.parent_job_id, status.has_children, core.status(steps[0]).has_children) == (steps[0], False, True)
        assert listing(core, C.JOB_QUERY_SCOPE_CHILDREN, "/alice/nobody").total_count == 0
        assert "parent_job_id is required" in refused(Code.INVALID_ARGUMENT,
                                                       lambda: listing(core, C.JOB_QUERY_SCOPE_CHILDREN))

    run(tmp_path, body)


def test_success_ends_the_jobs_below_and_a_failure_does_by_the_preemption_policy(tmp_path: Path) -> None:
    """Iris's rule (``controller.kernel.trees``): SUCCEEDED always ends them; FAILED only under
    TERMINATE_CHILDREN, the default of a one-task job; a two-task job preserves them."""
    async def body(core: Core) -> None:
        cases = {"quick": ("sleep 0.3", 1), "broken": ("sleep 0.3; exit 3", 1), "pair": ("sleep 0.3; exit 3", 2)}
        kids = {}
        for name, (command, replicas) in cases.items():
            parent = core.launch(launch_request(name, command, replicas=replicas))
            kids[name] = (parent, core.launch(child(parent, "step", "sleep 30")),
                          core.launch(child(f"{parent}/step", "sub", "sleep 30")))
        for parent, step, sub in kids.values():
            await core.wait(parent)
        for name in ("quick", "broken"):
            for below in kids[name][1:]:
                status = await core.wait(below)
                assert (status.state, status.error) == (J.JOB_STATE_KILLED, "Parent job terminated"), (name, below)
        pair, step, sub = kids["pair"]
        assert core.status(pair).state == J.JOB_STATE_FAILED
        assert (await core.wait(step, {J.JOB_STATE_RUNNING})).state == J.JOB_STATE_RUNNING
        core.service.terminate_job(C.TerminateJobRequest(job_id=pair))  # a finished parent: its subtree still ends
        assert [(await core.wait(j)).error for j in (step, sub)] == ["Parent job terminated"] * 2

    run(tmp_path, body, slots=8)


def test_terminate_and_complete_end_the_whole_tree(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        policy = J.JOB_PREEMPTION_POLICY_PRESERVE_CHILDREN  # TerminateJob ignores it
        root = core.launch(launch_request("root", "sleep 30", preemption_policy=policy))
        mid = core.launch(child(root, "mid", "sleep 30", preemption_policy=policy))
        leaf = core.launch(child(mid, "leaf", "sleep 30"))
        await core.wait(leaf, {J.JOB_STATE_RUNNING})
        core.service.terminate_job(C.TerminateJobRequest(job_id=root))
        assert [((s := await core.wait(j)).state, s.error) for j in (root, mid, leaf)] == [
            (J.JOB_STATE_KILLED, "Terminated by user"), (J.JOB_STATE_KILLED, "Parent job terminated"),
            (J.JOB_STATE_KILLED, "Parent job terminated")]
        done = core.launch(launch_request("done", "sleep 30"))
        step = core.launch(child(done, "step", "sleep 30"))
        core.service.complete_job(C.CompleteJobRequest(job_id=done))
        assert core.status(done).state == J.JOB_STATE_SUCCEEDED
        assert (await core.wait(step)).state == J.JOB_STATE_KILLED
        assert not core.engine.running or all(r.settled for r in core.engine.running.values())

    run(tmp_path, body)


def test_a_retried_parent_task_ends_the_jobs_below_it(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        marker = tmp_path / "second-attempt"
        parent = core.launch(launch_request(
            "retried", f"if [ -e {marker} ]; then sleep 30; fi; touch {marker}; sleep 0.5; exit 1",
            max_retries_failure=1, max_task_failures=1))
        step = core.launch(child(parent, "step", "sleep 30"))
        status = await core.wait(step)
        assert (status.state, status.error) == (J.JOB_STATE_KILLED, "Parent task retried")
        assert core.status(parent).state in (J.JOB_STATE_PENDING, J.JOB_STATE_RUNNING)

    run(tmp_path, body)


def test_replacing_a_root_replaces_its_whole_tree(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        root = core.launch(launch_request("coord", "echo first-run; sleep 30"))
        step = core.launch(child(root, "step", "echo old-step; sleep 30"))
        core.launch(child(step, "sub", "sleep 30"))
        await core.wait(step, {J.JOB_STATE_RUNNING})
        again = launch_request("coord", "echo second-run", existing_job_policy=J.EXISTING_JOB_POLICY_RECREATE)
        assert core.launch(again) == root
        assert listing(core, C.JOB_QUERY_SCOPE_ALL).total_count == 1 and not core.status(root).has_children
        for gone in (step, f"{step}/sub"):
            refused(Code.NOT_FOUND, lambda gone=gone: core.status(gone))  # type: ignore[misc]
        await core.wait(root)
        assert core.lines(root) == ["second-run"]
        assert not [r for r in core.engine.running.values() if not r.forgotten]
        # %%fray's policy (KEEP): a cell run again after its coordinator ended replaces the ended tree
        cell = core.launch(launch_request("cell", "sleep 0.5"))
        ended = core.launch(child(cell, "step", "sleep 30"))
        await core.wait(ended)
        assert core.launch(launch_request("cell", "true")) == cell
        refused(Code.NOT_FOUND, lambda: core.status(ended))

    run(tmp_path, body)


def test_a_jobs_logs_with_a_prefix_include_every_descendants(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        # the root and its step run on (a step that ended would end ``sub`` with it, as Iris does)
        root = core.launch(launch_request("coord", "echo root; sleep 30"))
        step = core.launch(child(root, "step", "echo step; sleep 30"))
        sub = core.launch(child(step, "sub", "echo sub"))
        sibling = core.launch(launch_request("coord-2", "echo sibling"))  # shares the name's prefix, not the tree
        for job_id in (sub, sibling):
            await core.wait(job_id)
        for job_id in (root, step):  # a running job's line is stored once the buffer flushes
            await stored_lines(core, job_id)

        def keys(source: str, scope: int) -> list[str]:
            answer = core.service.fetch_logs(F.FetchLogsRequest(source=source, match_scope=scope))
            return sorted(e.key or f"{e.data}" for e in answer.entries)

        assert keys(f"{root}/", F.MATCH_SCOPE_PREFIX) == [f"{root}/0:0", f"{step}/0:0", f"{sub}/0:0"]
        assert keys(f"{step}/0:", F.MATCH_SCOPE_PREFIX) == [f"{step}/0:0"]
        assert keys("/alice/coord", F.MATCH_SCOPE_PREFIX) == sorted([f"{root}/0:0", f"{step}/0:0", f"{sub}/0:0",
                                                                     f"{sibling}/0:0"])
        assert keys(f"{sub}/0:0", F.MATCH_SCOPE_EXACT) == ["sub"]  # an exact read leaves keys out, as finelog
        whole = core.service.get_task_logs(C.GetTaskLogsRequest(id=root, include_children=True))
        assert {b.task_id: [e.data for e in b.logs] for b in whole.task_logs} == {
            f"{root}/0": ["root"], f"{step}/0": ["step"], f"{sub}/0": ["sub"]}
        assert core.lines(root) == ["root"]

    run(tmp_path, body)


def test_the_change_feed_reports_a_parent_when_its_children_come_go_or_change_state(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        seen: list[str] = []
        core.store.on_change = seen.append
        root = core.launch(launch_request("coord", "sleep 30"))
        seen.clear()
        step = core.launch(child(root, "step", "true"))
        assert root in seen
        await core.wait(step)
        seen.clear()
        core.launch(launch_request("coord", "true", existing_job_policy=J.EXISTING_JOB_POLICY_RECREATE))
        assert {root, step} <= set(seen)

    run(tmp_path, body)


@pytest.mark.parametrize("slots", [1, 2, 4])
def test_a_waiting_tree_never_deadlocks_its_slots(tmp_path: Path, slots: int) -> None:
    """Every level of a three-deep tree waits (until the test releases it, once the level below
    has succeeded); with one slot the lent slot passes down and back up, with more they run side by
    side; a second tree queued behind the first runs after it (``test_controller_scheduler``: it
    never takes the lent slots)."""
    async def body(core: Core) -> None:
        def held(name: str) -> str:
            return f"while [ ! -e {tmp_path / name} ]; do sleep 0.02; done"

        trees = []
        for tree in ("a", "b"):
            root = core.launch(launch_request(f"coord-{tree}", held(f"{tree}-root")))
            trees.append(root)
        for tree, root in zip("ab", trees, strict=True):
            await core.wait(root, {J.JOB_STATE_RUNNING})
            step = core.launch(child(root, "step", held(f"{tree}-step")))
            sub = core.launch(child(step, "sub", "true"))
            for job_id, release in ((sub, f"{tree}-step"), (step, f"{tree}-root"), (root, "")):
                assert (await core.wait(job_id)).state == J.JOB_STATE_SUCCEEDED, job_id
                if release:
                    (tmp_path / release).touch()
        assert core.engine.slot_ledger().free == slots
