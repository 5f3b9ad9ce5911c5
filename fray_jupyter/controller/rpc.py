"""What both transports share: status codes, the typed ``RpcError``, the method table, the
bearer-token check and request decoding.

The service core raises ``RpcError(Code.X, message)``; the Connect transport turns it into an
HTTP status plus ``{"code": "<connect name>", "message": ...}``, the gRPC transport into the
matching ``grpc.StatusCode``. ``METHODS`` lists every RPC of ``iris.cluster.ControllerService``
that the embedded controller serves, with its request and response types, so neither
transport repeats the list.
"""

from __future__ import annotations

import enum
import hmac
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from google.protobuf import json_format
from google.protobuf.message import DecodeError, Message

from fray_jupyter.iris.proto import controller_pb2, job_pb2

if TYPE_CHECKING:
    import grpc

SERVICE_NAME: Final[str] = "iris.cluster.ControllerService"
_LOG = logging.getLogger(__name__)

_C = controller_pb2.Controller


class Code(enum.Enum):
    """Connect / gRPC status codes: value = (Connect name, HTTP status); the gRPC code has the
    member's name (``grpc`` is imported by the gRPC transport only, not by the service core)."""

    INVALID_ARGUMENT = ("invalid_argument", 400)
    NOT_FOUND = ("not_found", 404)
    ALREADY_EXISTS = ("already_exists", 409)
    FAILED_PRECONDITION = ("failed_precondition", 400)
    RESOURCE_EXHAUSTED = ("resource_exhausted", 429)
    UNAUTHENTICATED = ("unauthenticated", 401)
    UNIMPLEMENTED = ("unimplemented", 501)
    UNAVAILABLE = ("unavailable", 503)
    INTERNAL = ("internal", 500)

    @property
    def connect_name(self) -> str:
        """The lower-case name the Connect protocol puts in an error's ``code``."""
        return self.value[0]

    @property
    def http_status(self) -> int:
        """The HTTP status the Connect protocol pairs with this code."""
        return self.value[1]

    @property
    def grpc_code(self) -> grpc.StatusCode:
        """The native gRPC status code."""
        import grpc

        return grpc.StatusCode[self.name]


MAX_MESSAGE_LENGTH: Final[int] = 1000
"""Error messages echo the caller's values; past this many characters they are cut, so a 10 KB
job id cannot push a gRPC status past the peer's metadata limit (it would arrive as
RESOURCE_EXHAUSTED instead of the real code)."""


class RpcError(Exception):
    """A refused RPC: a status code and a message meant for the person who sent it (at most
    ``MAX_MESSAGE_LENGTH`` characters; a longer one is cut and says how much was left out)."""

    def __init__(self, code: Code, message: str) -> None:
        if len(message) > MAX_MESSAGE_LENGTH:
            cut = len(message) - MAX_MESSAGE_LENGTH
            message = f"{message[:MAX_MESSAGE_LENGTH]}… ({cut} more characters)"
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Method:
    """One unary RPC: its name, message types and the service-core attribute serving it."""

    name: str
    request: type[Message]
    response: type[Message]
    handler: str

    @property
    def path(self) -> str:
        """``/iris.cluster.ControllerService/<name>``, the URL path and gRPC method path."""
        return f"/{SERVICE_NAME}/{self.name}"


METHODS: Final[tuple[Method, ...]] = (
    Method("LaunchJob", _C.LaunchJobRequest, _C.LaunchJobResponse, "launch_job"),
    Method("GetJobStatus", _C.GetJobStatusRequest, _C.GetJobStatusResponse, "get_job_status"),
    Method("GetJobState", _C.GetJobStateRequest, _C.GetJobStateResponse, "get_job_state"),
    Method("TerminateJob", _C.TerminateJobRequest, job_pb2.Empty, "terminate_job"),
    Method("ListJobs", _C.ListJobsRequest, _C.ListJobsResponse, "list_jobs"),
    Method("GetTaskStatus", _C.GetTaskStatusRequest, _C.GetTaskStatusResponse, "get_task_status"),
    Method("ListTasks", _C.ListTasksRequest, _C.ListTasksResponse, "list_tasks"),
    Method("GetTaskLogs", _C.GetTaskLogsRequest, _C.GetTaskLogsResponse, "get_task_logs"),
    Method("ListWorkers", _C.ListWorkersRequest, _C.ListWorkersResponse, "list_workers"),
    Method("GetAutoscalerStatus", _C.GetAutoscalerStatusRequest, _C.GetAutoscalerStatusResponse,
           "get_autoscaler_status"),
)
METHODS_BY_PATH: Final[dict[str, Method]] = {method.path: method for method in METHODS}

BEARER_PREFIX: Final[str] = "Bearer "


def check_bearer(header: str | None, token: str) -> None:
    """Accept only ``authorization: Bearer <token>`` with exactly the controller's token
    (compared in constant time); anything else is UNAUTHENTICATED."""
    if not header:
        raise RpcError(Code.UNAUTHENTICATED, "missing 'authorization: Bearer <token>' header")
    if not header.startswith(BEARER_PREFIX) or not hmac.compare_digest(
        header[len(BEARER_PREFIX):].strip().encode(), token.encode()
    ):
        raise RpcError(Code.UNAUTHENTICATED, "invalid bearer token")


Invoke = Callable[[Method, Message], Message]
"""Serve one decoded request: what a transport calls."""


def decode(method: Method, codec: str, body: bytes) -> Message:
    """Parse a request body; anything unparseable (JSON that is not an object included) is
    INVALID_ARGUMENT (unknown JSON fields are ignored, so newer clients with extra fields still work)."""
    message = method.request()
    name = method.request.DESCRIPTOR.full_name
    try:
        if codec == "proto":
            message.ParseFromString(body)
        else:
            payload = json.loads(body or b"{}")
            if not isinstance(payload, dict):
                raise RpcError(Code.INVALID_ARGUMENT,
                               f"cannot parse {name}: expected a JSON object, got {type(payload).__name__}")
            json_format.ParseDict(payload, message, ignore_unknown_fields=True)
    except (DecodeError, json_format.ParseError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise RpcError(Code.INVALID_ARGUMENT, f"cannot parse {name}: {error}") from None
    return message


def invoke_logged(service: object) -> Invoke:
    """``invoke`` for a service object: call ``service.<handler>(request)``; an unexpected
    exception is logged and answered as INTERNAL, never propagated to the server."""

    def invoke(method: Method, request: Message) -> Message:
        try:
            response: Message = getattr(service, method.handler)(request)
        except RpcError:
            raise
        except Exception as error:  # noqa: BLE001 - a bug in one RPC must not take the server down
            _LOG.exception("%s failed", method.name)
            raise RpcError(Code.INTERNAL, f"{method.name} failed: {type(error).__name__}: {error}") from None
        return response

    return invoke
