"""Looking inside a running task from the client: a CPU or memory profile, a thread dump, and a
command run in the task (Iris's ``ProfileTask`` and ``ExecInContainer``, the same RPCs on the
embedded controller, the twin and a named cluster).

Rules:

* ``kind`` is one of ``KINDS``; ``fmt`` one of that kind's ``FORMATS`` (the first is the default:
  an SVG flamegraph for CPU, memray's HTML flamegraph for memory, text for threads). Anything else
  is a ``ValueError`` naming the value and what is allowed; so is ``seconds`` outside 1…3600.
* A profile's RPC may take its sampling window plus ``SLACK_S``; an exec's its timeout plus
  ``SLACK_S`` (no limit: ``NO_LIMIT_WAIT_S``).
* A capture the controller could not make (``error`` in the answer) raises ``InspectionFailed``
  with that text; an exec's ``error`` (not running, cannot start, timed out) is kept in the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Protocol, TypeVar

from google.protobuf.message import Message

from fray_jupyter.client.errors import FrayError
from fray_jupyter.iris.proto import controller_pb2, job_pb2

C = controller_pb2.Controller
J = job_pb2
M = TypeVar("M", bound=Message)
SLACK_S: Final[float] = 60.0
NO_LIMIT_WAIT_S: Final[float] = 24 * 3600.0
MAX_SECONDS: Final[int] = 3600
KINDS: Final[tuple[str, ...]] = ("cpu", "memory", "threads")
FORMATS: Final[dict[str, dict[str, tuple[int, str]]]] = {
    "cpu": {"flamegraph": (J.CpuProfile.FLAMEGRAPH, "svg"), "speedscope": (J.CpuProfile.SPEEDSCOPE, "json"),
            "raw": (J.CpuProfile.RAW, "txt")},
    "memory": {"flamegraph": (J.MemoryProfile.FLAMEGRAPH, "html"), "table": (J.MemoryProfile.TABLE, "txt"),
               "stats": (J.MemoryProfile.STATS, "json"), "raw": (J.MemoryProfile.RAW, "bin")},
    "threads": {"text": (0, "txt")},
}
"""Per kind: format name → (the proto's format value, the file extension); the first is the default."""


class Call(Protocol):
    """``FrayClient._call``: one RPC by name, with its own timeout."""

    def __call__(self, method: str, request: Message, response_type: type[M], *, idempotent: bool = ...,
                 job_id: str | None = ..., timeout: float | None = ...) -> M: ...


class InspectionFailed(FrayError):
    """The controller answered, but could not make the capture (its ``error`` is the detail)."""

    template = "{method} of {job} failed: {detail}"


@dataclass(frozen=True)
class Profile:
    """One capture: what it is of, its kind and format, and its bytes."""

    target: str
    kind: str
    format: str
    data: bytes

    @property
    def extension(self) -> str:
        """The file extension of this format (``svg``, ``json``, ``html``, ``txt``, ``bin``)."""
        return FORMATS[self.kind][self.format][1]

    def text(self) -> str:
        """The capture as text (a thread dump, a table, a flamegraph's markup)."""
        return self.data.decode(errors="replace")

    def save(self, directory: Path | str = ".", name: str | None = None) -> Path:
        """Write the capture into ``directory`` as ``name`` (default: from the target, kind and
        format, e.g. ``alice-train-0-cpu.svg``) and return its path."""
        stem = name or "-".join((*filter(None, self.target.split("/")), self.kind)).replace(":", "-")
        path = Path(directory) / (stem if "." in stem else f"{stem}.{self.extension}")
        path.write_bytes(self.data)
        return path


@dataclass(frozen=True)
class ExecResult:
    """A command's exit code and output; ``error`` says why it did not run or was killed."""

    exit_code: int
    stdout: str
    stderr: str
    error: str = ""

    @property
    def ok(self) -> bool:
        """Whether it ran to the end and exited 0."""
        return not self.error and self.exit_code == 0


def profile_request(target: str, kind: str = "cpu", seconds: int = 10, fmt: str | None = None, *,
                    rate_hz: int = 0, native: bool | None = None, locals: bool = False,
                    leaks: bool = False) -> J.ProfileTaskRequest:
    """The ``ProfileTaskRequest`` for ``target`` (validated as the module docstring says)."""
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not a profile kind: use one of {', '.join(KINDS)}")
    formats = FORMATS[kind]
    fmt = fmt or next(iter(formats))
    if fmt not in formats:
        raise ValueError(f"format={fmt!r} is not a {kind} format: use one of {', '.join(formats)}")
    if not 1 <= seconds <= MAX_SECONDS:
        raise ValueError(f"seconds={seconds} is out of range: 1 to {MAX_SECONDS}")
    value = formats[fmt][0]
    if kind == "cpu":
        cpu = J.CpuProfile(format=value, rate_hz=rate_hz)  # type: ignore[arg-type]
        if native is not None:
            cpu.native = native
        profile_type = J.ProfileType(cpu=cpu)
    elif kind == "memory":
        profile_type = J.ProfileType(memory=J.MemoryProfile(format=value, leaks=leaks))  # type: ignore[arg-type]
    else:
        profile_type = J.ProfileType(threads=J.ThreadsProfile(locals=locals, native=bool(native)))
    return J.ProfileTaskRequest(target=target, duration_seconds=seconds, profile_type=profile_type)


def profile(call: Call, target: str, kind: str = "cpu", seconds: int = 10, fmt: str | None = None,
            **options: Any) -> Profile:
    """Capture a profile of ``target`` (a task ``/user/job/0``, an attempt ``…/0:1`` or
    ``/system/process``); ``options`` are ``profile_request``'s keywords."""
    request = profile_request(target, kind, seconds, fmt, **options)
    answer = call("ProfileTask", request, J.ProfileTaskResponse, job_id=target,
                  timeout=(0 if kind == "threads" else seconds) + SLACK_S)
    if answer.error:
        raise InspectionFailed(answer.error, url="", method="ProfileTask", code="failed", job_id=target)
    return Profile(target, kind, fmt or next(iter(FORMATS[kind])), answer.profile_data)


def exec_command(call: Call, task_id: str, argv: Sequence[str], *, timeout: int = 60) -> ExecResult:
    """Run ``argv`` (a list, never a shell string) in task ``task_id``; ``timeout`` in seconds (0:
    60, negative: none)."""
    if isinstance(argv, str) or not argv or not all(isinstance(part, str) for part in argv):
        raise ValueError("the command must be a non-empty list of strings (an argv), e.g. ['ls', '-la']")
    wait = NO_LIMIT_WAIT_S if timeout < 0 else (timeout or 60) + SLACK_S
    answer = call("ExecInContainer", C.ExecInContainerRequest(task_id=task_id, command=list(argv),
                                                               timeout_seconds=timeout),
                  C.ExecInContainerResponse, idempotent=False, job_id=task_id, timeout=wait)
    return ExecResult(answer.exit_code, answer.stdout, answer.stderr, answer.error)


def task_target(job_id: str, task: int | str = 0) -> str:
    """A task of ``job_id``: an index (``0``), an attempt (``"0:1"``) or a whole task id."""
    text = str(task)
    return text if text.startswith("/") else f"{job_id}/{text}"

