"""Tests for the generated Iris-compatible protobuf code in ``fray_jupyter.iris.proto``.

* Drift: the checked-in generated files must be byte-identical to a fresh run of
  ``protos/generate.py``.
* Behaviour: messages round-trip through binary, text and JSON formats, singular scalars
  have explicit presence (edition 2023), and the generated code stays in its private pool
  without importing the real ``iris`` package.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from google.protobuf import descriptor_pool, json_format, text_format
from google.protobuf.internal import api_implementation

from fray_jupyter.iris.proto import POOL, controller_pb2, job_pb2, logging_pb2, time_pb2

REPO_ROOT = Path(__file__).resolve().parent.parent
GENERATE_SCRIPT = REPO_ROOT / "protos" / "generate.py"
PROTO_PACKAGE_DIR = REPO_ROOT / "fray_jupyter" / "iris" / "proto"
REGENERATE_HINT = ".venv/bin/python protos/generate.py"

LaunchJobRequest = controller_pb2.Controller.LaunchJobRequest


def _load_generate_script() -> ModuleType:
    """Import ``protos/generate.py`` (not a package module) from its path."""
    spec = importlib.util.spec_from_file_location("fray_jupyter_protos_generate", GENERATE_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generate_script() -> ModuleType:
    return _load_generate_script()


def _sample_request() -> controller_pb2.Controller.LaunchJobRequest:
    request = LaunchJobRequest(
        name="/alice/train",
        replicas=2,
        max_retries_preemption=100,
        ports=["actor"],
        priority_band=job_pb2.PRIORITY_BAND_BATCH,
        existing_job_policy=job_pb2.EXISTING_JOB_POLICY_KEEP,
        bundle_blob=b"PK\x03\x04",
    )
    request.entrypoint.run_command.argv.extend(["echo", "hello"])
    request.entrypoint.workdir_files["main.py"] = b"print('hi')\n"
    request.resources.cpu_millicores = 4000
    request.resources.memory_bytes = 16 * 1024**3
    request.resources.device.tpu.variant = "v5p-8"
    request.resources.device.tpu.count = 4
    request.environment.env_vars["TOKENIZERS_PARALLELISM"] = "false"
    request.constraints.add(key="region", op=job_pb2.CONSTRAINT_OP_EQ).value.string_value = "us-central1"
    request.timeout.milliseconds = 3_600_000
    return request


# --- drift -------------------------------------------------------------------------------


def test_generated_files_match_a_fresh_generation(generate_script: ModuleType, tmp_path: Path) -> None:
    generate_script.generate(tmp_path)
    for name in generate_script.GENERATED_FILES:
        checked_in = PROTO_PACKAGE_DIR / name
        assert checked_in.exists(), f"{checked_in} is missing; regenerate with `{REGENERATE_HINT}`"
        assert checked_in.read_bytes() == (tmp_path / name).read_bytes(), (
            f"{checked_in.relative_to(REPO_ROOT)} differs from what protos/generate.py produces "
            f"from protos/iris/*.proto; regenerate with `{REGENERATE_HINT}`"
        )


def _declared_floor(distribution: str) -> tuple[int, ...]:
    """The ``>=`` floor pyproject.toml's dependencies give ``distribution``."""
    import tomllib

    from packaging.requirements import Requirement

    for line in tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        requirement = Requirement(line)
        if requirement.name == distribution:
            floors = [spec.version for spec in requirement.specifier if spec.operator == ">="]
            assert floors, f"{line!r} declares no floor"
            return tuple(int(part) for part in floors[0].split("."))
    raise AssertionError(f"pyproject.toml does not depend on {distribution}")


def test_gencode_loads_on_every_protobuf_and_grpcio_the_project_allows() -> None:
    """protobuf's runtime refuses gencode newer than itself (and grpcio its gRPC code): the version each
    generated module was made for is at most the floor pyproject.toml allows."""
    protobuf_floor, grpcio_floor = _declared_floor("protobuf"), _declared_floor("grpcio")
    for path in sorted(PROTO_PACKAGE_DIR.glob("*_pb2.py")):
        made_for = re.search(r"^# Protobuf Python Version: ([\d.]+)$", path.read_text(), re.MULTILINE)
        assert made_for, path
        assert tuple(int(p) for p in made_for[1].split(".")) <= protobuf_floor, (path.name, made_for[1])
    grpc_made_for = re.search(r"^GRPC_GENERATED_VERSION = '([\d.]+)'$",
                              (PROTO_PACKAGE_DIR / "controller_pb2_grpc.py").read_text(), re.MULTILINE)
    assert grpc_made_for and tuple(int(p) for p in grpc_made_for[1].split(".")) <= grpcio_floor


def test_no_stray_generated_files(generate_script: ModuleType) -> None:
    present = {path.name for path in PROTO_PACKAGE_DIR.iterdir() if "_pb2" in path.name}
    assert present == set(generate_script.GENERATED_FILES), (
        f"files in {PROTO_PACKAGE_DIR.relative_to(REPO_ROOT)} not produced by protos/generate.py: "
        f"{sorted(present - set(generate_script.GENERATED_FILES))}"
    )


# --- private pool and isolation from the real iris package --------------------------------


@pytest.mark.skipif(
    api_implementation.Type() == "python",
    reason="the pure-Python protobuf backend also registers every message class in the default pool",
)
@pytest.mark.parametrize("module", [time_pb2, logging_pb2, job_pb2, controller_pb2], ids=lambda m: m.__name__)
def test_descriptors_live_in_the_private_pool(module: ModuleType) -> None:
    assert module.DESCRIPTOR.pool is POOL
    with pytest.raises(KeyError):
        descriptor_pool.Default().FindFileByName(module.DESCRIPTOR.name)


def test_message_classes_report_their_real_module() -> None:
    assert LaunchJobRequest.__module__ == "fray_jupyter.iris.proto.controller_pb2"
    assert job_pb2.JobStatus.__module__ == "fray_jupyter.iris.proto.job_pb2"


def test_generated_code_never_imports_the_real_iris_package() -> None:
    code = (
        "import sys\n"
        "import fray_jupyter.iris.proto.controller_pb2, fray_jupyter.iris.proto.controller_pb2_grpc\n"
        "assert 'iris' not in sys.modules, sorted(m for m in sys.modules if m.split('.')[0] == 'iris')\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True)


# --- behaviour ---------------------------------------------------------------------------


def test_binary_round_trip() -> None:
    request = _sample_request()
    data = request.SerializeToString()
    assert LaunchJobRequest.FromString(data) == request


def test_text_format_round_trip() -> None:
    request = _sample_request()
    parsed = text_format.Parse(text_format.MessageToString(request), LaunchJobRequest())
    assert parsed == request


def test_json_round_trip_uses_proto3_json_names() -> None:
    request = _sample_request()
    document = json_format.MessageToDict(request)
    assert document["resources"]["memoryBytes"] == str(16 * 1024**3)  # int64 as a string
    assert document["priorityBand"] == "PRIORITY_BAND_BATCH"
    assert json_format.ParseDict(document, LaunchJobRequest()) == request


def test_explicit_zero_is_present_and_serialized() -> None:
    request = LaunchJobRequest(max_task_failures=0)
    assert request.HasField("max_task_failures")
    # Field 11, varint: tag byte (11 << 3) | 0 == 0x58, then the value 0.
    assert request.SerializeToString() == b"\x58\x00"
    assert LaunchJobRequest.FromString(b"\x58\x00").HasField("max_task_failures")


def test_unset_scalar_is_absent() -> None:
    request = LaunchJobRequest()
    assert not request.HasField("max_task_failures")
    assert request.SerializeToString() == b""


def test_oneof_holds_one_device() -> None:
    device = job_pb2.DeviceConfig(gpu=job_pb2.GpuDevice(variant="H100", count=8))
    device.tpu.variant = "v4-32"
    assert device.WhichOneof("device") == "tpu"
    assert not device.HasField("gpu")


def test_controller_service_methods() -> None:
    service = controller_pb2.DESCRIPTOR.services_by_name["ControllerService"]
    assert service.full_name == "iris.cluster.ControllerService"
    assert [method.name for method in service.methods] == [
        "LaunchJob",
        "GetJobStatus",
        "GetJobState",
        "TerminateJob",
        "CompleteJob",
        "ListJobs",
        "GetTaskStatus",
        "ListTasks",
        "ListWorkers",
        "GetAutoscalerStatus",
        "BeginCheckpoint",
        "ListUsers",
        "SetUserBudget",
        "GetUserBudget",
        "ListUserBudgets",
        "GetSchedulerState",
        "GetTaskLogs",
        "ProfileTask",
        "ExecInContainer",
        "GetProcessStatus",
    ]
    assert service.methods_by_name["TerminateJob"].output_type.full_name == "iris.job.Empty"
