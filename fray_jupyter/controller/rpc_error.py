"""A refused RPC: its status code and a message for the person who sent it.

Every part of the controller that refuses a request raises ``RpcError(Code.X, message)``: the Connect
transport turns it into an HTTP status plus ``{"code": "<connect name>", "message": ...}``, the gRPC
transport into the matching ``grpc.StatusCode``.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import grpc


class Code(enum.Enum):
    """Connect / gRPC status codes: value = (Connect name, HTTP status); the gRPC code has the
    member's name (``grpc`` is imported by the gRPC transport only, not by the service core)."""

    INVALID_ARGUMENT = ("invalid_argument", 400)
    NOT_FOUND = ("not_found", 404)
    ALREADY_EXISTS = ("already_exists", 409)
    PERMISSION_DENIED = ("permission_denied", 403)
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
