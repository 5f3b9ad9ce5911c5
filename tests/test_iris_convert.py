"""Fray -> Iris conversion (Fray's ``fray.iris_backend`` converters, Iris's ``to_proto``s): resources and
the CPU floor, devices, environment, entrypoints (run for real in a subprocess), the multi-GPU wrap,
``adjust_tpu_replicas`` and the slice-topology env vars."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import cloudpickle
import pytest

from fray_jupyter.iris.convert import (
    CALLABLE_PICKLE,
    CALLABLE_RUNNER,
    CELL_SCRIPT,
    EnvironmentSpec,
    IrisEntrypoint,
    ResourceSpec,
    adjust_tpu_replicas,
    convert_entrypoint,
    convert_environment,
    convert_resources,
    slice_topology_env,
    with_slice_topology_env,
    wrap_multiprocess,
)
from fray_jupyter.iris.outputs import ERROR_FILE, MAX_RESULT_BYTES, RESULT_FILE
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.resources import (
    CpuConfig,
    Entrypoint,
    EnvironmentConfig,
    GpuConfig,
    ResourceConfig,
    TpuConfig,
)

RC = ResourceConfig
GIB = 1024**3
IRIS_DEFAULTS = {"HF_DATASETS_TRUST_REMOTE_CODE": "1", "TOKENIZERS_PARALLELISM": "false"}
NCCL = {"NCCL_RAS_ENABLE": "1", "NCCL_DEBUG": "WARN", "NCCL_DEBUG_TIMESTAMP": "[%F %T.%3f]"}


# -- resources --------------------------------------------------------------------------------------


def test_convert_resources_keeps_the_values() -> None:
    spec = convert_resources(RC(cpu=2, ram="16g", disk="100g"))
    assert (spec.cpu, spec.memory, spec.disk, spec.device) == (2, "16g", "100g", None)
    proto = spec.to_proto()
    assert (proto.cpu_millicores, proto.memory_bytes, proto.disk_bytes) == (2000, 16 * GIB, 100 * GIB)
    assert not proto.HasField("device")


def test_tpu_device_is_variant_and_chips_per_vm_without_topology() -> None:
    device = convert_resources(RC(device=TpuConfig("v4-32", topology="2x2x4"))).device
    assert device == job_pb2.DeviceConfig(tpu=job_pb2.TpuDevice(variant="v4-32", count=4))
    assert device.tpu.topology == ""
    assert convert_resources(RC.with_tpu("v6e-8")).device.tpu.count == 8
    assert convert_resources(RC.with_tpu("v5litepod-16")).device.tpu.count == 4


def test_gpu_device_keeps_the_variants_case() -> None:
    assert convert_resources(RC.with_gpu("H100", count=8)).device == job_pb2.DeviceConfig(
        gpu=job_pb2.GpuDevice(variant="H100", count=8)
    )
    assert convert_resources(RC.with_gpu("a100-80g", count=2)).device.gpu.variant == "a100-80g"


def test_cpu_sends_no_device() -> None:
    assert convert_resources(RC(device=CpuConfig())).device is None


@pytest.mark.parametrize(
    ("rc", "millicores"),
    [
        (RC.with_gpu("H100", count=8), 4000),  # 1 core raised to 4
        (RC.with_gpu("H100", cpu=0.5), 4000),
        (RC.with_gpu("H100", cpu=3.999), 4000),
        (RC.with_gpu("H100", cpu=4), 4000),
        (RC.with_gpu("H100", cpu=4.5), 4500),  # above the floor: untouched
        (RC.with_tpu("v5p-8", cpu=1), 4000),
        (RC.with_tpu("v5p-8", cpu=8), 8000),
        (RC.with_tpu("v5p-8"), 104000),
        (RC(cpu=0.5), 500),  # no device: no floor
        (RC(cpu=0.001), 1),
        (RC(cpu=3), 3000),
    ],
)
def test_cpu_floor_only_with_a_device_and_only_below_four_cores(rc: ResourceConfig, millicores: int) -> None:
    assert convert_resources(rc).to_proto().cpu_millicores == millicores


@pytest.mark.parametrize(
    ("cpu", "millicores"), [(1.005, 1004), (0.0015, 1), (2.9999, 2999), (0.1, 100), (4.2, 4200)]
)
def test_millicores_truncate_like_int_cpu_times_1000(cpu: float, millicores: int) -> None:
    spec = convert_resources(RC(cpu=cpu))
    assert spec.requested_millicores == millicores == int(cpu * 1000)
    assert spec.to_proto().cpu_millicores == millicores


def test_truncation_happens_before_the_floor() -> None:
    spec = convert_resources(RC.with_gpu("H100", cpu=4.0005))
    assert (spec.requested_millicores, spec.millicores) == (4000, 4000)


@pytest.mark.parametrize(
    ("ram", "expected"),
    [("16g", 16 * GIB), ("4GB", 4 * GIB), ("1.5g", 1_610_612_736), ("512m", 512 * 1024**2), ("0", 0)],
)
def test_sizes_are_binary_on_the_wire(ram: str, expected: int) -> None:
    assert convert_resources(RC(ram=ram, disk=ram)).to_proto().memory_bytes == expected
    assert convert_resources(RC(ram=ram, disk=ram)).to_proto().disk_bytes == expected


def test_resource_spec_takes_bytes_as_ints() -> None:
    proto = ResourceSpec(cpu=1, memory=123, disk=456).to_proto()
    assert (proto.memory_bytes, proto.disk_bytes) == (123, 456)


# -- environment ------------------------------------------------------------------------------------


def test_no_environment_gives_the_device_defaults() -> None:
    assert convert_environment(None, CpuConfig()).env_vars == {"JAX_PLATFORMS": "cpu"}
    assert convert_environment(None, TpuConfig("v6e-4")).env_vars == {
        "JAX_PLATFORMS": "",
        "LIBTPU_INIT_ARGS": "--xla_tpu_scoped_vmem_limit_kib=98304",
    }
    assert convert_environment(None, None) is None


def test_user_env_wins_over_device_defaults() -> None:
    env = EnvironmentConfig(workspace="/ws", env_vars={"JAX_PLATFORMS": "tpu,cpu", "A": "1"})
    spec = convert_environment(env, TpuConfig("v5p-8"))
    assert spec.env_vars == {
        "JAX_PLATFORMS": "tpu,cpu",
        "A": "1",
        "LIBTPU_INIT_ARGS": "--xla_tpu_scoped_vmem_limit_kib=50000",
    }


def test_environment_fields_are_forwarded() -> None:
    env = EnvironmentConfig(
        workspace="/ws",
        pip_packages=["numpy"],
        extras=["gpu"],
        sync_packages=["pkg"],
        secrets={"TOKEN": "s"},
        setup_scripts=["echo a"],
    )
    spec = convert_environment(env, GpuConfig("H100"))
    assert (spec.pip_packages, spec.extras, spec.sync_packages) == (("numpy",), ("gpu",), ("pkg",))
    assert (spec.secrets, spec.setup_scripts) == ({"TOKEN": "s"}, ("echo a",))


@pytest.mark.parametrize(("scripts", "kept"), [(None, None), ([], ()), (["a", "b"], ("a", "b"))])
def test_setup_scripts_none_empty_and_list_are_distinct(scripts, kept) -> None:
    spec = convert_environment(EnvironmentConfig(workspace="/ws", setup_scripts=scripts), CpuConfig())
    assert spec.setup_scripts == kept


@pytest.mark.parametrize(
    ("scripts", "wire"), [(None, []), ((), []), (("echo a", "   ", "", "echo b"), ["echo a", "echo b"])]
)
def test_wire_setup_scripts(scripts, wire) -> None:
    assert list(EnvironmentSpec(setup_scripts=scripts).to_proto().setup_scripts) == wire


def test_wire_env_is_iris_defaults_under_the_jobs_own() -> None:
    proto = EnvironmentSpec(env_vars={"TOKENIZERS_PARALLELISM": "true", "A": "1"}).to_proto()
    assert dict(proto.env_vars) == {
        "HF_DATASETS_TRUST_REMOTE_CODE": "1",
        "TOKENIZERS_PARALLELISM": "true",
        "A": "1",
    }


@pytest.mark.parametrize(
    ("extras", "nccl"),
    [
        (("gpu",), True),
        (("marin:gpu",), True),
        (("tpu", "gpu"), True),
        (("gpux",), False),
        (("tpu",), False),
        ((), False),
    ],
)
def test_nccl_vars_come_with_the_gpu_extra(extras, nccl: bool) -> None:
    spec = EnvironmentSpec(extras=extras)
    assert spec.wants_gpu_extra is nccl
    assert dict(spec.to_proto().env_vars) == {**IRIS_DEFAULTS, **(NCCL if nccl else {})}


def test_user_overrides_nccl_too() -> None:
    proto = EnvironmentSpec(env_vars={"NCCL_DEBUG": "INFO"}, extras=("gpu",)).to_proto()
    assert proto.env_vars["NCCL_DEBUG"] == "INFO" and proto.env_vars["NCCL_RAS_ENABLE"] == "1"


def test_secrets_travel_in_the_environment() -> None:
    assert dict(EnvironmentSpec(secrets={"K": "v"}).to_proto().secrets) == {"K": "v"}


# -- entrypoints ------------------------------------------------------------------------------------


def test_binary_entrypoint_is_command_and_args() -> None:
    entry = convert_entrypoint(Entrypoint.from_binary("python", ["train.py", "--x", "a b"]))
    assert entry.command == ("python", "train.py", "--x", "a b")
    assert entry.workdir_files == {}
    proto = entry.to_proto(["setup"])
    assert list(proto.run_command.argv) == ["python", "train.py", "--x", "a b"]
    assert list(proto.setup_commands) == ["setup"]


def _run_in_workdir(entry: IrisEntrypoint, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run the entrypoint the way an Iris worker does: files in $IRIS_WORKDIR, the command verbatim."""
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    for name, data in entry.workdir_files.items():
        (workdir / name).write_bytes(data)
    env = {**os.environ, "IRIS_WORKDIR": str(workdir), "IRIS_PYTHON": sys.executable,
           "IRIS_OUTPUT_DIR": str(tmp_path / "outputs")}
    return subprocess.run(
        list(entry.command), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )


def _make_adder():
    def add_and_print(a, b=0, *, label="sum"):
        print(f"{label}={a + b} workdir={os.environ['IRIS_WORKDIR'].endswith('workdir')}")

    return add_and_print


def test_callable_entrypoint_pickles_function_args_kwargs() -> None:
    function = _make_adder()
    entry = convert_entrypoint(Entrypoint.from_callable(function, args=[2, 3], kwargs={"label": "total"}))
    assert entry.command == ("bash", "-c", "exec $IRIS_PYTHON -u $IRIS_WORKDIR/_callable_runner.py")
    assert (
        set(entry.workdir_files)
        == {CALLABLE_PICKLE, CALLABLE_RUNNER}
        == {"_callable.pkl", "_callable_runner.py"}
    )
    loaded, args, kwargs = cloudpickle.loads(entry.workdir_files[CALLABLE_PICKLE])
    assert (args, kwargs) == ((2, 3), {"label": "total"})
    assert loaded.__name__ == "add_and_print"


def test_callable_runner_runs_the_function_for_real(tmp_path: Path) -> None:
    entry = convert_entrypoint(
        Entrypoint.from_callable(_make_adder(), args=[2, 3], kwargs={"label": "total"})
    )
    result = _run_in_workdir(entry, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "total=5 workdir=True"


def test_callable_runner_fails_the_task_when_the_function_raises(tmp_path: Path) -> None:
    def boom():
        raise RuntimeError("boom from the task")

    result = _run_in_workdir(convert_entrypoint(Entrypoint.from_callable(boom)), tmp_path)
    assert result.returncode == 1
    assert "RuntimeError: boom from the task" in result.stderr


def test_callable_runner_leaves_the_return_value_in_the_output_dir(tmp_path: Path) -> None:
    result = _run_in_workdir(convert_entrypoint(Entrypoint.from_callable(lambda x: {"twice": x * 2}, [21])),
                             tmp_path)
    assert result.returncode == 0, result.stderr
    assert os.listdir(tmp_path / "outputs") == [RESULT_FILE]
    assert cloudpickle.loads((tmp_path / "outputs" / RESULT_FILE).read_bytes()) == {"twice": 42}


def test_callable_runner_leaves_the_exception_type_message_and_traceback(tmp_path: Path) -> None:
    def boom():
        raise KeyError("no such shard")

    result = _run_in_workdir(convert_entrypoint(Entrypoint.from_callable(boom)), tmp_path)
    assert result.returncode == 1
    assert os.listdir(tmp_path / "outputs") == [ERROR_FILE]
    error = json.loads((tmp_path / "outputs" / ERROR_FILE).read_text())
    assert (error["type"], error["message"]) == ("KeyError", "'no such shard'")
    assert error["traceback"].startswith("Traceback") and "in boom" in error["traceback"]


@pytest.mark.parametrize("value, message", [
    (threading.Lock, "the return value (lock) could not be pickled"),
    (lambda: b"x" * (MAX_RESULT_BYTES + 1), "bytes pickled, over fray-jupyter's limit of 104,857,600 bytes (100 MiB)"),
])
def test_a_value_that_cannot_come_back_fails_the_task_saying_why(tmp_path: Path, value, message) -> None:
    result = _run_in_workdir(convert_entrypoint(Entrypoint.from_callable(value)), tmp_path)
    assert result.returncode == 1 and message in result.stderr
    assert message in json.loads((tmp_path / "outputs" / ERROR_FILE).read_text())["message"]
    assert not (tmp_path / "outputs" / RESULT_FILE).exists()


def test_callable_from_a_module_under_tests_is_pickled_by_value(tmp_path: Path) -> None:
    module_dir = tmp_path / "elsewhere" / "tests"
    module_dir.mkdir(parents=True)
    (module_dir / "fj_helper_under_tests.py").write_text("def greet(name):\n    print('hello', name)\n")
    spec = importlib.util.spec_from_file_location(
        "fj_helper_under_tests", module_dir / "fj_helper_under_tests.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules["fj_helper_under_tests"] = module
    try:
        spec.loader.exec_module(module)
        entry = convert_entrypoint(Entrypoint.from_callable(module.greet, args=["iris"]))
    finally:
        del sys.modules["fj_helper_under_tests"]
    result = _run_in_workdir(entry, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "hello iris"


def test_cell_entrypoint_runs_the_source_as_a_script(tmp_path: Path) -> None:
    source = textwrap.dedent(
        """\
        import os, sys
        print("cell ran", os.path.basename(sys.argv[0]), os.environ["IRIS_WORKDIR"].endswith("workdir"))
        """
    )
    entry = convert_entrypoint(Entrypoint.from_cell(source))
    assert entry.command == ("bash", "-c", "exec $IRIS_PYTHON -u $IRIS_WORKDIR/_fray_cell.py")
    assert entry.workdir_files == {CELL_SCRIPT: source.encode()}
    result = _run_in_workdir(entry, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "cell ran _fray_cell.py True"


def test_workdir_files_go_on_the_wire() -> None:
    entry = convert_entrypoint(Entrypoint.from_cell("print(1)"))
    assert dict(entry.to_proto([]).workdir_files) == {"_fray_cell.py": b"print(1)"}


# -- processes_per_task -----------------------------------------------------------------------------


def test_wrap_multiprocess_argv() -> None:
    spec = convert_resources(RC.with_gpu("H100", count=8))
    wrapped = wrap_multiprocess(convert_entrypoint(Entrypoint.from_binary("python", ["train.py"])), spec, 4)
    assert wrapped.command == (
        "python",
        "-m",
        "iris.jax.multigpu_main",
        "--nproc",
        "4",
        "--devices-per-proc",
        "2",
        "--",
        "python",
        "train.py",
    )
    one_each = wrap_multiprocess(IrisEntrypoint(("x",)), spec, 8)
    assert one_each.command[3:7] == ("--nproc", "8", "--devices-per-proc", "1")


def test_wrap_multiprocess_keeps_workdir_files() -> None:
    entry = convert_entrypoint(Entrypoint.from_callable(_make_adder()))
    wrapped = wrap_multiprocess(entry, convert_resources(RC.with_gpu("H100", count=2)), 2)
    assert wrapped.workdir_files == entry.workdir_files
    assert wrapped.command[-3:] == entry.command


@pytest.mark.parametrize(
    ("rc", "processes", "message"),
    [
        (RC.with_gpu("H100", count=8), 3, "processes_per_task (3) must divide the GPU count (8)"),
        (RC.with_gpu("H100", count=2), 4, "processes_per_task (4) must divide the GPU count (2)"),
        (RC(), 2, "processes_per_task > 1 requires a GPU device"),
        (RC.with_tpu("v5p-8"), 2, "processes_per_task > 1 requires a GPU device"),
    ],
)
def test_wrap_multiprocess_errors(rc: ResourceConfig, processes: int, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        wrap_multiprocess(IrisEntrypoint(("x",)), convert_resources(rc), processes)
    assert str(caught.value) == message


# -- adjust_tpu_replicas ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("device", "replicas", "expected"),
    [
        (TpuConfig("v4-32"), 1, 4),  # one replica becomes one slice
        (TpuConfig("v4-32"), 4, 4),
        (TpuConfig("v4-32"), 8, 8),
        (TpuConfig("v5litepod-16"), 1, 4),
        (TpuConfig("v6e-256"), 1, 64),
        (TpuConfig("v5p-8"), 1, 1),  # single-VM: untouched
        (TpuConfig("v5p-8"), 3, 3),
        (TpuConfig("v6e-8"), 7, 7),
        (GpuConfig("H100", count=8), 3, 3),
        (CpuConfig(), 5, 5),
    ],
)
def test_adjust_tpu_replicas(device, replicas: int, expected: int) -> None:
    assert adjust_tpu_replicas(device, replicas) == expected


@pytest.mark.parametrize(
    ("variant", "replicas", "vms"),
    [("v4-32", 6, 4), ("v4-32", 3, 4), ("v4-16", 3, 2), ("v5litepod-16", 2, 4)],
)
def test_adjust_tpu_replicas_not_a_multiple(variant: str, replicas: int, vms: int) -> None:
    with pytest.raises(ValueError) as caught:
        adjust_tpu_replicas(TpuConfig(variant), replicas)
    assert str(caught.value).startswith(
        f"TPU type '{variant}' requires {vms} VMs per slice, so replicas must be a multiple of {vms} "
        f"(got replicas={replicas})"
    )


# -- slice topology env -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("device", "replicas", "expected"),
    [
        (TpuConfig("v5p-8"), 2, {"IRIS_SLICE_COUNT": "2", "IRIS_TASKS_PER_SLICE": "1"}),
        (TpuConfig("v4-32"), 8, {"IRIS_SLICE_COUNT": "2", "IRIS_TASKS_PER_SLICE": "4"}),
        (TpuConfig("v6e-16"), 12, {"IRIS_SLICE_COUNT": "3", "IRIS_TASKS_PER_SLICE": "4"}),
        (TpuConfig("v5p-8"), 1, {}),  # one slice: nothing
        (TpuConfig("v4-32"), 4, {}),
        (GpuConfig("H100", count=8), 4, {}),
        (CpuConfig(), 4, {}),
    ],
)
def test_slice_env_only_for_more_than_one_slice(device, replicas: int, expected: dict) -> None:
    assert slice_topology_env(device, replicas) == expected


def test_user_slice_values_are_replaced_or_removed() -> None:
    user = {"IRIS_SLICE_COUNT": "99", "IRIS_TASKS_PER_SLICE": "99", "A": "1"}
    assert with_slice_topology_env(user, TpuConfig("v4-32"), 8) == {
        "A": "1",
        "IRIS_SLICE_COUNT": "2",
        "IRIS_TASKS_PER_SLICE": "4",
    }
    assert with_slice_topology_env(user, TpuConfig("v4-32"), 4) == {"A": "1"}
    assert with_slice_topology_env(user, GpuConfig("H100"), 4) == {"A": "1"}
    assert user["IRIS_SLICE_COUNT"] == "99"  # the input is not modified
