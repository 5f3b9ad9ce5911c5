"""What a job's tasks left behind: the return value or exception of a callable job, and the files
each attempt wrote under ``$IRIS_OUTPUT_DIR``, read back from their output archives.

Rules:

* A task's result comes from its current attempt's archive (``TaskAttempt.output_archive``, see
  ``iris.outputs``): the callable runner's ``RESULT_FILE`` (cloudpickle) or ``ERROR_FILE``.
* An archive is read from its ``uri``: ``file://`` directly; any other fsspec URL (``gs://``,
  ``s3://``, …) through fsspec when it and the filesystem's package are installed, otherwise the
  error says which package to install. Its size and sha256 are checked against the record.
* ``RemoteError`` carries the remote exception's type, message and traceback text; raised, it
  shows the remote traceback as its cause (as ``concurrent.futures`` does for a process pool).
* ``ResultUnavailable``: there is no value to return (not a callable job, the job was killed,
  the archive failed or could not be read); one line naming the job and the reason.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import unquote, urlparse

from fray_jupyter.client.errors import one_line
from fray_jupyter.iris import outputs
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import job_state_name
from fray_jupyter.lazy import one_import_at_a_time

A = job_pb2.TaskOutputArchive
FILESYSTEM_PACKAGES: Final[dict[str, str]] = {
    "gs": "gcsfs", "gcs": "gcsfs", "s3": "s3fs", "s3a": "s3fs", "az": "adlfs", "abfs": "adlfs",
    "abfss": "adlfs", "adl": "adlfs", "hf": "huggingface_hub", "http": "aiohttp", "https": "aiohttp",
}
"""fsspec protocol → the package that implements it (what the error tells a user to install)."""

_STATE_WORDS: Final[dict[int, str]] = {
    A.TASK_OUTPUT_ARCHIVE_STATE_UNSPECIFIED: "no output archive was recorded",
    A.TASK_OUTPUT_ARCHIVE_STATE_EMPTY: "the task wrote no output files",
    A.TASK_OUTPUT_ARCHIVE_STATE_FAILED: "archiving its outputs failed",
    A.TASK_OUTPUT_ARCHIVE_STATE_UNAVAILABLE: "its outputs are unavailable",
}


class _RemoteTraceback(Exception):
    """The remote traceback text, shown as the cause of a ``RemoteError``."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f'\n"""\n{self.text.rstrip()}\n"""'


class RemoteError(Exception):
    """A job's callable raised ``remote_type`` with ``message`` in task ``task_id`` (attempt
    ``attempt``); ``traceback`` is the remote traceback text."""

    def __init__(self, remote_type: str, message: str, traceback: str, *, task_id: str, attempt: int) -> None:
        self.remote_type = remote_type
        self.message = message
        self.traceback = traceback
        self.task_id = task_id
        self.attempt = attempt
        super().__init__(f"{remote_type}: {message}" if message else remote_type)

    def __str__(self) -> str:
        return f"{self.args[0]} (raised in task {self.task_id}, attempt {self.attempt})"


class ResultUnavailable(RuntimeError):
    """There is no return value to give back; the message names the job and why."""


@dataclass(frozen=True)
class TaskOutputs:
    """What one attempt of a task left: its archive record and the files in it (the callable
    runner's own files left out)."""

    task_id: str
    attempt: int
    archive: job_pb2.TaskOutputArchive
    files: tuple[outputs.OutputFile, ...] = ()

    @property
    def uri(self) -> str:
        """The archive's fsspec URL ("" when there is none)."""
        return self.archive.uri

    @property
    def note(self) -> str:
        """Why there are no files, when there are none ("" otherwise)."""
        if self.files:
            return ""
        reason = _STATE_WORDS.get(self.archive.state, "")
        return f"{reason}: {self.archive.error}" if self.archive.error else reason


# -- reading archives ----------------------------------------------------------------------------
def read_archive(archive: job_pb2.TaskOutputArchive) -> bytes:
    """The bytes of an UPLOADED archive, checked against its recorded size and sha256.
    ``ResultUnavailable`` when it cannot be read."""
    uri = archive.uri
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        try:
            data = Path(unquote(parsed.path) if parsed.scheme else uri).read_bytes()
        except OSError as error:
            raise ResultUnavailable(f"cannot read the output archive {uri}: {error.strerror or error}") from None
    else:
        data = _read_fsspec(uri, parsed.scheme)
    if archive.size_bytes and len(data) != archive.size_bytes:
        raise ResultUnavailable(f"the output archive {uri} is {len(data)} bytes, "
                                f"the controller recorded {archive.size_bytes}")
    if archive.sha256 and hashlib.sha256(data).hexdigest() != archive.sha256:
        raise ResultUnavailable(f"the output archive {uri} does not match the sha256 the controller recorded")
    return data


def _read_fsspec(uri: str, scheme: str) -> bytes:
    package = FILESYSTEM_PACKAGES.get(scheme)
    try:
        with one_import_at_a_time():
            import fsspec  # type: ignore[import-untyped]
    except ImportError:
        needs = f"fsspec and {package}: pip install fsspec {package}" if package else "fsspec: pip install fsspec"
        raise ResultUnavailable(f"reading task outputs at {uri} needs {needs}") from None
    try:
        with fsspec.open(uri, "rb") as stream:
            return bytes(stream.read())
    except ImportError as error:
        needs = f"{package}: pip install {package}" if package else one_line(str(error))
        raise ResultUnavailable(f"reading task outputs at {uri} needs {needs}") from None
    except (OSError, ValueError) as error:
        raise ResultUnavailable(f"cannot read the output archive {uri}: {one_line(str(error))}") from None


# -- per-task views --------------------------------------------------------------------------------
def current_attempt(task: job_pb2.TaskStatus) -> job_pb2.TaskAttempt | None:
    """The task's current attempt (the last one listed when the id is not among them)."""
    for attempt in task.attempts:
        if attempt.attempt_id == task.current_attempt_id:
            return attempt
    return task.attempts[-1] if task.attempts else None


def task_outputs(task: job_pb2.TaskStatus, attempt: job_pb2.TaskAttempt | None = None) -> TaskOutputs:
    """The files one attempt (default: the current one) of ``task`` wrote."""
    attempt = attempt or current_attempt(task)
    if attempt is None:
        return TaskOutputs(task.task_id, -1, A())
    archive = attempt.output_archive
    files: tuple[outputs.OutputFile, ...] = ()
    if archive.state == A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED:
        files = tuple(entry for entry in outputs.list_files(read_archive(archive))
                      if entry.name not in outputs.RUNNER_FILES)
    return TaskOutputs(task.task_id, attempt.attempt_id, archive, files)


def extract_outputs(task: job_pb2.TaskStatus, destination: Path) -> list[Path]:
    """Unpack the current attempt's archive of ``task`` under ``destination``; the paths of the
    task's own files (the callable runner's are removed)."""
    attempt = current_attempt(task)
    if attempt is None or attempt.output_archive.state != A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED:
        return []
    files = outputs.extract(read_archive(attempt.output_archive), destination)
    kept = []
    for path in files:
        if path.relative_to(destination).as_posix() in outputs.RUNNER_FILES:
            path.unlink()
        else:
            kept.append(path)
    return kept


def read_output_file(task: job_pb2.TaskStatus, name: str, most: int) -> bytes | None:
    """The content of the file ``name`` the current attempt of ``task`` wrote (None when it wrote
    none by that name, or it is one of the callable runner's); ``ResultUnavailable`` when it is
    larger than ``most`` bytes."""
    attempt = current_attempt(task)
    if (attempt is None or name in outputs.RUNNER_FILES
            or attempt.output_archive.state != A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED):
        return None
    for member, content in outputs.iter_members(read_archive(attempt.output_archive),
                                                lambda member: member.name == name and member.size <= most):
        if member.name == name and member.isfile():
            if content is None:
                raise ResultUnavailable(f"{name} is {member.size:,} bytes, over the {most:,} bytes shown here; "
                                        "read it with the job handle's outputs()")
            return content
    return None


def default_outputs_dir(job_id: str) -> Path:
    """Where ``outputs()`` unpacks a job's files when not told: a fresh private temporary dir."""
    slug = "-".join(part for part in job_id.split("/") if part)
    return Path(tempfile.mkdtemp(prefix=f"fray-outputs-{slug}-"))


# -- return values ---------------------------------------------------------------------------------
def task_result(task: job_pb2.TaskStatus, job_id: str) -> Any:
    """The value task ``task`` returned; ``RemoteError`` when its callable raised;
    ``ResultUnavailable`` when it left neither."""
    import cloudpickle

    attempt = current_attempt(task)
    files: dict[str, bytes] = {}
    archive = attempt.output_archive if attempt is not None else A()
    if archive.state == A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED:
        files = outputs.read_files(read_archive(archive), outputs.RUNNER_FILES)
    if outputs.ERROR_FILE in files:
        raise remote_error(files[outputs.ERROR_FILE], task.task_id, attempt.attempt_id if attempt else -1)
    if outputs.RESULT_FILE in files:
        return cloudpickle.loads(files[outputs.RESULT_FILE])
    state = job_pb2.TaskState.Name(task.state).removeprefix("TASK_STATE_").lower()
    why = _STATE_WORDS.get(archive.state, "") if archive.state != A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED else ""
    detail = "; ".join(part for part in (f"it ended {state}", task.error, why, archive.error) if part)
    hint = ("" if archive.state == A.TASK_OUTPUT_ARCHIVE_STATE_UNAVAILABLE
            else "; only jobs run from a Python callable return one")
    raise ResultUnavailable(f"task {task.task_id} of job {job_id} left no return value ({detail}){hint}")


def remote_error(payload: bytes, task_id: str, attempt: int) -> RemoteError:
    """The ``RemoteError`` for an ``ERROR_FILE``'s JSON, with the remote traceback as its cause."""
    try:
        fields = json.loads(payload)
    except ValueError:
        fields = {"type": "Exception", "message": payload.decode(errors="replace")}
    error = RemoteError(str(fields.get("type", "Exception")), str(fields.get("message", "")),
                        str(fields.get("traceback", "")), task_id=task_id, attempt=attempt)
    if error.traceback:
        error.__cause__ = _RemoteTraceback(error.traceback)
    return error


def job_results(status: job_pb2.JobStatus, tasks: Sequence[job_pb2.TaskStatus]) -> list[Any]:
    """One value per task (by index) of a finished job. When the job did not succeed, the first
    failed task's ``RemoteError`` (or a ``ResultUnavailable`` naming the job's error)."""
    if status.state != job_pb2.JOB_STATE_SUCCEEDED:
        unfinished = [task for task in tasks if task.state != job_pb2.TASK_STATE_SUCCEEDED]
        for task in sorted(unfinished, key=lambda task: task.state != job_pb2.TASK_STATE_FAILED):
            try:
                task_result(task, status.job_id)
            except RemoteError:
                raise
            except ResultUnavailable:
                continue
        raise ResultUnavailable(f"job {status.job_id} ended {job_state_name(status.state)}"
                                f"{': ' + status.error if status.error else ''}; no task left a return value")
    return [task_result(task, status.job_id) for task in tasks]

