"""Conformance of fray-jupyter's protos with the installed real Iris protos (``iris.rpc``).

Rules checked:

* Schema: every message and enum we declare that Iris also has (matched by full name) agrees
  field by field: name, number, type, cardinality, presence, oneof, referenced type, the
  declaration order and the reserved numbers. Where we declare a message we declare all of
  its fields, and where we declare an enum we declare all of its values, so a new field in a
  pinned Iris upgrade shows up here. The only names of ours that Iris lacks are in
  ``ONLY_OURS``.
* Wire: a LaunchJobRequest with every field we declare set to a non-default value, and one
  with explicit zero values, serialize to the same bytes with our classes and with Iris's,
  and survive a parse/re-serialize through the other side unchanged.

Map entries are serialized in hash order (per process), so byte comparisons use
``deterministic=True``, which sorts map keys.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, json_format
from google.protobuf.descriptor import Descriptor, EnumDescriptor, FieldDescriptor, FileDescriptor
from google.protobuf.internal import api_implementation
from google.protobuf.message import Message

from fray_jupyter.iris.proto import controller_pb2 as ours_controller
from fray_jupyter.iris.proto import finelog_logging_pb2 as ours_finelog
from fray_jupyter.iris.proto import finelog_stats_pb2 as ours_stats
from fray_jupyter.iris.proto import job_pb2 as ours_job
from fray_jupyter.iris.proto import logging_pb2 as ours_logging
from fray_jupyter.iris.proto import time_pb2 as ours_time
from fray_jupyter.iris.proto import vm_pb2 as ours_vm

if api_implementation.Type() == "python":
    pytest.skip(
        "the pure-Python protobuf backend registers every message class in the default pool, "
        "so our protos and Iris's cannot be loaded in one process",
        allow_module_level=True,
    )
# Iris's protos load only after that check (with pure-Python protobuf they would clash with ours).
from finelog.rpc import finelog_stats_pb2 as theirs_stats
from finelog.rpc import logging_pb2 as theirs_finelog
from iris.rpc import controller_pb2 as theirs_controller
from iris.rpc import iris_logging_pb2 as theirs_logging
from iris.rpc import job_pb2 as theirs_job
from iris.rpc import time_pb2 as theirs_time
from iris.rpc import vm_pb2 as theirs_vm

REPO_ROOT = Path(__file__).resolve().parents[2]
OUR_FILES: tuple[FileDescriptor, ...] = tuple(
    module.DESCRIPTOR for module in (ours_time, ours_logging, ours_job, ours_vm, ours_controller, ours_finelog,
                                     ours_stats)
)
THEIR_POOL = theirs_controller.DESCRIPTOR.pool
assert all(module.DESCRIPTOR.pool is THEIR_POOL
           for module in (theirs_job, theirs_time, theirs_logging, theirs_vm, theirs_finelog, theirs_stats))

# Declared by us but absent from the installed Iris: the log RPC of older controllers
# (GetTaskLogs), which the current controller replaced by a separate log service. We keep it
# to talk to older controllers.
ONLY_OURS: frozenset[str] = frozenset(
    {
        "iris.cluster.Controller.GetTaskLogsRequest",
        "iris.cluster.Controller.TaskLogBatch",
        "iris.cluster.Controller.GetTaskLogsResponse",
        "iris.cluster.ControllerService.GetTaskLogs",
    }
)

OurLaunchJobRequest = ours_controller.Controller.LaunchJobRequest
TheirLaunchJobRequest = theirs_controller.Controller.LaunchJobRequest


# --- schema ------------------------------------------------------------------------------


def _children(container: FileDescriptor | Descriptor) -> list[Descriptor]:
    """The messages declared directly in ``container`` (a file or a message)."""
    if isinstance(container, FileDescriptor):
        return list(container.message_types_by_name.values())
    return list(container.nested_types_by_name.values())


def _messages(container: FileDescriptor | Descriptor) -> Iterator[Descriptor]:
    """All message descriptors declared in ``container``, nested ones (and map entries) included."""
    for message in _children(container):
        yield message
        yield from _messages(message)


def _enums(container: FileDescriptor | Descriptor) -> Iterator[EnumDescriptor]:
    """All enum descriptors declared in ``container`` or any message nested in it."""
    yield from container.enum_types_by_name.values()
    for message in _children(container):
        yield from _enums(message)


OUR_MESSAGES: dict[str, Descriptor] = {m.full_name: m for f in OUR_FILES for m in _messages(f)}
OUR_ENUMS: dict[str, EnumDescriptor] = {e.full_name: e for f in OUR_FILES for e in _enums(f)}
SHARED_MESSAGES = sorted(name for name in OUR_MESSAGES if name not in ONLY_OURS)


def _find_theirs(full_name: str, kind: str) -> Any:
    finder = THEIR_POOL.FindMessageTypeByName if kind == "message" else THEIR_POOL.FindEnumTypeByName
    try:
        return finder(full_name)
    except KeyError:
        return None


def _field_signature(field: FieldDescriptor) -> dict[str, object]:
    """What must agree between our field and theirs."""
    return {
        "name": field.name,
        "number": field.number,
        "type": field.type,
        "repeated": field.is_repeated,
        "presence": field.has_presence,
        "oneof": field.containing_oneof.name if field.containing_oneof else None,
        "message_type": field.message_type.full_name if field.message_type else None,
        "enum_type": field.enum_type.full_name if field.enum_type else None,
        "json_name": field.json_name,
    }


def _reserved(message: Descriptor) -> tuple[set[int], set[str]]:
    proto = descriptor_pb2.DescriptorProto()
    message.CopyToProto(proto)
    numbers = {n for r in proto.reserved_range for n in range(r.start, r.end)}
    return numbers, set(proto.reserved_name)


def test_only_the_allow_listed_names_are_missing_from_iris() -> None:
    missing = {name for name in OUR_MESSAGES if _find_theirs(name, "message") is None}
    missing |= {name for name in OUR_ENUMS if _find_theirs(name, "enum") is None}
    our_methods = ours_controller.DESCRIPTOR.services_by_name["ControllerService"].methods
    their_service = THEIR_POOL.FindServiceByName("iris.cluster.ControllerService")
    missing |= {m.full_name for m in our_methods if m.name not in their_service.methods_by_name}
    assert missing == ONLY_OURS


@pytest.mark.parametrize("full_name", SHARED_MESSAGES)
def test_message_matches_iris(full_name: str) -> None:
    ours = OUR_MESSAGES[full_name]
    theirs = _find_theirs(full_name, "message")
    assert theirs is not None
    our_fields = {f.number: _field_signature(f) for f in ours.fields}
    their_fields = {f.number: _field_signature(f) for f in theirs.fields}
    for number, signature in our_fields.items():
        assert their_fields.get(number) == signature, f"{full_name} field {number}"
    assert set(their_fields) == set(our_fields), f"{full_name}: Iris has fields we do not declare"
    assert [f.number for f in ours.fields] == [f.number for f in theirs.fields], "declaration order"
    assert ours.GetOptions().map_entry == theirs.GetOptions().map_entry
    assert _reserved(ours) == _reserved(theirs), f"{full_name}: reserved numbers / names"


@pytest.mark.parametrize("full_name", sorted(OUR_ENUMS))
def test_enum_matches_iris(full_name: str) -> None:
    theirs = _find_theirs(full_name, "enum")
    assert theirs is not None
    ours = [(v.name, v.number) for v in OUR_ENUMS[full_name].values]
    assert ours == [(v.name, v.number) for v in theirs.values]


def test_log_service_fetch_logs_matches_finelog() -> None:
    ours = ours_finelog.DESCRIPTOR.services_by_name["LogService"].methods_by_name["FetchLogs"]
    theirs = THEIR_POOL.FindServiceByName("finelog.logging.LogService").methods_by_name["FetchLogs"]
    assert (ours.full_name, ours.input_type.full_name, ours.output_type.full_name) == (
        theirs.full_name, theirs.input_type.full_name, theirs.output_type.full_name)


@pytest.mark.parametrize(("ours", "service"), [
    (ours_stats.DESCRIPTOR, "finelog.stats.StatsService"), (ours_controller.DESCRIPTOR, "iris.cluster.EndpointService")])
def test_the_status_text_services_match_iris(ours: FileDescriptor, service: str) -> None:
    """The stats methods a task's status text travels through, and the endpoint lookup that finds them."""
    theirs = THEIR_POOL.FindServiceByName(service)
    for method in ours.services_by_name[service.rpartition(".")[2]].methods:
        assert (method.full_name, method.input_type.full_name, method.output_type.full_name) == (
            theirs.methods_by_name[method.name].full_name, theirs.methods_by_name[method.name].input_type.full_name,
            theirs.methods_by_name[method.name].output_type.full_name)


def test_service_methods_match_iris() -> None:
    their_service = THEIR_POOL.FindServiceByName("iris.cluster.ControllerService")
    for method in ours_controller.DESCRIPTOR.services_by_name["ControllerService"].methods:
        if method.full_name in ONLY_OURS:
            continue
        theirs = their_service.methods_by_name[method.name]
        assert (method.input_type.full_name, method.output_type.full_name) == (
            theirs.input_type.full_name,
            theirs.output_type.full_name,
        )
        assert not (theirs.client_streaming or theirs.server_streaming)


# --- wire --------------------------------------------------------------------------------

DEVICES: dict[str, dict[str, Any]] = {
    "cpu": {"cpu": {"variant": "cpu"}},
    "gpu": {"gpu": {"variant": "H100", "count": 8}},
    "tpu": {"tpu": {"variant": "v5p-8", "topology": "2x2x1", "count": 4}},
}


def _full_launch_request(device: dict[str, Any]) -> dict[str, Any]:
    """Keyword arguments setting every LaunchJobRequest field (recursively) to a non-default value.

    ``DeviceConfig`` is a oneof, so one request covers one device kind; the three kinds
    together cover all of it. ``AttributeValue`` is a oneof too; the constraints cover each member.
    """
    return {
        "name": "/alice/train",
        "entrypoint": {
            "setup_commands": ["uv sync", "echo ready"],
            "run_command": {"argv": ["python", "-m", "train", "--steps=10"]},
            "workdir_files": {"main.py": b"print('hi')\n", "cfg.json": b"{}"},
            "workdir_file_refs": {"data.bin": "bundle://data.bin", "w.pt": "gs://bucket/w.pt"},
        },
        "resources": {
            "cpu_millicores": 4000,
            "memory_bytes": 16 * 1024**3,
            "disk_bytes": 50 * 1024**3,
            "device": device,
        },
        "environment": {
            "env_vars": {"TOKENIZERS_PARALLELISM": "false", "HF_DATASETS_TRUST_REMOTE_CODE": "1"},
            "secrets": {"HF_TOKEN": "hf-token", "WANDB_API_KEY": "wandb"},
            "setup_scripts": ["uv sync --frozen"],
        },
        "bundle_id": "0" * 64,
        "bundle_blob": b"PK\x03\x04zip",
        "scheduling_timeout": {"milliseconds": 600_000},
        "ports": ["actor", "http"],
        "max_task_failures": 3,
        "max_retries_failure": 2,
        "max_retries_preemption": 100,
        "constraints": [
            {
                "key": "device-variant",
                "op": ours_job.CONSTRAINT_OP_IN,
                "values": [{"string_value": "v5p-8"}, {"int_value": 8}, {"float_value": 0.5}],
                "mode": ours_job.CONSTRAINT_MODE_PREFERRED,
            },
            {"key": "tpu-count", "op": ours_job.CONSTRAINT_OP_GE, "value": {"int_value": 4}},
            {"key": "zone", "op": ours_job.CONSTRAINT_OP_NE, "value": {"string_value": "us-east1-b"}},
            {"key": "load", "op": ours_job.CONSTRAINT_OP_LT, "value": {"float_value": 0.75}},
        ],
        "coscheduling": {"group_by": "tpu-name"},
        "replicas": 4,
        "timeout": {"milliseconds": 3_600_000},
        "fail_if_exists": True,
        "preemption_policy": ours_job.JOB_PREEMPTION_POLICY_PRESERVE_CHILDREN,
        "existing_job_policy": ours_job.EXISTING_JOB_POLICY_KEEP,
        "priority_band": ours_job.PRIORITY_BAND_SYSTEM,
        "task_image": "ghcr.io/marin-community/iris-task:latest",
        "submit_argv": ["python", "launch.py", "--replicas=4"],
        "client_revision_date": "2026-10-24",
        "container_profile": ours_job.CONTAINER_PROFILE_SANDBOX,
        "egress_policy": ours_job.EGRESS_POLICY_INTERNET,
        "federation": {
            "requester_id": "peer-a",
            "owner_principal": "alice@example.com",
            "submitting_user": "alice",
            "handoff_nonce": "nonce-1",
        },
    }


ZERO_VALUES_REQUEST: dict[str, Any] = {
    "name": "/alice/zero",
    "entrypoint": {"run_command": {"argv": ["true"]}},
    "resources": {
        "cpu_millicores": 0,
        "memory_bytes": 0,
        "disk_bytes": 0,
        "device": {"cpu": {"variant": ""}},
    },
    "environment": {},
    "bundle_id": "",
    "bundle_blob": b"",
    "scheduling_timeout": {"milliseconds": 0},
    "replicas": 1,
    "max_task_failures": 0,
    "max_retries_failure": 0,
    "max_retries_preemption": 0,
    "constraints": [{"key": "preemptible", "op": 0, "value": {"string_value": ""}, "mode": 0}],
    "fail_if_exists": False,
    "preemption_policy": 0,
    "existing_job_policy": 0,
    "priority_band": 0,
    "task_image": "",
    "client_revision_date": "",
    "container_profile": 0,
    "egress_policy": 0,
}


def _reachable_fields(message: Descriptor, seen: set[str] | None = None) -> set[str]:
    """Full names of all fields reachable from ``message``; map fields count as leaves."""
    seen = set() if seen is None else seen
    if message.full_name in seen:
        return set()
    seen.add(message.full_name)
    names: set[str] = set()
    for field in message.fields:
        names.add(field.full_name)
        if field.message_type is not None and not field.message_type.GetOptions().map_entry:
            names |= _reachable_fields(field.message_type, seen)
    return names


def _non_default_fields(message: Message) -> set[str]:
    """Full names of the fields set to a non-default value anywhere inside ``message``."""
    names: set[str] = set()
    for field, value in message.ListFields():
        is_map = field.message_type is not None and field.message_type.GetOptions().map_entry
        if field.is_repeated:  # lists and maps: non-empty; recurse into message elements
            if value:
                names.add(field.full_name)
            if field.message_type is not None and not is_map:
                for item in value:
                    names |= _non_default_fields(item)
        elif field.message_type is not None:
            names.add(field.full_name)
            names |= _non_default_fields(value)
        elif value != field.default_value:
            names.add(field.full_name)
    return names


def _serialize(message: Message) -> bytes:
    return message.SerializeToString(deterministic=True)


def test_full_requests_set_every_declared_field() -> None:
    covered: set[str] = set()
    for device in DEVICES.values():
        covered |= _non_default_fields(OurLaunchJobRequest(**_full_launch_request(device)))
    assert _reachable_fields(OUR_MESSAGES["iris.cluster.Controller.LaunchJobRequest"]) - covered == set()


@pytest.mark.parametrize("device", sorted(DEVICES))
def test_full_request_bytes_identical_both_ways(device: str) -> None:
    kwargs = _full_launch_request(DEVICES[device])
    ours = OurLaunchJobRequest(**kwargs)
    theirs = TheirLaunchJobRequest(**kwargs)
    our_bytes = _serialize(ours)
    assert our_bytes == _serialize(theirs)

    # ours -> theirs -> bytes; every field must be known to Iris (JSON drops unknown fields).
    parsed_by_theirs = TheirLaunchJobRequest.FromString(our_bytes)
    assert _serialize(parsed_by_theirs) == our_bytes
    assert json_format.MessageToDict(parsed_by_theirs) == json_format.MessageToDict(ours)

    # theirs -> ours -> bytes.
    parsed_by_ours = OurLaunchJobRequest.FromString(_serialize(theirs))
    assert _serialize(parsed_by_ours) == our_bytes
    assert parsed_by_ours == ours


def test_explicit_zero_values_serialize_like_iris() -> None:
    ours = OurLaunchJobRequest(**ZERO_VALUES_REQUEST)
    theirs = TheirLaunchJobRequest(**ZERO_VALUES_REQUEST)
    our_bytes = _serialize(ours)
    assert our_bytes == _serialize(theirs)
    for name in ("max_task_failures", "priority_band", "task_image", "fail_if_exists", "bundle_blob"):
        assert ours.HasField(name) and theirs.HasField(name), name
    assert b"\x58\x00" in our_bytes  # max_task_failures (11) = 0 is on the wire
    parsed_by_theirs = TheirLaunchJobRequest.FromString(our_bytes)
    assert parsed_by_theirs.HasField("max_task_failures") and parsed_by_theirs.HasField("priority_band")
    assert _serialize(parsed_by_theirs) == our_bytes


@pytest.mark.parametrize("first", ["ours", "theirs"])
def test_both_packages_import_in_one_process_in_either_order(first: str) -> None:
    imports = {
        "ours": "import fray_jupyter.iris.proto.controller_pb2 as m",
        "theirs": "import iris.rpc.controller_pb2 as m",
    }
    second = "theirs" if first == "ours" else "ours"
    code = "\n".join(
        [
            imports[first],
            "a = m.Controller.LaunchJobRequest(name='/x', replicas=1)",
            imports[second],
            "b = m.Controller.LaunchJobRequest.FromString(a.SerializeToString())",
            "assert b.name == '/x' and b.HasField('replicas')",
            "assert type(a).DESCRIPTOR.file.pool is not type(b).DESCRIPTOR.file.pool",
        ]
    )
    subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, check=True)
