"""Iris's actor protocol as bytes: ``iris.actor.ActorService`` over Connect (unary, HTTP/1.1,
``application/proto``), arguments, values and exceptions as cloudpickle.

Rules:

* A call is ``POST <base>/iris.actor.ActorService/<Method>`` with the serialized message; a base is
  an actor server's ``http://host:port`` or a controller's ``<url>/proxy/<name with / as .>``
  (every name and path is ``iris.wire``'s, the one wire vocabulary). A
  call's arguments are pickled once (``pickle_arguments``) and written into the message without
  a copy (``call_body``).
* A request body may be ``Content-Encoding: zstd`` or ``gzip`` (Iris's actor client always sends
  zstd); answers go out uncompressed, which every Connect client accepts.
* A method's exception goes back pickled (``ActorError.serialized_exception``), the caller raises
  it again, as Iris's client does; the server adds the remote traceback to it as a note, so the
  caller sees where it was raised (Iris's own client shows the note too). An exception that cannot
  be pickled goes back as ``RemoteActorError`` carrying its type, message and traceback.
* A call refused before it ran answers ``ActorError`` with a Connect code name as ``error_type`` and
  no exception (Iris: ``not_found`` for an unknown method), or a Connect error status (Iris:
  ``unavailable`` for an actor name the server does not serve).
"""

from __future__ import annotations

import gzip
import json
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cloudpickle
import zstandard

from fray_jupyter.iris.proto import actor_pb2
from fray_jupyter.iris.wire import ACTOR_SERVICE, CONNECT_CODES, method_path


class RemoteActorError(RuntimeError):
    """An actor method raised an exception that could not be pickled: its type name, message and
    the remote traceback, as text."""

    def __init__(self, remote_type: str, message: str) -> None:
        super().__init__(f"{remote_type}: {message}")
        self.remote_type = remote_type


def path(method: str) -> str:
    """``/iris.actor.ActorService/<method>`` (``iris.wire.method_path``)."""
    return method_path(ACTOR_SERVICE, method)


@dataclass(frozen=True)
class Arguments:
    """A call's arguments as they travel: the cloudpickle of the positional ones (a tuple) and of the
    keyword ones (a dict). Pickled once, the same bytes can go to many actors (``call_body``)."""

    args: bytes
    kwargs: bytes


def pickle_arguments(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Arguments:
    """``Arguments`` for ``method(*args, **kwargs)``."""
    return Arguments(cloudpickle.dumps(args), cloudpickle.dumps(dict(kwargs)))


def _bytes_field(number: int, data: bytes) -> bytes:
    """The tag and length of a length-delimited protobuf field ``number`` holding ``data``."""
    head, size = bytearray([number << 3 | 2]), len(data)
    while size > 0x7F:
        head.append(size & 0x7F | 0x80)
        size >>= 7
    head.append(size)
    return bytes(head)


def call_body(actor_name: str, method: str, arguments: Arguments) -> tuple[bytes, ...]:
    """The serialized ``ActorCall`` for ``actor_name.method`` with ``arguments``, in pieces whose
    concatenation is the message's bytes, the arguments' own bytes among them uncopied: sending the
    pieces one after another sends the message (a 100 MB argument to four actors is not copied
    four times)."""
    head = actor_pb2.ActorCall(method_name=method, actor_name=actor_name).SerializeToString()
    pieces = [head]
    for number, data in ((3, arguments.args), (4, arguments.kwargs)):
        if data:  # proto3 writes no empty bytes field
            pieces += [_bytes_field(number, data), data]
    return tuple(pieces)


def decode_call(call: actor_pb2.ActorCall) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The arguments of an ``ActorCall`` (empty bytes: none)."""
    args = cloudpickle.loads(call.serialized_args) if call.serialized_args else ()
    kwargs = cloudpickle.loads(call.serialized_kwargs) if call.serialized_kwargs else {}
    return tuple(args), dict(kwargs)


def error_of(exc: BaseException, where: str) -> actor_pb2.ActorError:
    """The ``ActorError`` for ``exc`` raised in ``where`` (the actor's name): pickled with the remote
    traceback as a note, or as a ``RemoteActorError`` when it cannot be pickled."""
    text = "".join(traceback.format_exception(exc))
    note = f"Remote traceback (actor {where}):\n{text.rstrip()}"
    if note not in getattr(exc, "__notes__", ()):
        exc.add_note(note)
    try:
        serialized = cloudpickle.dumps(exc)
    except Exception:  # noqa: BLE001 - an exception holding a lock, a socket...: send what can be sent
        serialized = cloudpickle.dumps(RemoteActorError(type(exc).__name__, f"{exc}\n{note}"))
    return actor_pb2.ActorError(error_type=type(exc).__name__, message=str(exc), serialized_exception=serialized)


def refusal(code: str, message: str) -> actor_pb2.ActorError:
    """An ``ActorError`` for a call refused before it ran (``code``: a Connect code name)."""
    return actor_pb2.ActorError(error_type=code, message=message)


def raise_error(error: actor_pb2.ActorError) -> Any:
    """Raise what an ``ActorError`` carries: the remote exception, else ``ActorRefused`` for a
    Connect code, else ``RemoteActorError``."""
    if error.serialized_exception:
        raise cloudpickle.loads(error.serialized_exception)
    if error.error_type in CONNECT_CODES:
        raise ActorRefused(error.error_type, error.message)
    raise RemoteActorError(error.error_type, error.message)


def value_of(response: actor_pb2.ActorResponse) -> Any:
    """A call's return value, or its error raised (``raise_error``)."""
    if response.HasField("error"):
        return raise_error(response.error)
    return cloudpickle.loads(response.serialized_value)


class ActorRefused(RuntimeError):
    """A server refused a call (a Connect error code and its message), e.g. ``not_found`` for a
    method the actor does not have."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def decompress(body: bytes, encoding: str) -> bytes:
    """A request body as sent with ``Content-Encoding: encoding`` (identity, gzip or zstd);
    ``ValueError`` for another encoding or a body that does not decode."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    try:
        if encoding == "gzip":
            return gzip.decompress(body)
        if encoding == "zstd":
            return zstandard.ZstdDecompressor().decompressobj().decompress(body)
    except (OSError, EOFError, zstandard.ZstdError) as exc:
        raise ValueError(f"a {encoding} body that does not decompress: {exc}") from None
    raise ValueError(f"content-encoding {encoding!r} is not one of identity, gzip, zstd")


def error_body(code: str, message: str) -> bytes:
    """A Connect error's JSON body."""
    return json.dumps({"code": code, "message": message}).encode()


def loads(data: bytes) -> Any:
    """A pickled value (cloudpickle)."""
    return cloudpickle.loads(data)
