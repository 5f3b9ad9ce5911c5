"""``%%fray`` and ``%fray`` in a real IPython shell, against a real embedded controller process:
submission and per-task logs, ``--dry-run`` against the picker's preview, ``--wait`` on a failing
job, cancelling (line magic and the panel's button), settings, and the error conventions."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from traitlets.config import Config

from fray_jupyter.client import FrayClient
from fray_jupyter.client.budget import budget
from fray_jupyter.client.handle import JobHandle
from fray_jupyter.controller.iris_local import unavailable_reason
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.magics import ControllerError, FrayMagics, JobFailed
from fray_jupyter.planning import Plan, plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.views.preview import render_preview_html
from fray_jupyter.widgets.picker import ResourcePicker
from fray_jupyter.widgets.status import JobStatusPanel
from tests.assertions import one_usage_line
from tests.controller_harness import ControllerProcess
from tests.jupyter_isolation import magics_controller, magics_shell

USER = "tester"
PER_TASK_ENV = ("import os\n"
                "from fray_jupyter import task_info\n"
                "print('task', task_info().task_index, 'of', os.environ['IRIS_NUM_TASKS'],\n"
                "      'id', os.environ['IRIS_TASK_ID'])\n")
LONG = "import time\nprint('started', flush=True)\ntime.sleep(60)\n"


@pytest.fixture(scope="module")
def controller(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    """A real embedded controller that the magics find through the (isolated) runtime file."""
    with magics_controller(tmp_path_factory.mktemp("magics"), USER, "--slots", "16") as process:
        yield process


@pytest.fixture(scope="module")
def ip(controller: ControllerProcess) -> InteractiveShell:
    return magics_shell()


@pytest.fixture(scope="module")
def client(controller: ControllerProcess) -> Iterator[FrayClient]:
    with FrayClient(controller.info.url, controller.info.token) as opened:
        yield opened


def fray(ip: InteractiveShell, line: str, cell: str | None = None) -> Any:
    """Run ``%%fray line`` with ``cell`` (or ``%fray line`` when cell is None)."""
    return ip.run_line_magic("fray", line) if cell is None else ip.run_cell_magic("fray", line, cell)


def wait_until(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


# -- submitting ------------------------------------------------------------------------------------
def test_a_cell_runs_as_a_job_with_per_task_env_and_logs(ip: InteractiveShell, client: FrayClient) -> None:
    with capture_output() as captured:
        panel = fray(ip, "--gpu H100 --replicas 3 --name per-task-env -o job", PER_TASK_ENV)
    assert isinstance(panel, JobStatusPanel) and panel.job_id == f"/{USER}/per-task-env"
    job = ip.user_ns["job"]
    assert isinstance(job, JobHandle) and job.job_id == panel.job_id
    assert job.wait(timeout=30).state == job_pb2.JOB_STATE_SUCCEEDED
    assert panel.join(timeout=20) and panel.state == "succeeded"
    expected = {f"[{i}] task {i} of 3 id /{USER}/per-task-env/{i}:0" for i in range(3)}
    assert set(job.logs()) == expected
    assert expected <= set(panel.lines)
    again = JobStatusPanel.of(job, start=False)  # a panel from the handle alone
    assert again.refresh() and again.state == "succeeded" and again.client is job.client
    assert panel.progress.value == 3 and panel.progress.description == "3/3"
    assert panel.tasks.value.count('class="fray-task"') == 3
    assert "note: cpu raised from 1 to 4 cores" in captured.stdout  # plan warnings are shown, not swallowed
    assert "overrides resources.replicas" not in captured.stdout  # --replicas is the resources' own count


def test_dry_run_shows_exactly_the_pickers_preview_and_sends_nothing(ip: InteractiveShell,
                                                                      client: FrayClient) -> None:
    picker = ResourcePicker(ResourceConfig.with_tpu("v5p-8", slice_count=2, regions=["us-central1"]))
    picker.controls.name.value = "dry"
    ip.user_ns["picker"] = picker
    body = "print('hello')\n"
    with capture_output() as captured:
        fray(ip, "--dry-run --resources picker --name dry --no-workspace -o planned", body)
    (output,) = captured.outputs
    html = output.data["text/html"]
    assert set(output.data) == {"text/html", "text/plain"}  # plain HTML and text, no widget: shown everywhere
    same = plan(picker.job(Entrypoint.from_cell(body)), user=USER)
    fit_line = "fit: after-scale-up — tpu_v5p_8 can scale up a slice for it · tpu_v5p_8 (us-central1, preemptible, 0/2 slices ready)"
    picture = budget(same, client)
    assert picture.job_spend == 2 * 4_744 and picture.effective_band == job_pb2.PRIORITY_BAND_INTERACTIVE
    # with its style sheet: a dry run's output stands alone
    assert html == render_preview_html(same, fit=fit_line, budget=picture)
    assert fit_line in output.data["text/plain"]
    assert f"{picture.lines[0]}\n{picture.lines[1]}\n" in output.data["text/plain"]
    assert picture.lines[1].startswith("band: interactive; ") and "queued ahead of it" in picture.lines[1]
    assert isinstance(ip.user_ns["planned"], Plan) and ip.user_ns["planned"].request == same.request
    # The picker's own live preview differs only where it runs its command instead of the cell.
    shown = render_preview_html(same, style=False)
    assert shown.split("<h4>Snippets</h4>")[0] == picker.preview.value.split("<h4>Snippets</h4>")[0]
    assert "Replicas" in output.data["text/plain"] and "/tester/dry" in output.data["text/plain"]
    assert all(j.job_id != f"/{USER}/dry" for j in client.list(limit=1000).jobs)


def test_a_job_that_never_fits_is_shown_and_refused_unless_forced(ip: InteractiveShell, client: FrayClient) -> None:
    with capture_output() as captured:
        fray(ip, "--dry-run --tpu v4-32 --slices 2 --name never-dry", "print(1)\n")
    (output,) = captured.outputs
    assert "fit: never — a v4-32 slice has 4 VMs: this 8-task gang can never be placed" in output.data["text/plain"]
    assert 'class="fray-fit" data-verdict="never"' in output.data["text/html"]
    with pytest.raises(UsageError, match=r"^%%fray: /tester/never-run would never run on http://127\.0\.0\.1:\d+: "
                                         r"a v4-32 slice has 4 VMs.*--force submits it anyway"):
        fray(ip, "--tpu v4-32 --slices 2 --name never-run", "print(1)\n")
    assert all(j.job_id != f"/{USER}/never-run" for j in client.list(limit=1000).jobs)
    with pytest.raises(UsageError, match="no scaling group provides device gpu:a100"):
        fray(ip, "--gpu A100x8 --name never-a100", "print(1)\n")
    with capture_output():
        fray(ip, "--tpu v4-32 --slices 2 --name never-forced --force -o forced", "print(1)\n")
    status = client.status(f"/{USER}/never-forced")
    assert status.state == job_pb2.JOB_STATE_PENDING and "coschedule_mismatch" in status.pending_reason
    client.terminate(f"/{USER}/never-forced")


def test_resources_may_be_marins_own_resource_config(ip: InteractiveShell) -> None:
    from fray import types as marin
    ip.user_ns["marin_rc"] = marin.ResourceConfig.with_tpu("v5p-8", slice_count=2)
    fray(ip, "--dry-run --resources marin_rc -o from_marin", "print(1)\n")
    fray(ip, "--dry-run --tpu v5p-8 --slices 2 -o from_flags", "print(1)\n")
    assert ip.user_ns["from_marin"].request == ip.user_ns["from_flags"].request


def test_a_dry_run_with_no_controller_running_reads_the_embedded_profile_and_starts_none(
        ip: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As ``plan --check`` on a fresh machine: the verdict a started embedded controller would give; a
    named controller that does not answer stays unknown."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    with capture_output() as captured:
        fray(ip, "--dry-run --gpu H100x8 --replicas 2 --name nobody-home", "print(1)\n")
        fray(ip, "--dry-run --controller http://127.0.0.1:9 --name elsewhere", "print(1)\n")
    (embedded, named) = (output.data["text/plain"] for output in captured.outputs)
    assert ("fit: now — idle workers can take the gang now · gpu_h100x8 (no region, on_demand, 4/4 slices ready) "
            "(read from the embedded controller's profile 'default': no controller is running, and none was "
            "started)") in embedded, embedded
    assert "budget is unknown (no controller is running)" in embedded
    assert "fit: unknown — no controller answered" in named
    assert not (tmp_path / "runtime").exists()  # nothing was started


def test_default_name_is_stable_so_dry_run_shows_the_id_that_is_sent(ip: InteractiveShell) -> None:
    fray(ip, "--dry-run -o first", "print(1)\n")
    fray(ip, "--dry-run -o again --cpu 1", "print(1)\n")  # --cpu 1 is the default: the same job
    fray(ip, "--dry-run -o other --cpu 2", "print(1)\n")
    first, again, other = (ip.user_ns[name].job_id for name in ("first", "again", "other"))
    assert first == again and first != other and first.startswith(f"/{USER}/cell-")


def test_quotes_are_removed_and_notebook_variables_expand(ip: InteractiveShell) -> None:
    ip.user_ns["run"] = 7
    fray(ip, "--dry-run -o quoted -e GREETING 'hello world' --name run-{run}", "print(1)\n")
    planned = ip.user_ns["quoted"]
    assert planned.job_id == f"/{USER}/run-7"
    assert ("GREETING", "hello world") in [(var.name, var.value) for var in planned.env]


def test_wait_streams_logs_and_a_failing_job_fails_the_cell_with_its_summary(ip: InteractiveShell) -> None:
    cell = ("%%fray --wait --name will-fail\n"
            "print('about to fail')\n"
            "raise ValueError('the <b>data</b> was bad')\n")
    with capture_output() as captured:
        result = ip.run_cell(cell)
    error = result.error_in_exec
    assert isinstance(error, JobFailed) and error.job_id == f"/{USER}/will-fail" and error.state == "FAILED"
    rendered = "\n".join(error._render_traceback_())
    assert "[0] about to fail" in captured.stdout  # streamed while waiting
    assert f"job /{USER}/will-fail FAILED" in rendered and "exit code 1" in rendered
    assert "task 0: FAILED" in rendered and "ValueError: the <b>data</b> was bad" in rendered
    assert "magics/core.py" not in captured.stdout + captured.stderr  # no traceback of ours, only the summary
    with capture_output() as captured:
        ok = ip.run_cell("%%fray --wait --name will-pass\nprint('fine')\n")
    assert ok.success and "[0] fine" in captured.stdout and f"/{USER}/will-pass SUCCEEDED" in captured.stdout


def test_cancel_from_the_line_magic(ip: InteractiveShell, client: FrayClient) -> None:
    with capture_output():
        panel = fray(ip, "--name to-cancel", LONG)
    wait_until(lambda: any("started" in line for line in panel.lines))
    with capture_output() as captured:
        fray(ip, "cancel to-cancel")
    assert f"cancelled /{USER}/to-cancel (was RUNNING)" in captured.stdout
    assert panel.join(timeout=20) and panel.state == "killed"
    assert client.status(f"/{USER}/to-cancel").state == job_pb2.JOB_STATE_KILLED
    assert panel.cancel_button.disabled and "KILLED" in panel.failure.value
    with capture_output() as captured:
        fray(ip, f"cancel /{USER}/to-cancel")
    assert "already finished (KILLED)" in captured.stdout


def test_rerunning_a_running_cell_shows_that_job_instead_of_starting_another(ip: InteractiveShell) -> None:
    with capture_output():
        first = fray(ip, "", LONG)
    with capture_output() as captured:
        second = fray(ip, "", LONG)
    assert second.job_id == first.job_id and "was already running, so this is that job" in captured.stdout
    first.cancel()
    assert first.join(timeout=20) and second.join(timeout=20) and second.state == "killed"


def test_cancel_from_the_panels_button(ip: InteractiveShell, client: FrayClient) -> None:
    with capture_output():
        panel = fray(ip, "--name button-cancel --replicas 2", LONG)
    wait_until(lambda: panel.state == "running")
    panel.cancel_button.click()
    assert panel.join(timeout=20) and panel.state == "killed"
    assert client.status(panel.job_id).state == job_pb2.JOB_STATE_KILLED
    assert all(task.state == job_pb2.TASK_STATE_KILLED for task in client.tasks(panel.job_id))


def test_status_logs_and_jobs_commands(ip: InteractiveShell) -> None:
    with capture_output():
        fray(ip, "--wait --name for-commands --replicas 2", "print('line one')\nprint('line two')\n")
        panel = fray(ip, "status for-commands")
    assert isinstance(panel, JobStatusPanel) and panel.join(timeout=10) and panel.state == "succeeded"
    with capture_output() as captured:
        fray(ip, "logs for-commands")
    assert captured.stdout.count("line one") == 2 and "[1] line two" in captured.stdout
    with capture_output() as captured:
        fray(ip, f"logs /{USER}/for-commands --tail 1 --follow")
    assert len(captured.stdout.strip().splitlines()) == 1
    with capture_output() as captured:
        fray(ip, "jobs --name for-commands")
    (table,) = captured.outputs
    assert f"/{USER}/for-commands" in table.data["text/plain"] and "succeeded" in table.data["text/html"]


def test_jobs_lists_my_top_level_jobs_by_default_and_others_on_request(ip: InteractiveShell,
                                                                        client: FrayClient) -> None:
    """As Iris's dashboard opens: the configured user's roots, newest first, with the controller's
    total; --everyone, --user, --state, --name and --offset are sent to the controller."""
    job = JobRequest(name="bobs-job", entrypoint=Entrypoint.from_binary("true", []),
                     resources=ResourceConfig(cpu=1, ram="512m", disk="1g"))
    client.wait(client.submit(plan(job, user="bob")), timeout=30)
    with capture_output():
        fray(ip, "--wait --name mine-listed", "print(1)\n")
        fray(ip, "--wait --name mine-listed-too", "print(2)\n")  # a second page whatever ran before

    def table(line: str) -> str:
        with capture_output() as captured:
            fray(ip, line)
        (output,) = captured.outputs
        assert output.data["text/plain"].splitlines()[-1] in output.data["text/html"].replace("&#x27;", "'")
        return str(output.data["text/plain"])

    mine = table("jobs --limit 500")
    total = client.list(limit=1).total
    assert f"/{USER}/mine-listed" in mine and "/bob/" not in mine
    assert mine.splitlines()[-1] == f"jobs 1-{total} of {total}: {USER}'s top-level jobs"
    assert "/bob/bobs-job" in table("jobs --everyone --name bobs-job")
    assert table("jobs --user bob --state SUCCEEDED").splitlines()[-1] == "jobs 1-1 of 1: bob's top-level jobs"
    assert table("jobs --user bob --state running").splitlines() == ["no jobs: bob's top-level jobs"]
    second = table("jobs --limit 1 --offset 1").splitlines()
    assert len(second) == 3 and second[-1].startswith(f"jobs 2-2 of {total}: ")


STEP = ("import sys\n"
        "from fray_jupyter import Entrypoint, JobRequest, ResourceConfig, fray_client\n"
        "def step(name, code):\n"
        "    return fray_client().submit(JobRequest(name=name, entrypoint=Entrypoint.from_binary(sys.executable, ['-c', code]),\n"
        "                                           resources=ResourceConfig.with_cpu(cpu=1, ram='256m', disk='1g')))\n")


def test_wait_follows_a_coordinators_tree_writes_its_snapshot_and_names_the_failed_child(
        ip: InteractiveShell, client: FrayClient) -> None:
    """``--wait`` on a coordinator: every step's lines by their path, the final snapshot with the
    tree in the output, and a failure naming the step that failed with its exception line."""
    cell = STEP + ("good = step('good-step', 'print(\"fine step\")')\n"
                   "bad = step('bad-step', 'raise ValueError(\"bad <data>\")')\n"
                   "good.wait()\n"
                   "bad.wait()\n")
    with capture_output() as captured:
        result = ip.run_cell(f"%%fray --wait --name coord-fails -o coord\n{cell}")
    error = result.error_in_exec
    assert isinstance(error, JobFailed) and error.job_id == f"/{USER}/coord-fails"
    rendered = "\n".join(error._render_traceback_())
    assert "child bad-step FAILED" in rendered and "likely root cause: ValueError: bad <data>" in rendered
    assert "[good-step/0] fine step" in captured.stdout  # a step's line, named by its path
    (snapshot,) = [o.data["text/html"] for o in captured.outputs if "fray-snapshot" in o.data.get("text/html", "")]
    assert 'data-state="failed" data-final="true"' in snapshot and "final state of /tester/coord-fails" in snapshot
    assert snapshot.count('class="fray-tree-row"') == 2 and "ValueError: bad &lt;data&gt;" in snapshot
    assert [child.job_id for child in ip.user_ns["coord"].children()] == [
        f"/{USER}/coord-fails/good-step", f"/{USER}/coord-fails/bad-step"]
    with capture_output() as captured:
        fray(ip, "logs coord-fails --children")
    assert "[good-step/0] fine step" in captured.stdout and "[bad-step/0] ValueError: bad <data>" in captured.stdout
    with capture_output() as captured:
        fray(ip, "logs coord-fails")
    assert "good-step" not in captured.stdout  # its own lines only
    with capture_output() as captured:
        fray(ip, "jobs --with-children --name coord-fails")
    (table,) = captured.outputs
    assert f"/{USER}/coord-fails ▸" in table.data["text/plain"] and f"/{USER}/coord-fails/bad-step" in table.data["text/plain"]


def test_a_coordinators_panel_shows_the_tree_live_and_cancel_kills_it_all(ip: InteractiveShell,
                                                                          client: FrayClient) -> None:
    """The panel lists each step as it is submitted; cancelling the coordinator marks every job of
    the tree KILLED; shown by IPython, the panel writes its snapshot beside itself and rewrites it."""
    cell = STEP + ("import time\n"
                   "steps = [step(f'step-{i}', 'import time; time.sleep(300)') for i in range(3)]\n"
                   "steps[0].wait()\n")
    with capture_output() as captured:
        ip.run_cell(f"%%fray --name coord-live --replicas 1\n{cell}")
        panel = ip.user_ns["_"]
        assert isinstance(panel, JobStatusPanel)
        wait_until(lambda: panel.tree is not None and len(panel.tree.jobs()) == 3, timeout=60)
        wait_until(lambda: panel.tree is not None and all(j.state == job_pb2.JOB_STATE_RUNNING for j in panel.tree.jobs()))
        assert panel.tree_view.table.value.count('class="fray-tree-row"') == 3
        panel.cancel_button.click()
        assert panel.join(timeout=30) and panel.done
    assert panel.tree is not None and {job.state for job in panel.tree.jobs()} == {job_pb2.JOB_STATE_KILLED}
    assert panel.tree_view.table.value.count("fray-state-killed") == 3 and panel.state == "killed"
    widget, snapshot, *updates = captured.outputs
    assert "application/vnd.jupyter.widget-view+json" in widget.data and list(snapshot.data) == ["text/html"]
    assert updates and 'data-state="killed" data-final="true"' in updates[-1].data["text/html"]
    assert updates[-1].data["text/html"].count("fray-state-killed") >= 4  # the root and its three steps
    display_id = panel.snapshot._handle.display_id
    with capture_output() as again:
        panel._ipython_display_()  # shown a second time: the same snapshot, under the same display id
    assert again.outputs[-1].data["text/html"] == updates[-1].data["text/html"]
    assert panel.snapshot._handle.display_id == display_id


def test_workspace_modules_travel_with_the_cell(ip: InteractiveShell, tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text("def answer():\n    return 42\n")
    with capture_output() as captured:
        fray(ip, f"--wait --workspace {tmp_path} --name with-workspace", "import helpers\nprint(helpers.answer())\n")
    assert "[0] 42" in captured.stdout and "not a git work tree" in captured.stdout


# -- controller failures --------------------------------------------------------------------------
def test_an_unreachable_controller_fails_the_cell_with_a_short_actionable_error(ip: InteractiveShell) -> None:
    with capture_output():
        result = ip.run_cell("%%fray --controller http://127.0.0.1:1\nprint(1)\n")
    error = result.error_in_exec
    assert isinstance(error, ControllerError)
    lines = error._render_traceback_()
    assert "ControllerUnreachable" in lines[0] and "http://127.0.0.1:1" in lines[0]
    assert any("%fray config" in line for line in lines) and len(lines) <= 4


def test_an_unknown_job_is_a_controller_error_naming_it(ip: InteractiveShell) -> None:
    with pytest.raises(ControllerError) as raised:
        fray(ip, "status no-such-job")
    assert raised.value.kind == "JobNotFound" and f"/{USER}/no-such-job" in str(raised.value)


# -- settings -------------------------------------------------------------------------------------
def test_config_shows_and_sets_the_settings(ip: InteractiveShell, controller: ControllerProcess) -> None:
    with capture_output() as captured:
        fray(ip, "config")
    assert controller.info.url in captured.stdout and "embedded controller" in captured.stdout
    assert f"user            {USER}" in captured.stdout and "$IRIS_USER" in captured.stdout
    assert controller.info.token not in captured.stdout
    try:
        with capture_output() as captured:
            fray(ip, "config user alice")
        assert "alice" in captured.stdout and "(config)" in captured.stdout
        fray(ip, "--dry-run -o as_alice", "print(1)\n")
        assert ip.user_ns["as_alice"].job_id.startswith("/alice/cell-")
    finally:
        fray(ip, 'config user ""')
    fray(ip, "--dry-run -o as_default", "print(1)\n")
    assert ip.user_ns["as_default"].job_id.startswith(f"/{USER}/")


def test_traitlets_config_sets_the_defaults(ip: InteractiveShell) -> None:
    saved = ip.config.get("FrayMagics")
    ip.config.FrayMagics = Config({"user": "from-config", "controller_url": "grpc://127.0.0.1:9"})
    try:
        magics = FrayMagics(shell=ip)
        assert magics.user == "from-config" and magics.controller_url == "grpc://127.0.0.1:9"
    finally:
        if saved is None:
            del ip.config["FrayMagics"]
        else:
            ip.config.FrayMagics = saved


def test_generated_help_lists_every_flag(ip: InteractiveShell) -> None:
    help_text = ip.find_cell_magic("fray").__doc__
    for flag in ("--tpu", "--slices", "--gpu", "--cpu", "--memory", "--disk", "--replicas", "--region", "--zone",
                 "--any-region", "--non-preemptible", "--alternative", "--env", "--image", "--priority",
                 "--max-retries", "--name", "--controller", "--resources", "--workspace", "--no-workspace",
                 "--dry-run", "--wait", "-o VAR"):
        assert flag in help_text
    with capture_output() as captured:
        ip.run_cell("%%fray?")
    assert "--resources VAR" in captured.stdout
    assert "cancel" in ip.find_line_magic("fray").__doc__


# -- the UsageError corpus ------------------------------------------------------------------------
BIG = 26 * 1024 * 1024
BAD_CELLS: list[tuple[str, str, str]] = [
    # (line, cell, a fragment the one line must contain)
    ("--bogus", "x = 1", "unrecognized arguments: --bogus"),
    ("--tpu", "x = 1", "--tpu: expected one argument"),
    ("--tpu v9-8", "x = 1", "'v9-8'"),
    ("--tpu v5p-8 --gpu H100", "x = 1", "not allowed with argument --tpu"),
    ("--gpu H100x99", "x = 1", "99"),
    ("--gpu x8", "x = 1", "'x8'"),
    ("--slices 2", "x = 1", "--slices needs --tpu"),
    ("--tpu v5p-8 --slices two", "x = 1", "invalid int value: 'two'"),
    ("--tpu v5p-8 --slices 0", "x = 1", "slice_count 0"),
    ("--replicas 0", "x = 1", "replicas 0"),
    ("--replicas -3", "x = 1", "replicas -3"),
    ("--cpu lots", "x = 1", "invalid float value: 'lots'"),
    ("--cpu -1", "x = 1", "cpu -1"),
    ("--memory lots", "x = 1", "'lots'"),
    ("--disk 12q", "x = 1", "'12q'"),
    ("--region us-central1 --any-region", "x = 1", "--any-region cannot be combined with --region"),
    ("--alternative v4-8", "x = 1", "--alternative needs"),
    ("--priority urgent", "x = 1", "'urgent'"),
    ("--name 'a b'", "x = 1", "got 'a b'"),
    ("--name 123", "x = 1", "'123'"),
    ("--name a/b", "x = 1", "'a/b'"),
    ("--timeout -5", "x = 1", "-5"),
    ("--max-retries many", "x = 1", "invalid int value: 'many'"),
    ("--max-retries -1", "x = 1", "-1"),
    ("-e ONLY_KEY", "x = 1", "expected 2 arguments"),
    ("--name 'unclosed", "x = 1", "No closing quotation"),
    ("--dry-run --wait", "x = 1", "--wait: not allowed with argument --dry-run"),
    ("--resources nosuch", "x = 1", "no variable 'nosuch'"),
    ("--resources number", "x = 1", "got int"),
    ("--resources rc.nothing", "x = 1", "has no attribute 'nothing'"),
    ("--resources rc --tpu v5p-8", "x = 1", "--resources rc cannot be combined with --tpu"),
    ("--resources rc --zone us-central1-a --cpu 2", "x = 1", "cannot be combined with --cpu, --zone"),
    ("--resources bad_picker", "x = 1", "the picker's settings are invalid"),
    ("-o 1abc", "x = 1", "'1abc'"),
    ("-o class", "x = 1", "'class'"),
    ("--controller ftp://example", "x = 1", "'ftp://example'"),
    ("--workspace /no/such/dir", "x = 1", "'/no/such/dir' is not a directory"),
    ("--workspace {big}", "x = 1", "MiB"),
    ("--workspace . --no-workspace", "x = 1", "argument --no-workspace: not allowed with argument --workspace"),
    ("", "", "the cell body is empty"),  # IPython's own check (%fray is also a line magic)
    ("--tpu v5p-8", "   \n\t\n", "the cell is empty"),
    ("", "%time x = 1", "%magics and !shell lines are not available"),
    ("", "def f(:\n    pass", "not valid Python"),
]
BAD_LINES: list[tuple[str, str]] = [
    ("", "give a command"),
    ("frobnicate", "invalid choice: 'frobnicate'"),
    ("status", "required: ID"),
    ("jobs --limit 0", "--limit must be from 1 to 500, got 0"),
    ("jobs --offset 5001", "--offset must be from 0 to 5000 (narrow with --state or --name"),
    ("jobs --state bogus", "--state 'bogus' is not a job state; the states are pending, building, running"),
    ("jobs --user 'a b'", "--user: user 'a b' must be a non-empty name"),
    ("jobs --user bob --everyone", "argument --everyone: not allowed with argument --user"),
    ("jobs --limit lots", "invalid int value: 'lots'"),
    ("logs some-job --tail -2", "--tail must not be negative, got -2"),
    ("status some-job --controller nope", "'nope'"),
    ("config nosuch", "unknown setting 'nosuch'"),
    ("config controller_url ftp://x", "'ftp://x'"),
    ("config user 'a b'", "'a b'"),
    ("config token_env 1X", "'1X'"),
    ("cancel", "required: ID"),
]


@pytest.fixture(scope="module")
def namespace(ip: InteractiveShell, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Variables the corpus refers to; returns the path of a workspace over the bundle cap."""
    big = tmp_path_factory.mktemp("big")
    (big / "blob.bin").write_bytes(os.urandom(BIG))
    picker = ResourcePicker()
    picker.controls.ram.value = "lots"
    ip.user_ns.update(number=3, rc=ResourceConfig.with_cpu(), bad_picker=picker)
    return str(big)




@pytest.mark.parametrize(("line", "cell", "fragment"), BAD_CELLS, ids=[f"{i}:{c[0] or c[1][:12]}" for i, c in
                                                                     enumerate(BAD_CELLS)])
def test_bad_cell_magic_lines_raise_one_clear_usage_error(ip: InteractiveShell, namespace: str, line: str,
                                                           cell: str, fragment: str) -> None:
    with pytest.raises(UsageError) as raised:
        fray(ip, line.format(big=namespace), cell)
    one_usage_line(raised, fragment, "%%fray")


@pytest.mark.parametrize(("line", "fragment"), BAD_LINES, ids=[line or "(empty)" for line, _ in BAD_LINES])
def test_bad_line_magic_lines_raise_one_clear_usage_error(ip: InteractiveShell, line: str, fragment: str) -> None:
    with pytest.raises(UsageError) as raised:
        fray(ip, line)
    one_usage_line(raised, fragment, "%fray")


def test_the_shell_shows_a_usage_error_as_one_line_and_fails_the_cell(ip: InteractiveShell) -> None:
    with capture_output() as captured:
        result = ip.run_cell("%%fray --tpu v9-8\nprint(1)\n")
    assert not result.success and type(result.error_in_exec) is UsageError
    shown = [line for line in (captured.stdout + captured.stderr).splitlines() if line.strip()]
    assert shown == ["UsageError: %%fray: unknown TPU type 'v9-8'; did you mean 'v4-8'?"]


# -- %load_ext stays cheap --------------------------------------------------------------------------
HEAVY_MODULES = ("pydantic", "httpx", "grpc", "google.protobuf", "fray_jupyter.planning", "fray_jupyter.resources",
                 "fray_jupyter.client.client", "fray_jupyter.widgets", "ipywidgets")
LOAD_EXT = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
before = set(sys.modules)
shell.run_line_magic("load_ext", "fray_jupyter")
assert shell.find_cell_magic("fray") is not None and shell.find_line_magic("fray") is not None
print(json.dumps(sorted(set(sys.modules) - before)))
"""


def test_load_ext_registers_the_magics_without_the_client_models_or_widgets() -> None:
    """``%load_ext fray_jupyter`` (and so ``import fray_jupyter.magics``) needs only the magic class
    and its parsers; the client, pydantic models and widgets load on the first magic call
    (bench/loadext.py measures the cost; goal <= 150 ms)."""
    result = subprocess.run([sys.executable, "-c", LOAD_EXT], capture_output=True, text=True, timeout=60,
                            cwd=Path(__file__).parent.parent, check=False)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert "fray_jupyter.magics" in loaded
    heavy = [name for name in loaded
             if any(name == module or name.startswith(module + ".") for module in HEAVY_MODULES)]
    assert not heavy, f"%load_ext fray_jupyter imported {heavy[:10]}"


@pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))
def test_a_cell_for_a_named_cluster_gets_iris_s_uv_setup_and_revision_date(ip: InteractiveShell,
                                                                            tmp_path: Path) -> None:
    """As ``iris job run`` builds it: a uv-project workspace without setup scripts gets Iris's uv-sync
    script, and the revision date is the installed marin-iris's. The embedded default adds neither.
    A dry run resolves no cluster."""
    from iris.cluster.setup_scripts import default_setup_script, iris_runtime_setup_script
    from iris.version import client_revision_date

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\nversion = '0'\n")
    with capture_output():
        fray(ip, f"--dry-run --cluster not-resolved --workspace {tmp_path} --name uv -o on_cluster", "x = 1\n")
        fray(ip, f"--dry-run --workspace {tmp_path} --name uv -o embedded", "x = 1\n")
    sent = ip.user_ns["on_cluster"].request
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert list(sent.environment.setup_scripts) == [default_setup_script(python_version=python)]
    assert list(sent.entrypoint.setup_commands) == [default_setup_script(python_version=python),
                                                    iris_runtime_setup_script()]
    assert sent.client_revision_date == client_revision_date()
    embedded = ip.user_ns["embedded"].request
    assert list(embedded.environment.setup_scripts) == list(embedded.entrypoint.setup_commands) == []


@pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))
def test_a_cell_for_a_named_cluster_sends_the_current_directory_unless_told_not_to(
        ip: InteractiveShell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As ``iris job run`` bundles its current directory; the dry run says what it holds. The
    embedded controller gets the same directory (one rule everywhere); ``--no-workspace`` sends none."""
    (tmp_path / "helper.py").write_text("VALUE = 42\n")
    (tmp_path / "scratch.ipynb").write_text("{}")  # Iris's exclusions apply
    monkeypatch.chdir(tmp_path)
    with capture_output() as captured:
        fray(ip, "--dry-run --cluster not-resolved --name cwd -o on_cluster", "import helper\n")
    (output,) = captured.outputs
    request = ip.user_ns["on_cluster"].request
    with zipfile.ZipFile(io.BytesIO(request.bundle_blob)) as archive:
        assert archive.namelist() == ["helper.py"]
    size = f"{len(request.bundle_blob) / 2**20:.1f} MiB"
    shown = f"workspace: {tmp_path} is not a git work tree: bundled every file under it (minus caches and venvs): " \
            f"1 files, {size} zipped"
    assert output.data["text/plain"].startswith(shown + "\n")
    assert f'<div class="fray-workspace"><code>{shown}</code></div>' in output.data["text/html"]
    assert list(request.environment.setup_scripts) == []  # not a uv project: no uv sync
    with capture_output() as captured:
        fray(ip, "--dry-run --cluster not-resolved --no-workspace --name cwd -o opted_out", "import helper\n")
        fray(ip, "--dry-run --name cwd -o embedded", "import helper\n")
    assert ip.user_ns["opted_out"].request.bundle_blob == b""
    assert ip.user_ns["embedded"].request.bundle_blob == request.bundle_blob
    assert "workspace:" not in captured.outputs[0].data["text/plain"]


@pytest.mark.skipif(unavailable_reason() is not None, reason=str(unavailable_reason()))
def test_a_current_directory_over_the_cap_is_one_line_with_the_ways_out(
        ip: InteractiveShell, namespace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(namespace)
    with pytest.raises(UsageError) as raised:
        fray(ip, "--cluster not-resolved --name big", "x = 1\n")
    one_usage_line(raised, f"the current directory {Path(namespace).resolve()} is sent as the workspace by "
                           "default (as `iris job run` does), but it bundles to more than the 25.0 MiB cap (", "%%fray")
    one_usage_line(raised, "MiB); pass --workspace DIR to send a smaller directory, --exclude PATTERN to leave files "
                   "out, or --no-workspace to send none", "%%fray")
