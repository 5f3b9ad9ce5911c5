"""The ``fray-jupyter`` command, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fray_jupyter.client.client import FrayClient
from tests.controller_harness import launch_request, start_controller, stop_quietly
from tests.waiting import until


def _run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fray_jupyter.cli", *argv], capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin", "IRIS_USER": "carol", **(env or {})}, check=False)


def test_plan_prints_the_preview() -> None:
    result = _run("plan", "--tpu", "v5p-8", "--slices", "2", "--", "python", "train.py")
    assert result.returncode == 0, result.stderr
    assert "/carol/cli-job" in result.stdout and "Replicas      2" in result.stdout
    assert 'argv: "train.py"' in result.stdout and "IRIS_SLICE_COUNT='2'" in result.stdout


def test_plan_json() -> None:
    result = _run("plan", "--gpu", "GB200x4", "--replicas", "32", "--json")
    document = json.loads(result.stdout)
    assert document["coscheduling"]["group_by"] == "nvlink.domain.sliced"
    assert [len(g["tasks"]) for g in document["coscheduling"]["groups"]] == [32]  # one gang, as Iris places it
    assert document["request"]["resources"]["cpuMillicores"] == 4000


def test_bad_input_is_one_line_exit_2() -> None:
    for argv in (["plan", "--tpu", "v5p-7"], ["plan", "--bogus"], ["plan", "--gpu", "H100x0"], []):
        result = _run(*argv)
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and "error" in result.stderr and "Traceback" not in result.stderr


def test_check_says_never_for_a_gang_larger_than_a_slice_without_a_controller() -> None:
    result = _run("plan", "--tpu", "v4-32", "--slices", "2", "--check", env={"FRAY_CONTROLLER_URL": "http://127.0.0.1:9"})
    assert result.returncode == 3, result.stderr
    assert "\nfit: never — a v4-32 slice has 4 VMs: this 8-task gang can never be placed by Iris 0.2.227" in result.stdout
    assert "Errors        ✗ a v4-32 slice has 4 VMs" in result.stdout


def test_check_without_a_controller_is_unknown_exit_4() -> None:
    result = _run("plan", "--tpu", "v4-32", "--check", "--controller", "http://127.0.0.1:9")
    assert result.returncode == 4
    lines = result.stdout.splitlines()
    assert lines[-3].startswith("fit: unknown — no controller answered")
    spend = ("budget: this job spends 19,200 (4 task(s) × 4,800: 1000 × 4 accelerator(s) + 200 GiB + 5 × 120 "
             "core(s)); carol's budget is unknown (no controller answered)")
    assert lines[-2:] == [spend, "band: interactive as asked (not checked against a budget)"]


def _new_user(tmp_path: Path) -> dict[str, str]:
    """A new user's environment: an empty HOME (no runtime file, state dir or Jupyter config)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home)}


def _fit(*argv: str, env: dict[str, str]) -> dict[str, object]:
    result = _run("plan", *argv, "--check", "--json", env=env)
    assert result.returncode in (0, 3), result.stderr
    fit: dict[str, object] = json.loads(result.stdout)["fit"]
    return fit


def _after_fit_line(stdout: str, count: int) -> list[str]:
    """The ``fit:`` line and the ``count - 1`` lines after it."""
    lines = stdout.splitlines()
    start = next(index for index, line in enumerate(lines) if line.startswith("fit: "))
    return lines[start:start + count]


def test_check_on_a_fresh_machine_reads_the_embedded_controllers_profile(tmp_path: Path) -> None:
    env = _new_user(tmp_path)
    now = _run("plan", "--gpu", "H100x8", "--replicas", "2", "--check", env=env)
    assert now.returncode == 0, now.stderr
    assert _after_fit_line(now.stdout, 3) == [
        "fit: now — idle workers can take the gang now",
        "  gpu_h100x8 (no region, on_demand, 4/4 slices ready)",
        "  (read from the embedded controller's profile 'default': no controller is running, and none was started)"]
    budget_line = next(line for line in now.stdout.splitlines() if line.startswith("budget: "))
    assert budget_line.endswith("budget is unknown (no controller is running)"), budget_line
    never = _run("plan", "--gpu", "A100x8", "--check", env=env)
    assert never.returncode == 3 and "\nfit: never — Job /carol/cli-job is unschedulable" in never.stdout
    assert "no scaling group provides device gpu:a100" in never.stdout
    assert list(Path(env["HOME"]).rglob("*fray*")) == []  # nothing was started: no runtime file, no state dir


def test_check_reads_the_profile_fray_cluster_config_names(tmp_path: Path) -> None:
    profile = tmp_path / "cpu-only.yaml"
    profile.write_text("name: cpu-only\nscale_groups:\n  cpu: {num_vms: 1, max_slices: 1, resources: "
                       "{device_type: cpu, capacity_type: on-demand, cpu: 8}, slice_template: {local: {}}}\n")
    env = {**_new_user(tmp_path), "FRAY_CLUSTER_CONFIG": str(profile)}
    fit = _fit("--tpu", "v5p-8", env=env)
    assert fit["verdict"] == "never" and "no scaling group provides device tpu:v5p-8 (available: cpu)" in str(fit["reason"])
    assert "profile 'cpu-only' ($FRAY_CLUSTER_CONFIG)" in str(fit["source"])
    broken = _run("plan", "--cpu", "1", "--check", env={**env, "FRAY_CLUSTER_CONFIG": str(tmp_path / "missing.yaml")})
    assert broken.returncode == 2 and broken.stderr.count("\n") == 1
    assert broken.stderr.startswith("fray-jupyter plan: error: cannot read cluster config")


def test_check_of_a_named_controller_or_cluster_that_does_not_answer_is_unknown_exit_4(tmp_path: Path) -> None:
    for named in (["--controller", "http://127.0.0.1:9"], ["--cluster", "no-such-cluster"]):
        result = _run("plan", "--tpu", "v4-32", "--check", *named, env=_new_user(tmp_path))
        assert result.returncode == 4, (named, result.stderr)
        assert _after_fit_line(result.stdout, 1)[0].startswith("fit: unknown — no controller answered ("), named
        assert "read from" not in result.stdout


def test_check_against_the_embedded_controller(tmp_path: Path) -> None:
    controller = start_controller(tmp_path / "state", "--slots", "2")
    try:
        env = {**_new_user(tmp_path), "FRAY_CONTROLLER_URL": controller.info.url,
               "FRAY_CONTROLLER_TOKEN": controller.info.token}
        ok = _run("plan", "--tpu", "v5p-16", "--check", env=env)
        assert ok.returncode == 0, ok.stderr
        assert _after_fit_line(ok.stdout, 3) == [
            "fit: after-scale-up — tpu_v5p_16 can scale up a slice for it",
            "  tpu_v5p_16 (us-central1, preemptible, 0/2 slices ready)",  # its reported profile
            f"  (asked {controller.info.url})"]
        never = _run("plan", "--gpu", "A100x8", "--check", "--json", env=env)
        assert never.returncode == 3
        fit = json.loads(never.stdout)["fit"]
        assert fit["verdict"] == "never" and "no scaling group provides device gpu:a100" in fit["reason"]
        now = _run("plan", "--gpu", "H100x8", "--replicas", "2", "--check", "--controller", controller.info.url,
                   env={**_new_user(tmp_path), "FRAY_CONTROLLER_TOKEN": controller.info.token})
        assert now.returncode == 0 and "\nfit: now — idle workers can take the gang now\n" in now.stdout
        # what a new user reads from the profile is what this controller answers
        for argv in (["--tpu", "v5p-16"], ["--gpu", "A100x8"], ["--gpu", "H100x8", "--replicas", "2"],
                     ["--tpu", "v5p-8", "--region", "europe-west4"], ["--cpu", "2"]):
            asked, read = _fit(*argv, env=env), _fit(*argv, env=_new_user(tmp_path))
            assert str(asked.pop("source")).startswith("asked ") and str(read.pop("source")).startswith("read from")
            assert asked.pop("line") == read.pop("line"), argv
            assert {k: asked[k] for k in ("verdict", "reason", "candidates")} == {
                k: read[k] for k in ("verdict", "reason", "candidates")}, argv
    finally:
        stop_quietly(controller)


def test_check_shows_the_spend_and_the_band_over_the_budget(tmp_path: Path) -> None:
    controller = start_controller(tmp_path / "state", "--slots", "2", "--budget-limit", "10")
    try:
        env = {"FRAY_CONTROLLER_URL": controller.info.url, "FRAY_CONTROLLER_TOKEN": controller.info.token}
        first = _run("plan", "--tpu", "v5p-8", "--check", env=env).stdout.splitlines()
        assert "carol has spent 0 of 10; once it runs, 4,744: over the limit" in first[-2]
        assert first[-1] == "band: interactive; 0 task(s) queued ahead of it (0 pending at interactive)"
        with FrayClient(controller.info.url, controller.info.token) as client:
            job_id = client.submit(launch_request("busy", "sleep 60", user="carol"))  # 1 core, 512 MiB: 5
            client.set_user_budget("carol", 4)
            until(lambda: client.user_budget("carol").budget_spent >= 5, "carol's task placed", feed=client)
            over = json.loads(_run("plan", "--tpu", "v5p-8", "--check", "--json", env=env).stdout)["fit"]["budget"]
            client.terminate(job_id)
        assert (over["spent"], over["limit"], over["band"], over["effective_band"]) == (5, 4, "interactive", "batch")
        assert over["job_spend"] == 4_000 + 224 + 5 * 104 and over["queued_ahead"] == 0
        assert over["lines"][1].startswith("band: batch — asked interactive, but carol is over budget")
    finally:
        stop_quietly(controller)


def test_help_is_plain_text_without_rst_markup() -> None:
    for argv in (("--help",), ("plan", "--help"), ("controller", "--help")):
        result = _run(*argv)
        assert result.returncode == 0 and "usage: fray-jupyter" in result.stdout
        assert "``" not in result.stdout, argv
