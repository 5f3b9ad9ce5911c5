"""The ``fray-jupyter`` command, run as a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fray_jupyter.cli", *argv], capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin", "IRIS_USER": "carol"})


def test_plan_prints_the_preview() -> None:
    result = _run("plan", "--tpu", "v5p-8", "--slices", "2", "--", "python", "train.py")
    assert result.returncode == 0, result.stderr
    assert "/carol/cli-job" in result.stdout and "Replicas      2" in result.stdout
    assert 'argv: "train.py"' in result.stdout and "IRIS_SLICE_COUNT='2'" in result.stdout


def test_plan_json() -> None:
    result = _run("plan", "--gpu", "GB200x4", "--replicas", "32", "--json")
    document = json.loads(result.stdout)
    assert document["coscheduling"]["group_by"] == "nvlink.domain.sliced"
    assert [len(g["tasks"]) for g in document["coscheduling"]["groups"]] == [16, 16]
    assert document["request"]["resources"]["cpuMillicores"] == 4000


def test_bad_input_is_one_line_exit_2() -> None:
    for argv in (["plan", "--tpu", "v5p-7"], ["plan", "--bogus"], ["plan", "--gpu", "H100x0"], []):
        result = _run(*argv)
        assert result.returncode == 2
        assert result.stderr.count("\n") == 1 and "error" in result.stderr and "Traceback" not in result.stderr
