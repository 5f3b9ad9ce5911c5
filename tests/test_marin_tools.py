"""Marin's own tools against the embedded controller, and the same scenarios against a genuine
Iris local cluster, so any difference between the two fails here.

The tools are the real ones from marin-iris / marin-fray 0.2.227: the ``iris`` CLI
(``iris --controller-url URL job run|logs|list|describe|wait|cancel|complete``, ``task``/``attempt``
listings and logs), run in this process (``tests/marin_cli.py``: its click group, as its console
script runs it, without a 3 s import per command), and ``IrisClient`` / ``FrayIrisClient`` in
process. This process runs as the controller's OS user, so, as with a real local Iris, no token is
sent (``test_controller_peer_auth`` covers other users); one test sends the token the way a Marin
user would, through ``MARIN_CLUSTER_TOKEN``, with the installed ``iris`` script as a subprocess.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from fray_jupyter.controller.iris_local import unavailable_reason
from tests.controller_harness import ControllerProcess, start_controller, stop_quietly
from tests.marin_cli import IRIS, CliRun, run_iris, run_iris_process
from tests.real_iris import real_iris_controller
from tests.waiting import until

USER = "marin-tools"
pytestmark = pytest.mark.skipif(unavailable_reason() is not None or not IRIS.exists(),
                                reason=unavailable_reason() or f"no iris CLI at {IRIS}")


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    started = start_controller(tmp_path_factory.mktemp("embedded") / "state")
    yield started
    stop_quietly(started)


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with real_iris_controller(tmp_path_factory.mktemp("genuine")) as url:
        yield url


@pytest.fixture(params=["embedded", "genuine"])
def url(request: pytest.FixtureRequest) -> str:
    """The controller under test: the embedded one, or a genuine Iris local cluster."""
    if request.param == "embedded":
        controller: ControllerProcess = request.getfixturevalue("embedded")
        return controller.info.url
    return str(request.getfixturevalue("genuine"))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty directory to run the CLI from (the client bundles the current directory)."""
    directory = tmp_path / "cwd"
    directory.mkdir()
    return directory


def iris(url: str, *args: str, cwd: Path, env: dict[str, str] | None = None) -> CliRun:
    """Run the real ``iris`` CLI as ``USER``, in this process; stdout and stderr together."""
    return run_iris(url, *args, cwd=cwd, user=USER, env=env)


def job_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_job_run_streams_the_output_and_every_listing_shows_the_job(url: str, workspace: Path,
                                                                   request: pytest.FixtureRequest) -> None:
    name = job_name("hello")
    job_id = f"/{USER}/{name}"
    run = iris(url, "job", "run", "--job-name", name, "--", "sh", "-c", f"echo hello-{name}", cwd=workspace)
    assert run.returncode == 0, run.stdout
    assert job_id in run.stdout
    # the embedded controller has every line of an ended job; a genuine worker ships a task's lines on its own
    # cadence, so Iris's own `job run` may end before they come ("draining logs (total_lines=0)") under load
    streamed = f"task={job_id}/0:0 | hello-{name}" in run.stdout
    assert streamed or request.node.callspec.params["url"] == "genuine", run.stdout
    if not streamed:
        until(lambda: f"| hello-{name}" in iris(url, "job", "logs", job_id, cwd=workspace).stdout,
              f"the line of {job_id} shipped")
    listings = (
        (("job", "logs", job_id), f"task={job_id}/0 attempt=0 | hello-{name}"),
        (("job", "logs", "-f", job_id), f"| hello-{name}"),
        (("job", "logs", "--no-tail", "--substring", "hello", job_id), f"| hello-{name}"),
        (("task", "logs", f"{job_id}/0"), f"| hello-{name}"),
        (("attempt", "logs", f"{job_id}/0:0"), f"| hello-{name}"),
        (("job", "wait", job_id), "succeeded"),
        (("job", "describe", job_id), "State: succeeded"),
        (("job", "list", "--prefix", job_id), job_id),
        (("task", "list", job_id), "succeeded"),
        (("task", "describe", f"{job_id}/0"), "succeeded"),
        (("attempt", "logs", f"{job_id}/0:5"), ""),
    )
    shown = [iris(url, *args, cwd=workspace) for args, _ in listings]  # the job has ended: each reads the same
    for (args, expected), answer in zip(listings[:-1], shown[:-1], strict=True):
        assert answer.returncode == 0 and expected in answer.stdout, (args, answer.stdout)
    assert "hello" not in shown[-1].stdout  # no attempt 5


def test_logs_follow_streams_a_running_job_until_it_ends(url: str, workspace: Path) -> None:
    name = job_name("ticks")
    job_id = f"/{USER}/{name}"
    script = "for i in 1 2 3; do echo tick-$i; sleep 0.4; done"
    submitted = iris(url, "job", "run", "--no-wait", "--job-name", name, "--", "sh", "-c", script, cwd=workspace)
    assert submitted.returncode == 0, submitted.stdout
    followed = iris(url, "job", "logs", "-f", job_id, cwd=workspace)
    assert followed.returncode == 0
    ticks = [line.rsplit("| ", 1)[1] for line in followed.stdout.splitlines() if "| tick-" in line]
    assert ticks == ["tick-1", "tick-2", "tick-3"], followed.stdout


def test_cancel_ends_the_job_killed(url: str, workspace: Path) -> None:
    name = job_name("sleeper")
    job_id = f"/{USER}/{name}"
    assert iris(url, "job", "run", "--no-wait", "--job-name", name, "--", "sleep", "300",
                cwd=workspace).returncode == 0
    cancelled = iris(url, "job", "cancel", job_id, cwd=workspace)
    assert cancelled.returncode == 0 and job_id in cancelled.stdout, cancelled.stdout
    waited = iris(url, "job", "wait", job_id, cwd=workspace)
    assert waited.returncode == 1 and waited.stdout.strip().splitlines()[-1] == "killed", waited.stdout
    unknown = iris(url, "job", "cancel", f"/{USER}/no-such-{name}", cwd=workspace)
    assert unknown.returncode != 0 and "No job named" in unknown.stdout


def test_complete_ends_the_job_succeeded(url: str, workspace: Path) -> None:
    name = job_name("completed")
    job_id = f"/{USER}/{name}"
    assert iris(url, "job", "run", "--no-wait", "--job-name", name, "--", "sleep", "300",
                cwd=workspace).returncode == 0
    completed = iris(url, "job", "complete", job_id, cwd=workspace)
    assert completed.returncode == 0 and f"Completed job: {job_id}" in completed.stdout, completed.stdout
    waited = iris(url, "job", "wait", job_id, cwd=workspace)
    assert waited.returncode == 0 and waited.stdout.strip().splitlines()[-1] == "succeeded", waited.stdout


def test_a_failing_command_fails_the_run(url: str, workspace: Path) -> None:
    name = job_name("fails")
    run = iris(url, "job", "run", "--job-name", name, "--", "sh", "-c", "echo about-to-fail; exit 3", cwd=workspace)
    assert run.returncode == 1 and "| about-to-fail" in run.stdout, run.stdout
    described = iris(url, "job", "describe", f"/{USER}/{name}", cwd=workspace)
    assert "State: failed" in described.stdout, described.stdout
    task_row = next(line.split() for line in described.stdout.splitlines() if line.split()[:2] == ["0", "failed"])
    assert task_row[2] == "3", described.stdout  # the task's EXIT column


def test_a_workspace_is_shipped_and_synced(url: str, tmp_path: Path) -> None:
    """A uv project as the working directory: its files reach the task, and the embedded
    controller runs the client's default `uv sync` into the task's venv, as a real worker does
    (Iris's local cluster skips setup, so the venv is checked on the embedded controller only)."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0.1.0"\n'
                                            'requires-python = ">=3.11"\ndependencies = []\n')
    (project / "data.txt").write_text("from-the-workspace\n")
    name = job_name("workspace")
    script = 'cd "$IRIS_WORKDIR" && cat data.txt; echo "venv=${VIRTUAL_ENV:-none} python=$IRIS_PYTHON"'
    run = iris(url, "job", "run", "--job-name", name, "--", "sh", "-c", script, cwd=project)
    assert run.returncode == 0 and "| from-the-workspace" in run.stdout, run.stdout
    if "| syncing deps" in run.stdout:  # the setup ran (the embedded controller; Iris's local cluster skips it)
        venv = next(line.split("| venv=", 1)[1].split()[0] for line in run.stdout.splitlines() if "| venv=" in line)
        assert venv.endswith("/.venv") and f"python={venv}/bin/python" in run.stdout


def test_fray_iris_client_binary_callable_and_terminate(url: str) -> None:
    from fray.iris_backend import FrayIrisClient
    from fray.types import Entrypoint, JobRequest, JobStatus, ResourceConfig

    client = FrayIrisClient(url)
    name = job_name("fray")
    small = ResourceConfig(cpu=1, ram="1g", disk="1g")  # Fray's default 64 GiB disk fits no local Iris worker
    handle = client.submit(JobRequest(name=name, entrypoint=Entrypoint.from_binary("sh", ["-c", f"echo fray-{name}"]),
                                      resources=small))
    handle.wait(timeout=120)
    assert handle.status() == JobStatus.SUCCEEDED
    assert f"fray-{name}" in handle.logs()

    callable_job = client.submit(JobRequest(name=f"{name}-fn", resources=small, entrypoint=Entrypoint.from_callable(
        _shout, args=(f"callable-{name}",))))
    callable_job.wait(timeout=120)
    assert callable_job.status() == JobStatus.SUCCEEDED and f"CALLABLE-{name.upper()}" in callable_job.logs()

    sleeper = client.submit(JobRequest(name=f"{name}-sleep", entrypoint=Entrypoint.from_binary("sleep", ["300"]),
                                       resources=small))
    sleeper.terminate()
    sleeper.wait(timeout=60, raise_on_failure=False)
    assert sleeper.status() == JobStatus.STOPPED


def _shout(text: str) -> None:
    print(text.upper(), flush=True)


def test_iris_client_wait_streams_the_task_output(url: str, caplog: pytest.LogCaptureFixture) -> None:
    from iris.client.client import IrisClient
    from iris.cluster.types import Entrypoint, EnvironmentSpec, ResourceSpec

    name = job_name("irisclient")
    with IrisClient.remote(url, workspace=None) as client, caplog.at_level(logging.INFO):
        job = client.submit(entrypoint=Entrypoint.from_command("sh", "-c", f"echo streamed-{name}"), name=name,
                            resources=ResourceSpec(cpu=1, memory="512m"), environment=EnvironmentSpec(setup_scripts=[]),
                            user=USER)
        status = job.wait(timeout=120, stream_logs=True)
        assert status.state.value == "succeeded"
        assert any(f"streamed-{name}" in record.getMessage() for record in caplog.records)
        assert [entry.data for entry in job.logs()] == [f"streamed-{name}"]


# -- the embedded controller only --------------------------------------------------------------------
def test_user_budget_set_get_and_list(url: str, workspace: Path) -> None:
    """Marin's ``iris user budget`` verbs: a limit and a max band set for a user are read back, and the
    user is listed with them (the spend of a user with no running work is 0)."""
    user = job_name("budget")
    assert iris(url, "user", "budget", "set", user, "--limit", "75000", "--max-band", "production",
                cwd=workspace).returncode == 0
    got = iris(url, "user", "budget", "get", user, cwd=workspace)
    assert got.returncode == 0, got.stdout
    assert [line.split() for line in got.stdout.splitlines()[-4:]] == [
        ["User:", user], ["Limit:", "75000"], ["Spent:", "0"], ["Max", "band:", "production"]]
    listed = iris(url, "user", "budget", "list", cwd=workspace)
    assert listed.returncode == 0 and [user, "75000", "0", "production"] in [
        line.split() for line in listed.stdout.splitlines()]


def test_the_token_from_the_runtime_file_is_accepted_and_a_wrong_one_refused(embedded: ControllerProcess,
                                                                             workspace: Path) -> None:
    """Through the installed ``iris`` console script, as a subprocess: the entry point works."""
    url = embedded.info.url
    listed = run_iris_process(url, "job", "list", cwd=workspace, user=USER,
                              env={"MARIN_CLUSTER_TOKEN": embedded.info.token})
    assert listed.returncode == 0, listed.stdout
    refused = run_iris_process(url, "job", "list", cwd=workspace, user=USER, env={"MARIN_CLUSTER_TOKEN": "wrong"})
    assert refused.returncode != 0 and "invalid bearer token" in refused.stdout


def test_a_failed_setup_names_its_command_and_output(embedded: ControllerProcess, tmp_path: Path) -> None:
    project = tmp_path / "broken"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "broken"\nversion = "0.1.0"\nrequires-python = ">=99"\n')
    name = job_name("badsetup")
    run = iris(embedded.info.url, "job", "run", "--job-name", name, "--", "echo", "never", cwd=project)
    assert run.returncode == 1 and "| never" not in run.stdout
    described = iris(embedded.info.url, "job", "describe", f"/{USER}/{name}", cwd=project)
    error = next(line for line in described.stdout.splitlines() if line.startswith("Error:"))
    assert "setup command 1/2 failed with exit code 2: uv sync " in error, described.stdout
    assert "incompatible with the project's Python requirement" in described.stdout


@pytest.mark.parametrize(("command", "rpc"), [
    (("query", "select 1"), "ExecuteRawQuery"),
    (("endpoints", "mint", "/system/log-server"), "MintEndpointToken"),
    (("task", "fail", "/x/y/0"), "KickTasks"),
])
def test_commands_needing_what_it_lacks_get_one_clear_line(embedded: ControllerProcess, workspace: Path,
                                                           command: tuple[str, ...], rpc: str) -> None:
    answered = iris(embedded.info.url, *command, cwd=workspace)
    assert answered.returncode != 0
    assert f"{rpc} is not served by the embedded fray-jupyter controller: " in answered.stdout.splitlines()[-1]
    assert embedded.process.poll() is None


# -- coordinators: a task submitting child jobs through Marin's clients and ours ------------------------
COORDINATOR = '''
import os, sys
from fray.client import wait_all
from fray.current_client import current_client
from fray.types import Entrypoint, JobRequest, ResourceConfig
from iris.client.client import IrisClient
from iris.cluster.types import Entrypoint as IrisEntrypoint, ResourceSpec
import fray_jupyter

small = ResourceConfig(cpu=1, ram="256m", disk="1g")
python = lambda script: Entrypoint.from_binary("sh", ["-c", f'exec "$IRIS_PYTHON" "$IRIS_WORKDIR/{script}"'])
steps = [current_client().submit(JobRequest(name="mid", entrypoint=python("mid.py"), resources=small))]
iris = IrisClient.remote(os.environ["IRIS_CONTROLLER_URL"])
via_iris = iris.submit(IrisEntrypoint.from_command("sh", "-c", "echo via-iris"), name="via-iris",
                       resources=ResourceSpec(cpu=1, memory="256m", disk="1g"))
ours = fray_jupyter.fray_client().submit(fray_jupyter.JobRequest(
    name="via-fray-jupyter", entrypoint=fray_jupyter.Entrypoint.from_binary("sh", ["-c", 'cat "$IRIS_WORKDIR/mid.py"']),
    resources=fray_jupyter.ResourceConfig(cpu=1, ram="256m", disk="1g")))
value = fray_jupyter.submit(lambda x: x * 2, 21, name="via-submit").result(timeout=120)
assert value == 42, value
wait_all([*steps, ours])
via_iris.wait()
print("children:", steps[0].job_id, via_iris.job_id, ours.job_id, flush=True)
'''
MID = '''
from fray.current_client import current_client
from fray.types import Entrypoint, JobRequest, ResourceConfig
leaf = current_client().submit(JobRequest(name="leaf", entrypoint=Entrypoint.from_binary("echo", ["leaf-ran"]),
                                          resources=ResourceConfig(cpu=1, ram="256m", disk="1g")))
leaf.wait()
print("grandchild:", leaf.job_id, flush=True)
'''


def run_coordinator(url: str, name: str, workspace: Path) -> dict[str, int]:
    """Submit the coordinator (its workspace holds both scripts) and wait for it; the final state of
    every job of its tree, by id."""
    from fray_jupyter.client.client import FrayClient
    from fray_jupyter.iris.bundle import create_workspace_zip
    from fray_jupyter.iris.proto import job_pb2
    from fray_jupyter.planning import plan
    from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig

    command = 'exec "$IRIS_PYTHON" "$IRIS_WORKDIR/coord.py"'  # a local Iris runs tasks outside their work dir
    job = JobRequest(name=name, entrypoint=Entrypoint.from_binary("sh", ["-c", command]),
                     resources=ResourceConfig(cpu=1, ram="512m", disk="1g"))
    (workspace / "coord.py").write_text(COORDINATOR)
    (workspace / "mid.py").write_text(MID)
    bundle = create_workspace_zip(workspace).blob
    with FrayClient(url) as client:
        root = client.submit(plan(job, user=USER, bundle=bundle))
        final = client.wait(root, timeout=240)
        tree = [root]
        for job_id in tree:
            tree += [child.job_id for child in client.children(job_id)]
        assert final.state == job_pb2.JOB_STATE_SUCCEEDED, (final.error, [e.data for e in client.logs(root).entries])
        return {job_id: client.status(job_id).state for job_id in tree}


def test_a_coordinator_submits_children_and_grandchildren_through_every_client(url: str, workspace: Path) -> None:
    """Marin's ``current_client()`` (two levels deep), ``IrisClient`` and fray-jupyter's own clients
    (``fray_client()``, ``submit(fn)``), each from inside a task: every job succeeds, with ids ``/<user>/<coordinator>/<child>[/<g>]``;
    the children of Marin's in-task client run on the coordinator's workspace (its bundle)."""
    from fray_jupyter.iris.proto import job_pb2

    name = job_name("coord")
    root = f"/{USER}/{name}"
    states = run_coordinator(url, name, workspace)
    assert states == dict.fromkeys([root, f"{root}/mid", f"{root}/via-iris", f"{root}/via-fray-jupyter",
                                    f"{root}/via-submit", f"{root}/mid/leaf"], job_pb2.JOB_STATE_SUCCEEDED)


def test_one_slot_runs_a_three_deep_tree_of_waiting_coordinators(tmp_path: Path) -> None:
    """``--slots 1``: the coordinator and its step each block in ``wait`` on the job below them;
    the lending rule (``controller.kernel.scheduler``) lets every level run."""
    from fray_jupyter.iris.proto import job_pb2

    controller = start_controller(tmp_path / "state", "--slots", "1")
    (tmp_path / "cwd").mkdir()
    try:
        states = run_coordinator(controller.info.url, job_name("one-slot"), tmp_path / "cwd")
    finally:
        stop_quietly(controller)
    assert set(states.values()) == {job_pb2.JOB_STATE_SUCCEEDED} and len(states) == 6, states
