"""Retention: files of finished jobs (work dirs, bundles, output archives) go by age or by the state dir's size cap,
oldest first; running jobs and job records stay; leftovers of replaced jobs go; logs are capped
per task with a visible marker."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from fray_jupyter.client.results import ResultUnavailable, task_result
from fray_jupyter.controller.engine.engine import Engine
from fray_jupyter.controller.store.retention import Policy, Retention, parse_size, tree_bytes
from fray_jupyter.iris.proto import job_pb2
from tests.controller_harness import launch_request
from tests.service_core import Core, run, zip_bundle

J = job_pb2
A = job_pb2.TaskOutputArchive


def retention(core: Core, root: Path, **policy: object) -> Retention:
    engine: Engine = core.engine
    return Retention(core.store, root, Policy(**policy),  # type: ignore[arg-type]
                     lambda: {running.job.id for running in engine.running.values()})


def workdir_of(core: Core, job_id: str) -> Path:
    return Path(core.store.attempts(job_id)[0].workdir)


def test_files_of_finished_jobs_go_after_the_retention_days_records_and_running_jobs_stay(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        done = core.launch(launch_request("done", "echo kept-log > out.txt; echo line",
                                          bundle_blob=zip_bundle({"a.py": b"x"}, deflated=True)))
        await core.wait(done)
        running = core.launch(launch_request("running", "sleep 30"))
        await core.wait(running, {J.JOB_STATE_RUNNING})
        job = core.store.job(done)
        assert job is not None and Path(job.bundle_path).exists() and workdir_of(core, done).exists()
        report = await retention(core, tmp_path, days=0).collect()
        assert report.jobs_cleaned == 1 and report.reasons == {"age": 1} and report.bytes_freed > 0
        assert not workdir_of(core, done).exists() and not Path(job.bundle_path).exists()
        assert workdir_of(core, running).exists()
        assert core.status(done).state == J.JOB_STATE_SUCCEEDED and core.lines(done) == ["line"]  # record kept
        again = await retention(core, tmp_path, days=0).collect()
        assert again.jobs_cleaned == 0  # nothing twice
        fresh = await retention(core, tmp_path, days=7).collect()
        assert fresh.jobs_cleaned == 0

    run(tmp_path, body)


def test_a_cleaned_jobs_output_archives_go_and_its_result_says_why(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        done = core.launch(launch_request("outputs", 'echo 42 > "$IRIS_OUTPUT_DIR/answer.txt"'))
        await core.wait(done)
        archive = core.tasks(done)[0].attempts[0].output_archive
        assert archive.state == A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED
        path = Path(archive.uri.removeprefix("file://"))
        assert path.is_file()
        await retention(core, tmp_path, days=0).collect()
        task = core.tasks(done)[0]
        gone = task.attempts[0].output_archive
        assert not path.exists() and gone.state == A.TASK_OUTPUT_ARCHIVE_STATE_UNAVAILABLE
        assert "retention" in gone.error and "kept 0 days" in gone.error
        with pytest.raises(ResultUnavailable, match="removed by the embedded controller's retention"):
            task_result(task, done)

    run(tmp_path, body)


def test_over_the_size_cap_the_oldest_finished_jobs_go_first(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        ids = []
        for index in range(4):
            ids.append(core.launch(launch_request(f"big{index}", "head -c 1048576 /dev/zero > blob")))
            await core.wait(ids[-1])
        base = tree_bytes(tmp_path) - 4 * 2**20
        report = await retention(core, tmp_path, max_bytes=base + int(2.5 * 2**20)).collect()
        assert report.jobs_cleaned == 2 and report.reasons == {"size cap": 2} and not report.over_cap
        assert [workdir_of(core, job_id).exists() for job_id in ids] == [False, False, True, True]
        assert report.state_bytes <= base + 2.5 * 2**20

    run(tmp_path, body)


def test_leftovers_of_a_replaced_job_are_removed(tmp_path: Path) -> None:
    async def body(core: Core) -> None:
        first = core.launch(launch_request("again", "echo one"))
        await core.wait(first)
        old = workdir_of(core, first)
        core.launch(launch_request("again", "echo two", existing_job_policy=J.EXISTING_JOB_POLICY_RECREATE))
        await core.wait(first)
        report = await retention(core, tmp_path).collect()
        assert report.leftovers_removed == 1 and not old.parent.exists() and workdir_of(core, first).exists()

    run(tmp_path, body)


def test_a_task_log_is_capped_with_a_visible_marker(tmp_path: Path) -> None:
    async def main() -> None:
        core = Core(tmp_path, 2)
        core.engine.logs.max_lines = 5
        runner = asyncio.ensure_future(core.engine.run())
        try:
            job_id = core.launch(launch_request("chatty", "seq 1 20"))
            await core.wait(job_id)
            assert core.lines(job_id) == ["1", "2", "3", "4", "5",
                                          "… log cap of 5 lines per task reached: later lines are dropped",
                                          "… 15 lines truncated (log cap: 5 lines per task)"]
        finally:
            await core.engine.close()
            runner.cancel()
            core.store.close()

    asyncio.run(main())


@pytest.mark.parametrize(("text", "size"), [("500m", 500 * 2**20), ("5g", 5 * 2**30), ("1024", 1024),
                                            ("1.5GiB", 3 * 2**29)])
def test_sizes(text: str, size: int) -> None:
    assert parse_size(text) == size


def test_a_bad_size_is_one_line() -> None:
    with pytest.raises(ValueError, match="size 'lots' must be a number of bytes or like 500m, 5g"):
        parse_size("lots")
