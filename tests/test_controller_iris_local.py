"""``fray-jupyter controller --iris-local``: a genuine Iris local cluster in the foreground, found
by the client through the runtime file like the embedded controller; and its errors."""

from __future__ import annotations

import importlib.metadata
import os
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.discovery import connect
from fray_jupyter.controller import iris_local
from fray_jupyter.iris.proto import job_pb2, vm_pb2
from fray_jupyter.planning import plan
from fray_jupyter.resources import Entrypoint, JobRequest, ResourceConfig
from fray_jupyter.resources.environment import EnvironmentConfig
from fray_jupyter.runtime_file import RUNTIME_FILE_NAME, ControllerInfo, read_runtime_file
from tests.twin import Outcome, places, settle
from tests.waiting import until

needs_iris = pytest.mark.skipif(iris_local.unavailable_reason() is not None,
                                reason=str(iris_local.unavailable_reason()))


def _listening(url: str) -> bool:
    parts = urlsplit(url)
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex((parts.hostname or "", parts.port or 0)) == 0


@needs_iris
def test_iris_local_serves_the_client_through_the_runtime_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runtime_dir, home = tmp_path / "runtime", tmp_path / "home"
    runtime_file = runtime_dir / RUNTIME_FILE_NAME
    env = dict(os.environ, HOME=str(home))  # Iris writes ~/.config/marin/credentials: keep it in tmp
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with (tmp_path / "out.log").open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "fray_jupyter.controller", "--iris-local", "--port", str(port),
             "--state-dir", str(tmp_path / "state"), "--runtime-file", str(runtime_file)],
            stdout=out, stderr=subprocess.STDOUT, env=env, text=True)
    try:
        def started() -> ControllerInfo | None:
            assert process.poll() is None, (tmp_path / "out.log").read_text()
            return read_runtime_file(runtime_file)

        info = until(started, "the controller's runtime file", hang_guard=iris_local.START_TIMEOUT)
        assert info.url == f"http://127.0.0.1:{port}" and info.grpc_url == "" and info.token == ""
        assert info.pid == process.pid and stat.S_IMODE(runtime_file.stat().st_mode) == 0o600
        assert f"iris-local connect={info.url}" in (tmp_path / "out.log").read_text()
        assert (home / ".config" / "marin" / "credentials" / "fray-local.json").exists()  # the user's HOME, not a private one

        monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime_dir))
        monkeypatch.delenv("FRAY_CONTROLLER_URL", raising=False)
        monkeypatch.delenv("FRAY_CONTROLLER_TOKEN", raising=False)
        job = JobRequest(name="iris-local-hi", entrypoint=Entrypoint.from_binary("sh", ["-c", "echo hi"]),
                         resources=ResourceConfig(cpu=1, ram="512m", disk="1g"),
                         environment=EnvironmentConfig(workspace=str(tmp_path), setup_scripts=[]))
        with connect(start=False, timeout=10) as client:
            assert client.url == info.url
            job_id = client.submit(plan(job, user="fray-test"))
            assert client.wait(job_id, timeout=60).state == job_pb2.JOB_STATE_SUCCEEDED
            assert "hi" in [entry.data for entry in client.follow(job_id, timeout=30)]

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=iris_local.STOP_TIMEOUT) == 0
        assert not runtime_file.exists()
        assert not _listening(info.url)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_without_marin_iris_it_is_one_line_naming_the_package(tmp_path: Path) -> None:
    hide = (
        "import importlib.metadata as m, sys\n"
        "real = m.version\n"
        "def version(name):\n"
        "    if name == 'marin-iris':\n"
        "        raise m.PackageNotFoundError(name)\n"
        "    return real(name)\n"
        "m.version = version\n"
        "from fray_jupyter.controller import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    runtime_file = tmp_path / "runtime.json"
    result = subprocess.run([sys.executable, "-c", hide, "--iris-local", "--state-dir", str(tmp_path / "state"),
                             "--runtime-file", str(runtime_file)], check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert "--iris-local needs marin-iris[controller] (Python 3.12): " in result.stderr
    assert f"pip install 'marin-iris[controller]=={iris_local.IRIS_VERSION}'" in result.stderr
    assert "missing: marin-iris" in result.stderr and not runtime_file.exists()


def test_unavailable_reason_names_every_missing_distribution(monkeypatch: pytest.MonkeyPatch) -> None:
    def version(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    reason = iris_local.unavailable_reason()
    assert reason is not None and reason.endswith("(missing: marin-iris, marin-finelog-server)")
    with pytest.raises(iris_local.IrisLocalUnavailable, match="needs marin-iris"):
        iris_local.start(Path("/nonexistent/iris.log"))


@pytest.mark.parametrize("flags, words", [
    (["--token", "x"], "--token cannot be used with --iris-local"),
    (["--grpc-port", "5000", "--slots", "2"], "--grpc-port, --slots cannot be used with --iris-local"),
    (["--host", "0.0.0.0"], "--host cannot be used with --iris-local"),
    (["--budget-limit", "5"], "--budget-limit cannot be used with --iris-local: a genuine Iris takes"),
])
def test_flags_that_do_not_apply_are_refused(flags: list[str], words: str) -> None:
    result = subprocess.run([sys.executable, "-m", "fray_jupyter.controller", "--iris-local", *flags],
                            check=False, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and words in result.stderr


# -- --cluster-config ----------------------------------------------------------------------------------
@needs_iris
@pytest.mark.parametrize("name, words", [
    ("nope", ("--cluster-config 'nope': does not exist; give 'default' (built in), 'marin' (marin-iris's manifest) "
              "or the path of an Iris cluster-config YAML")),
    ("bad.yaml", "--cluster-config '{tmp}/bad.yaml': Iris cannot load it: "),
    ("{tmp}", "--cluster-config '{tmp}': is a directory; give 'default'"),
])
def test_a_bad_cluster_config_is_one_line_naming_it(tmp_path: Path, name: str, words: str) -> None:
    (tmp_path / "bad.yaml").write_text("scale_groups: {cpu: {num_vms: 1, resources: {cpu: 1, device_type: cpu}}}\n")
    name = str(tmp_path / name) if name == "bad.yaml" else name.format(tmp=tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "fray_jupyter.controller", "--iris-local", "--cluster-config", name,
         "--state-dir", str(tmp_path / "state"), "--runtime-file", str(tmp_path / "rt.json")],
        check=False, capture_output=True, text=True, timeout=120, env=dict(os.environ, HOME=str(tmp_path / "home")))
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr.count("\n") == 1 and words.format(tmp=tmp_path) in result.stderr, result.stderr
    assert not (tmp_path / "rt.json").exists()


@needs_iris
def test_the_marin_manifest_starts_with_every_group_and_no_warm_slice(tmp_path: Path) -> None:
    with iris_local.iris_local_cluster(tmp_path, cluster_config="marin", idle_seconds=7.5) as url, \
            FrayClient(url) as client:
        def groups() -> dict[str, vm_pb2.ScaleGroupStatus]:
            return {group.name: group for group in client.autoscaler_status().status.groups}

        first = groups()
        assert len(first) == 82
        assert not [name for name, group in first.items() if group.slice_state_counts["ready"]]
        assert {group.region for group in first.values() if group.device_variant == "v5p-16"} == {
            "us-central1", "us-east5"}
        until(lambda: {group.idle_threshold_ms for group in groups().values()} == {7500},
              "every group's idle threshold set")  # the status is a snapshot of the autoscaler's next evaluation


# -- the built-in profile on the genuine scheduler -----------------------------------------------------
@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FrayClient]:
    """A genuine Iris local cluster with the built-in profile, for the module."""
    if iris_local.unavailable_reason() is not None:
        pytest.skip(str(iris_local.unavailable_reason()))
    with iris_local.iris_local_cluster(tmp_path_factory.mktemp("twin")) as url, FrayClient(url) as client:
        yield client


def _submit(client: FrayClient, name: str, resources: ResourceConfig, tmp_path: Path, script: str = "true") -> str:
    job = JobRequest(name=name, entrypoint=Entrypoint.from_binary("sh", ["-c", script]), resources=resources,
                     environment=EnvironmentConfig(workspace=str(tmp_path), setup_scripts=[]))
    return client.submit(plan(job, user="fray-test"))


@pytest.mark.parametrize("variant, vms", [("v5p-16", 2), ("v4-32", 4)])
def test_a_multi_vm_slice_runs_as_one_gang(twin: FrayClient, tmp_path: Path, variant: str, vms: int) -> None:
    job_id = _submit(twin, f"gang-{variant}", ResourceConfig.with_tpu(variant), tmp_path)
    assert settle(twin, [job_id])[job_id] == Outcome("runs", job_pb2.JOB_STATE_SUCCEEDED, "")
    placed = places(twin, job_id)
    assert len({place.tpu_name for place in placed.values()}) == 1  # one tpu-name: one slice
    assert {index: place.tpu_worker_id for index, place in placed.items()} == {i: i for i in range(vms)}


def test_two_v4_32_slices_stay_pending_with_iris_reason(twin: FrayClient, tmp_path: Path) -> None:
    # A v4-32 slice must be up for the scheduler's half of the reason ("largest group has 4"): a
    # one-slice job holds one for the test (a slice an earlier test scaled up may be reclaimed by now).
    holder = _submit(twin, "v4-32-holder", ResourceConfig.with_tpu("v4-32"), tmp_path, "sleep 600")
    until(lambda: twin.state([holder])[holder] == job_pb2.JOB_STATE_RUNNING, "the v4-32 holder running")
    job_id = _submit(twin, "v4-32x2", ResourceConfig.with_tpu("v4-32", slice_count=2), tmp_path)
    try:
        found = settle(twin, [job_id])[job_id]
        assert found.verdict == "pending", found
        assert "Coscheduling: need 8 workers in same 'tpu-name' group, largest group has " in found.reason
        assert ("coschedule_mismatch: job needs 8 tasks coscheduled but no matching group has num_vms=8 "
                "(tpu_v4_32=4)") in found.reason
    finally:
        twin.terminate(job_id)
        twin.terminate(holder)


def test_a_fray_default_cpu_job_succeeds(twin: FrayClient, tmp_path: Path) -> None:
    job_id = _submit(twin, "fray-default", ResourceConfig(), tmp_path)  # 1 core, 4g, 64g disk
    assert twin.wait(job_id, timeout=120).state == job_pb2.JOB_STATE_SUCCEEDED


@pytest.mark.parametrize("flags, status, line", [
    (["--tpu", "v4-32", "--slices", "2"], 3, "fit: never"),
    (["--tpu", "v5p-16"], 0, "fit: "),
    (["--tpu", "v5litepod-4"], 3, "fit: never"),
])
def test_plan_check_against_the_twin(twin: FrayClient, flags: list[str], status: int, line: str) -> None:
    """``fray-jupyter plan --check --controller <twin>``: never for what Iris never places or refuses."""
    result = subprocess.run([sys.executable, "-m", "fray_jupyter.cli", "plan", *flags, "--check", "--controller",
                             twin.url, "--", "true"], check=False, capture_output=True, text=True, timeout=60)
    fit_lines = [text for text in result.stdout.splitlines() if text.startswith("fit: ")]
    assert result.returncode == status and len(fit_lines) == 1 and fit_lines[0].startswith(line), result
    assert status == 3 or not fit_lines[0].startswith("fit: never")
