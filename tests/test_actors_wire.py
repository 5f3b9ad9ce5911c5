"""The actor wire's rules: a call's message written in pieces is the message, byte for byte, and
the arguments' bytes travel uncopied."""

from __future__ import annotations

import pytest

from fray_jupyter.actors import wire
from fray_jupyter.iris.proto import actor_pb2


@pytest.mark.parametrize("size", [0, 1, 127, 128, 16_383, 16_384, 3_000_000])
def test_a_call_body_in_pieces_is_the_serialized_actor_call(size: int) -> None:
    arguments = wire.pickle_arguments((b"x" * size,), {"k": 1} if size % 2 else {})
    pieces = wire.call_body("job/ctr-0", "push", arguments)
    whole = actor_pb2.ActorCall(method_name="push", actor_name="job/ctr-0", serialized_args=arguments.args,
                                serialized_kwargs=arguments.kwargs).SerializeToString()
    assert b"".join(pieces) == whole
    assert any(piece is arguments.args for piece in pieces)  # sent as it is, not copied into a message
    assert wire.decode_call(actor_pb2.ActorCall.FromString(whole)) == ((b"x" * size,), {"k": 1} if size % 2 else {})


def test_no_arguments_write_no_argument_fields() -> None:
    pieces = wire.call_body("a", "m", wire.Arguments(b"", b""))
    assert b"".join(pieces) == actor_pb2.ActorCall(method_name="m", actor_name="a").SerializeToString()
