"""The ``fray-jupyter`` command, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.controller_harness import start_controller, stop_quietly


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
    assert result.stdout.splitlines()[-1].startswith("fit: unknown — no controller answered")


def test_check_against_the_embedded_controller(tmp_path: Path) -> None:
    controller = start_controller(tmp_path / "state", "--slots", "2")
    try:
        env = {"FRAY_CONTROLLER_URL": controller.info.url, "FRAY_CONTROLLER_TOKEN": controller.info.token}
        ok = _run("plan", "--tpu", "v5p-16", "--check", env=env)
        assert ok.returncode == 0, ok.stderr
        assert "\nfit: after-scale-up — tpu_v5p_16 can scale up a slice for it\n" in ok.stdout
        assert "  tpu_v5p_16 (us-central1, preemptible, 0/2 slices ready)" in ok.stdout  # its reported profile
        never = _run("plan", "--gpu", "A100x8", "--check", "--json", env=env)
        assert never.returncode == 3
        fit = json.loads(never.stdout)["fit"]
        assert fit["verdict"] == "never" and "no scaling group provides device gpu:a100" in fit["reason"]
        now = _run("plan", "--gpu", "H100x8", "--replicas", "2", "--check", "--controller", controller.info.url,
                   env={"FRAY_CONTROLLER_TOKEN": controller.info.token})
        assert now.returncode == 0 and "\nfit: now — idle workers can take the gang now\n" in now.stdout
    finally:
        stop_quietly(controller)


def test_help_is_plain_text_without_rst_markup() -> None:
    for argv in (("--help",), ("plan", "--help"), ("controller", "--help")):
        result = _run(*argv)
        assert result.returncode == 0 and "usage: fray-jupyter" in result.stdout
        assert "``" not in result.stdout, argv
