"""Admission checks for ``LaunchJob``: a request that fails one is refused with
INVALID_ARGUMENT and a message that says what to change; nothing is stored."""

from __future__ import annotations

import io
import zipfile
from pathlib import PurePosixPath
from typing import Final

from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.controller.runtime.runner import bundle_limit_error
from fray_jupyter.iris.bundle import MAX_BUNDLE_SIZE_BYTES
from fray_jupyter.iris.proto import controller_pb2
from fray_jupyter.iris.states import is_task_index, parent_job_id

MAX_REPLICAS_PER_JOB: Final[int] = 10_000
MAX_COMPONENT_LENGTH: Final[int] = 200


def _component_ok(part: str) -> bool:
    # Iris's JobName rule: a component is not empty or only whitespace and has no '/'; we also
    # keep it printable and short. Names never reach a path or a shell (work dirs use the job's
    # number), so any other character, '<' or a space included, is just text.
    return bool(part.strip()) and part.isprintable() and len(part) <= MAX_COMPONENT_LENGTH and part not in (".", "..")


def job_id_user(job_id: str) -> str:
    """The submitting user of ``"/alice/train"`` or of a child job ``"/alice/train/eval"`` (the
    first component). Every component is as Iris allows (not empty or only whitespace, no '/'),
    printable, at most 200 characters, neither ``.`` nor ``..``; a child's name is not one
    ``int()`` reads (Iris's client refuses it: the id would name its parent's task)."""
    parts = job_id.split("/")
    if len(parts) < 3 or parts[0] != "" or not all(_component_ok(part) for part in parts[1:]):
        raise RpcError(
            Code.INVALID_ARGUMENT,
            f"malformed job name {job_id!r}: expected '/<user>/<name>' or a child job's "
            "'/<user>/<name>/<child>…' (printable, non-blank parts without '/')",
        )
    if len(parts) > 3 and is_task_index(parts[-1]):
        raise RpcError(Code.INVALID_ARGUMENT,
                       f"malformed job name {job_id!r}: a child job's name cannot be an integer "
                       f"({parts[-1]!r} would name task {parts[-1].strip()} of {parent_job_id(job_id)})")
    return parts[1]


def validate_launch(request: controller_pb2.Controller.LaunchJobRequest) -> None:
    """Refuse a request the controller could not run as asked (see the messages)."""
    job_id_user(request.name)
    if request.replicas < 1:
        raise RpcError(Code.INVALID_ARGUMENT, f"replicas must be at least 1 (got {request.replicas})")
    if request.replicas > MAX_REPLICAS_PER_JOB:
        raise RpcError(Code.INVALID_ARGUMENT,
                       f"replicas={request.replicas} exceeds the maximum of {MAX_REPLICAS_PER_JOB}")
    if not request.entrypoint.run_command.argv or not request.entrypoint.run_command.argv[0]:
        raise RpcError(Code.INVALID_ARGUMENT, "entrypoint.run_command.argv is empty: nothing to run")
    _validate_process_inputs(request)
    for field in ("max_retries_failure", "max_retries_preemption", "max_task_failures"):
        if getattr(request, field) < 0:
            raise RpcError(Code.INVALID_ARGUMENT, f"{field} must not be negative")
    for field in ("timeout", "scheduling_timeout"):
        if getattr(request, field).milliseconds < 0:
            raise RpcError(Code.INVALID_ARGUMENT, f"{field} must not be negative")
    for name in request.entrypoint.workdir_files:
        path = PurePosixPath(name)
        if not path.parts or path.is_absolute() or ".." in path.parts or "\\" in name or "\0" in name:
            raise RpcError(Code.INVALID_ARGUMENT,
                           f"workdir file name {name!r} must be a relative path inside the work dir")
    if request.entrypoint.workdir_file_refs:
        raise RpcError(Code.INVALID_ARGUMENT,
                       "workdir_file_refs are not supported by the embedded controller; send workdir_files")
    _validate_bundle(request.bundle_blob)


def _validate_process_inputs(request: controller_pb2.Controller.LaunchJobRequest) -> None:
    """What becomes a task's argv or environment must be something a process can be given: no NUL
    anywhere, env var names non-empty and without '='. (Found at spawn time instead, each task would
    fail with a controller error.)"""
    entrypoint = request.entrypoint
    for field, values in (("entrypoint.run_command.argv", entrypoint.run_command.argv),
                          ("entrypoint.setup_commands", entrypoint.setup_commands)):
        for index, value in enumerate(values):
            if "\0" in value:
                raise RpcError(Code.INVALID_ARGUMENT, f"{field}[{index}] {value!r} contains a NUL character")
    for name, value in request.environment.env_vars.items():
        if not name or "=" in name or "\0" in name:
            raise RpcError(Code.INVALID_ARGUMENT,
                           f"environment variable name {name!r} must be non-empty and contain no '=' or NUL")
        if "\0" in value:
            raise RpcError(Code.INVALID_ARGUMENT, f"environment variable {name} contains a NUL character")


def _validate_bundle(blob: bytes) -> None:
    if not blob:
        return
    if len(blob) > MAX_BUNDLE_SIZE_BYTES:
        raise RpcError(
            Code.INVALID_ARGUMENT,
            f"Bundle size {len(blob) / 2**20:.1f}MB exceeds maximum {MAX_BUNDLE_SIZE_BYTES // 2**20}MB",
        )
    try:
        with zipfile.ZipFile(io.BytesIO(blob)) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, ValueError) as error:
        raise RpcError(Code.INVALID_ARGUMENT, f"bundle_blob is not a zip archive: {error}") from None
    if (problem := bundle_limit_error(infos)) is not None:
        raise RpcError(Code.INVALID_ARGUMENT, problem)
    names = [info.filename for info in infos]
    for name in names:
        if PurePosixPath(name).is_absolute() or ".." in PurePosixPath(name).parts:
            raise RpcError(Code.INVALID_ARGUMENT, f"bundle entry {name!r} points outside the work dir")
