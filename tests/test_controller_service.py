"""The transport-free core in process: launch policies, queries, tasks, logs, retries, limits."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fray_jupyter.controller.rpc_error import Code
from fray_jupyter.iris.proto import controller_pb2, job_pb2, time_pb2
from tests.controller_harness import launch_request
from tests.service_core import Core, refused, run, zip_bundle

C = controller_pb2.Controller
J = job_pb2


def test_existing_job_policies(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        request = launch_request("policy", "sleep 30")
        job_id = core.launch(request)
        first = core.status(job_id).submitted_at.epoch_ms
        for policy in (J.EXISTING_JOB_POLICY_UNSPECIFIED, J.EXISTING_JOB_POLICY_ERROR):
            request.existing_job_policy = policy
            assert "already exists" in refused(Code.ALREADY_EXISTS, lambda: core.launch(request))
        request.existing_job_policy = J.EXISTING_JOB_POLICY_KEEP
        assert core.launch(request) == job_id and core.status(job_id).submitted_at.epoch_ms == first
        await core.wait(job_id, {J.JOB_STATE_RUNNING})
        request.existing_job_policy = J.EXISTING_JOB_POLICY_RECREATE
        core.launch(request)
        replaced = core.status(job_id)  # Iris cancels the running job and starts its replacement PENDING
        assert replaced.submitted_at.epoch_ms > first and replaced.state == J.JOB_STATE_PENDING
        assert [attempt.attempt_id for task in core.tasks(job_id) for attempt in task.attempts] == []
        core.service.terminate_job(C.TerminateJobRequest(job_id=job_id))
        assert core.status(job_id).state == J.JOB_STATE_KILLED
        for policy in (J.EXISTING_JOB_POLICY_KEEP, J.EXISTING_JOB_POLICY_UNSPECIFIED):  # finished: replaced
            request.existing_job_policy = policy
            core.launch(request)
            assert core.status(job_id).state != J.JOB_STATE_KILLED
            core.service.terminate_job(C.TerminateJobRequest(job_id=job_id))
        listed = core.service.list_jobs(C.ListJobsRequest())
        assert [job.job_id for job in listed.jobs] == [job_id]

    run(tmp_path, body)


def test_list_jobs_filters_sorts_and_pages(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        ids = [core.launch(launch_request(name, "true", user="bob")) for name in ("Beta", "alpha", "gamma-x")]
        for job_id in ids:
            await core.wait(job_id)
        core.launch(launch_request("delta", "sleep 30", user="bob"))

        def query(**fields: object) -> C.ListJobsResponse:
            return core.service.list_jobs(C.ListJobsRequest(query=C.JobQuery(**fields)))

        assert [j.job_id for j in query().jobs] == ["/bob/delta", *reversed(ids)]  # newest first
        by_name = query(sort_field=C.JOB_SORT_FIELD_NAME, limit=2)
        assert [j.name for j in by_name.jobs] == ["/bob/alpha", "/bob/beta"]
        assert (by_name.total_count, by_name.has_more) == (4, True)
        assert [j.job_id for j in query(sort_field=C.JOB_SORT_FIELD_NAME, offset=3).jobs] == ["/bob/gamma-x"]
        assert [j.job_id for j in query(name_filter="ALP").jobs] == ["/bob/alpha"]
        assert query(name_filter="%").total_count == 0
        assert query(state_filter="succeeded").total_count == 3
        assert query(state_filter="RUNNING").total_count + query(state_filter="pending").total_count == 1
        assert query(state_filter="no-such-state").total_count == 0
        assert query(job_id_prefix="/bob/g").total_count == 1
        assert query(sort_field=C.JOB_SORT_FIELD_STATE).jobs[0].job_id == "/bob/delta"
        refused(Code.INVALID_ARGUMENT, lambda: query(scope=C.JOB_QUERY_SCOPE_CHILDREN))
        states = core.service.get_job_state(C.GetJobStateRequest(job_ids=[ids[0], "/bob/unknown"])).states
        assert dict(states) == {ids[0]: J.JOB_STATE_SUCCEEDED}

    run(tmp_path, body)


def test_reads_of_unknown_jobs_and_tasks_are_not_found(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        job_id = core.launch(launch_request("known", "true", replicas=2))
        svc = core.service
        refused(Code.NOT_FOUND, lambda: svc.get_job_status(C.GetJobStatusRequest(job_id="/x/none")))
        refused(Code.NOT_FOUND, lambda: svc.terminate_job(C.TerminateJobRequest(job_id="")))
        refused(Code.NOT_FOUND, lambda: svc.list_tasks(C.ListTasksRequest(job_id="/x/none")))
        refused(Code.NOT_FOUND, lambda: svc.get_task_status(C.GetTaskStatusRequest(task_id=f"{job_id}/2")))
        refused(Code.NOT_FOUND, lambda: svc.get_task_status(C.GetTaskStatusRequest(task_id=job_id)))
        refused(Code.NOT_FOUND, lambda: svc.get_task_logs(C.GetTaskLogsRequest(id="/x/none/0")))
        task = svc.get_task_status(C.GetTaskStatusRequest(task_id=f"{job_id}/1"))
        assert task.task.task_id == f"{job_id}/1" and task.job_resources.cpu_millicores == 1000
        await core.wait(job_id)

    run(tmp_path, body)


def test_bundle_workdir_files_and_setup_commands(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        request = launch_request("files", "cat pkg/a.txt b.txt setup.txt; echo $IRIS_BUNDLE_ID",
                                 bundle_blob=zip_bundle({"pkg/a.txt": "from-bundle\n", "b.txt": "overridden\n"}))
        request.entrypoint.workdir_files["b.txt"] = b"from-workdir-files\n"
        request.entrypoint.setup_commands[:] = ["echo set-up > setup.txt", "echo second"]
        job_id = core.launch(request)
        assert (await core.wait(job_id)).state == J.JOB_STATE_SUCCEEDED
        lines = core.lines(job_id)
        assert lines[:4] == ["second", "from-bundle", "from-workdir-files", "set-up"]
        assert len(lines[4]) == 64  # sha256 of the bundle, the bundle id
        launched = core.service.get_job_status(C.GetJobStatusRequest(job_id=job_id)).request
        assert not launched.bundle_blob and not launched.entrypoint.workdir_files

        failing = launch_request("setup-fails", "echo never")
        failing.entrypoint.setup_commands[:] = ["exit 7"]
        job_id = core.launch(failing)
        final = await core.wait(job_id)
        assert final.state == J.JOB_STATE_FAILED and "setup command 1/1 failed with exit code 7" in final.error
        assert "never" not in core.lines(job_id)

    run(tmp_path, body)


def test_timeout_fails_the_task_without_retry(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        job_id = core.launch(launch_request("slow", "sleep 30", timeout=time_pb2.Duration(milliseconds=300),
                                            max_retries_failure=3, max_task_failures=3))
        final = await core.wait(job_id)
        assert final.state == J.JOB_STATE_FAILED and "timeout" in final.error.lower()
        (task,) = core.tasks(job_id)
        assert len(task.attempts) == 1 and task.state == J.TASK_STATE_FAILED

    run(tmp_path, body)


def test_a_failed_gang_member_restarts_the_whole_gang(tmp_path: Path) -> None:
    marker = tmp_path / "failed-once"
    script = f'i=${{IRIS_TASK_ID##*/}}; i=${{i%%:*}}; if [ "$i" = 0 ] && mkdir {marker} 2>/dev/null; then exit 1; fi; sleep 0.5'

    async def body(core: Core) -> None:
        job_id = core.launch(launch_request(
            "gang", script, replicas=2, coscheduling=J.CoschedulingConfig(group_by="tpu-name"),
            max_retries_failure=1, max_task_failures=1))
        final = await core.wait(job_id)
        assert final.state == J.JOB_STATE_SUCCEEDED and final.failure_count == 1
        first, second = core.tasks(job_id)
        assert [a.state for a in first.attempts] == [J.TASK_STATE_FAILED, J.TASK_STATE_SUCCEEDED]
        assert [a.state for a in second.attempts] == [J.TASK_STATE_COSCHED_FAILED, J.TASK_STATE_SUCCEEDED]
        assert "bounced" in second.attempts[0].error

    run(tmp_path, body)


def test_log_paging_with_a_line_cap(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        job_id = core.launch(launch_request("pages", "seq 1 5; seq 6 7 >&2"))
        await core.wait(job_id)
        await core.until(lambda: len(core.lines(job_id)) >= 7,  # a task's last lines may reach the store after its end
                         "all 7 lines stored")
        seen, cursor = [], 0
        for _ in range(10):
            page = core.service.get_task_logs(C.GetTaskLogsRequest(id=f"{job_id}/0:0", cursor=cursor,
                                                                   max_total_lines=2))
            seen += [(e.source, e.data) for batch in page.task_logs for e in batch.logs]
            cursor = page.cursor
            if not page.truncated:
                break
        assert [data for _, data in seen] == [str(i) for i in range(1, 8)]
        assert {source for source, data in seen if data in ("6", "7")} == {"stderr"}
        assert core.service.get_task_logs(C.GetTaskLogsRequest(id=job_id, cursor=cursor)).task_logs[0].logs == []

    run(tmp_path, body)


def test_requested_resources_are_recorded_not_enforced(tmp_path: Path) -> None:
    from fray_jupyter.resources import ResourceConfig

    async def body(core: Core) -> None:
        gpu = ResourceConfig.with_gpu("H100", count=8, cpu=32, ram="512g", disk="256g", replicas=2)
        job_id = core.launch(launch_request("gpu", "true", resources=gpu))
        final = await core.wait(job_id)
        assert final.state == J.JOB_STATE_SUCCEEDED
        assert final.status_message.startswith("emulating 8× H100 per task on this machine's CPU")
        assert "32 cores, 512 GiB RAM, 256 GiB disk" in final.status_message
        assert final.resources.device.gpu.count == 8

    run(tmp_path, body)


# -- identity: a replaced job and its replacement never mix -----------------------------------------
STUBBORN = "trap '' TERM; echo old > marker; echo old-line; sleep 30"
FRESH = 'test -e marker && echo saw-old-marker; echo new-line; pwd'


def test_recreating_a_running_job_whose_task_ignores_sigterm(tmp_path: Path) -> None:
    """The replacement reaches SUCCEEDED with its own logs and a fresh work dir, although the old
    task holds its slot (and its row id was the newest) until it is killed a moment later."""
    async def body(core: Core) -> None:
        request = launch_request("rerun", STUBBORN)
        job_id = core.launch(request)
        await core.wait(job_id, {J.JOB_STATE_RUNNING})
        await core.until(lambda: "old-line" in core.lines(job_id), "the old task's line stored")
        old_workdir = core.store.attempts(job_id)[0].workdir
        replacement = launch_request("rerun", FRESH, existing_job_policy=J.EXISTING_JOB_POLICY_RECREATE)
        assert core.launch(replacement) == job_id
        final = await core.wait(job_id)
        assert final.state == J.JOB_STATE_SUCCEEDED, final
        # the old task's end (SIGKILL after the grace) comes and goes
        await core.until(lambda: not core.engine.running, "no task running")
        lines = core.lines(job_id)
        assert lines[:2] == ["new-line", lines[1]] and "old-line" not in lines and "saw-old-marker" not in lines
        new_workdir = core.store.attempts(job_id)[0].workdir
        assert lines[1] == new_workdir != old_workdir
        assert (Path(old_workdir) / "marker").exists() and not (Path(new_workdir) / "marker").exists()
        assert core.status(job_id).state == J.JOB_STATE_SUCCEEDED and core.lines(job_id) == lines
        assert core.store.strays() == []

    run(tmp_path, body)


def test_every_rerun_gets_a_new_row_id_and_a_fresh_work_dir(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        request = launch_request("again", "ls -A; touch left-behind",
                                 existing_job_policy=J.EXISTING_JOB_POLICY_RECREATE)
        ids, workdirs = [], []
        for _ in range(3):
            job_id = core.launch(request)
            assert (await core.wait(job_id)).state == J.JOB_STATE_SUCCEEDED
            job = core.store.job(job_id)
            assert job is not None
            ids.append(job.id)
            workdirs.append(core.store.attempts(job_id)[0].workdir)
            assert core.lines(job_id) == [".iris-outputs"]
        assert ids == sorted(set(ids)) and len(set(workdirs)) == 3

    run(tmp_path, body)


def test_a_replacement_that_fails_to_store_leaves_the_old_job_whole(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    async def body(core: Core) -> None:
        job_id = core.launch(launch_request("whole", "echo done", replicas=2))
        await core.wait(job_id)
        before = (core.status(job_id), core.tasks(job_id), core.lines(job_id))

        def broken(job: object) -> None:
            raise RuntimeError("disk on fire")
        monkeypatch.setattr(core.store, "insert_job", broken)
        with pytest.raises(RuntimeError):
            core.launch(launch_request("whole", "echo other", existing_job_policy=J.EXISTING_JOB_POLICY_RECREATE))
        assert (core.status(job_id), core.tasks(job_id), core.lines(job_id)) == before

    run(tmp_path, body)


# -- zip bombs -------------------------------------------------------------------------------------
def test_a_zip_bomb_bundle_is_refused_naming_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fray_jupyter.controller.runtime import runner

    monkeypatch.setattr(runner, "MAX_UNPACKED_BUNDLE_BYTES", 4 * 2**20)
    monkeypatch.setattr(runner, "MAX_BUNDLE_ENTRIES", 100)
    big = zip_bundle({"zeros.bin": b"\0" * (5 * 2**20)}, deflated=True)
    assert len(big) < 64 * 1024  # tiny zipped, 5 MiB unpacked

    async def body(core: Core) -> None:
        message = refused(Code.INVALID_ARGUMENT, lambda: core.launch(launch_request("bomb", "true", bundle_blob=big)))
        assert "over the limit of 4 MiB unpacked (MAX_UNPACKED_BUNDLE_BYTES)" in message
        many = zip_bundle({f"f{i}": b"" for i in range(101)}, deflated=True)
        message = refused(Code.INVALID_ARGUMENT, lambda: core.launch(launch_request("many", "true", bundle_blob=many)))
        assert "101 entries, over the limit of 100 entries (MAX_BUNDLE_ENTRIES)" in message
        # a bundle admitted under other limits is checked again before each unpacking
        unpacked = core.launch(launch_request("unpacked", "true", bundle_blob=zip_bundle({"a": b"x" * 100}, deflated=True)))
        monkeypatch.setattr(runner, "MAX_UNPACKED_BUNDLE_BYTES", 10)  # before the engine's next turn starts it
        final = await core.wait(unpacked)
        assert final.state == J.JOB_STATE_FAILED and "could not prepare the work dir" in final.error
        assert "over the limit" in final.error

    run(tmp_path, body, slots=1)


# -- engine callbacks are not fire-and-forget ------------------------------------------------------
def test_a_failure_recording_an_attempts_end_fails_the_job_with_the_reason(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    async def body(core: Core) -> None:
        real = core.store.update_attempt
        failures: list[str] = []

        def flaky(job_id: str, idx: int, attempt: int, **values: object) -> None:
            if "exit_code" in values and not failures:
                failures.append(job_id)
                raise sqlite3.OperationalError("disk I/O error")
            real(job_id, idx, attempt, **values)
        monkeypatch.setattr(core.store, "update_attempt", flaky)
        job_id = core.launch(launch_request("unrecorded", "echo ran"))
        final = await core.wait(job_id)
        assert failures == [job_id]
        assert final.state == J.JOB_STATE_FAILED
        assert "controller error while recording the end of the task: OperationalError: disk I/O error" in final.error
        assert not core.engine.running and core.engine.slot_ledger().free == core.engine.slots

    run(tmp_path, body)


def test_close_waits_for_attempts_at_most_its_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fray_jupyter.controller.kernel.exits import Outcome
    from fray_jupyter.controller.runtime.runner import Attempt

    async def never_ends(self: Attempt) -> Outcome:
        try:
            await asyncio.sleep(3600)  # stuck: stop() does nothing to it
        except asyncio.CancelledError:
            pass
        raise asyncio.CancelledError

    monkeypatch.setattr(Attempt, "run", never_ends)

    async def main() -> None:
        core = Core(tmp_path, 2)
        runner = asyncio.ensure_future(core.engine.run())
        job_id = core.launch(launch_request("stuck", "true"))
        await core.wait(job_id, {J.JOB_STATE_PENDING, J.JOB_STATE_RUNNING})
        await core.until(lambda: core.engine.running, "the task running")
        await asyncio.wait_for(core.engine.close(timeout=0.5), 10)  # returns: close does not wait for it
        assert core.status(job_id).state == J.JOB_STATE_WORKER_FAILED
        runner.cancel()
        core.store.close()

    asyncio.run(main())


def test_an_idle_engine_sets_no_timer_and_a_scheduling_deadline_still_fires(tmp_path: Path) -> None:
    """Idle rule: with nothing queued the engine (and its log flusher) sleep on events only, so an
    idle controller never wakes; a queued job's scheduling timeout arms one timer, for its deadline."""
    async def body(core: Core) -> None:
        loop = asyncio.get_running_loop()
        for _ in range(3):  # the engine and its flusher reach their waits (no time passes)
            await asyncio.sleep(0)
        assert [timer for timer in loop._scheduled if not timer.cancelled()] == []  # type: ignore[attr-defined]
        blocker = core.launch(launch_request("blocker", "sleep 30"))
        await core.wait(blocker, {J.JOB_STATE_RUNNING})
        request = launch_request("waits", "true")
        request.scheduling_timeout.milliseconds = 200
        status = await core.wait(core.launch(request), {J.JOB_STATE_UNSCHEDULABLE})
        assert "Scheduling timeout exceeded" in status.error

    run(tmp_path, body, slots=1)


FAILING = ("echo starting; printf 'Loading:  45%%|####5     | 450/1000 [00:12<00:15,  3.21it/s]\\n' >&2; "
           "printf 'Traceback (most recent call last):\\n  File \"train.py\", line 3, in <module>\\n' >&2; "
           "echo \"ValueError: bad shape on attempt ${IRIS_TASK_ID##*:}\" >&2; exit 1")


def test_a_failed_task_names_its_exception_lines_as_the_root_cause(tmp_path: Path) -> None:
    """GetTaskStatus of a FAILED task carries Iris's highlights from its log, every attempt's (the
    progress bar never counts); each retry is an attempt, each failure is counted; a task that
    succeeded has none."""
    async def body(core: Core) -> None:
        failing = core.launch(launch_request("fails", FAILING, max_retries_failure=1, max_task_failures=1))
        fine = core.launch(launch_request("fine", "echo 'ValueError: only printed'"))
        assert (await core.wait(failing)).state == J.JOB_STATE_FAILED
        assert (await core.wait(fine)).state == J.JOB_STATE_SUCCEEDED
        response = core.service.get_task_status(C.GetTaskStatusRequest(task_id=f"{failing}/0"))
        traceback = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>']
        assert list(response.root_cause_highlights) == [
            *traceback, "ValueError: bad shape on attempt 0", *traceback, "ValueError: bad shape on attempt 1"]
        assert [(a.attempt_id, a.state, a.exit_code) for a in response.task.attempts] == [
            (0, J.TASK_STATE_FAILED, 1), (1, J.TASK_STATE_FAILED, 1)]
        assert core.status(failing).failure_count == 2
        quiet = core.service.get_task_status(C.GetTaskStatusRequest(task_id=f"{fine}/0"))
        assert list(quiet.root_cause_highlights) == []

    run(tmp_path, body)


def test_a_running_task_stopped_out_of_band_counts_as_a_preemption(tmp_path: Path) -> None:
    """Iris's rule: a started attempt ended KILLED charges the preemption budget; a task cancelled
    before it started charges nothing, and its PENDING wait said why."""
    async def body(core: Core) -> None:
        running = core.launch(launch_request("runs", "sleep 30", replicas=2))
        waiting = core.launch(launch_request("waits", "sleep 30"))
        await core.wait(running, {J.JOB_STATE_RUNNING})
        await core.running(running)
        (queued,) = core.tasks(waiting)
        assert "free task slot" in queued.pending_reason and "free task slot" in core.status(waiting).pending_reason
        for job_id in (running, waiting):
            core.service.terminate_job(C.TerminateJobRequest(job_id=job_id))
        assert (await core.wait(running)).preemption_count == 2
        assert (await core.wait(waiting)).preemption_count == 0
        assert {a.state for t in core.tasks(running) for a in t.attempts} == {J.TASK_STATE_KILLED}

    run(tmp_path, body, slots=2)


def test_a_list_page_says_why_each_queued_job_waits_as_its_own_status_does(tmp_path: Path) -> None:
    """ListJobs reads the slot ledger once for its page; each row's pending reason is still the one
    GetJobStatus gives that job alone (a plain job waits for one slot, a gang for all of its own)."""
    async def body(core: Core) -> None:
        running = core.launch(launch_request("holds", "sleep 30", replicas=2))
        await core.wait(running, {J.JOB_STATE_RUNNING})
        plain = core.launch(launch_request("plain", "sleep 30"))
        gang = core.launch(launch_request("gang", "sleep 30", replicas=2,
                                          coscheduling=J.CoschedulingConfig(group_by="tpu-name")))
        listed = {job.job_id: job.pending_reason for job in core.service.list_jobs(C.ListJobsRequest()).jobs}
        alone = {job_id: core.status(job_id).pending_reason for job_id in (plain, gang)}
        assert {job_id: listed[job_id] for job_id in alone} == alone
        assert "a free task slot" in alone[plain] and "2 free task slots at once" in alone[gang]
        for job_id in (running, plain, gang):
            core.service.terminate_job(C.TerminateJobRequest(job_id=job_id))

    run(tmp_path, body, slots=2)
