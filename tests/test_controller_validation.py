"""LaunchJob admission: every refusal is INVALID_ARGUMENT with a message naming the problem."""

from __future__ import annotations

import io
import zipfile

import pytest

from fray_jupyter.controller.api.validation import MAX_BUNDLE_SIZE_BYTES, job_id_user, validate_launch
from fray_jupyter.controller.rpc_error import Code, RpcError
from fray_jupyter.iris.proto import controller_pb2, time_pb2
from tests.controller_harness import launch_request

C = controller_pb2.Controller


def _zip(name: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(name, "x")
    return buffer.getvalue()


def _mutations() -> dict[str, tuple[str, object]]:
    return {
        "name": ("name", "alice/no-leading-slash"),
        "integer child": ("name", "/alice/parent/3"),
        "blank part": ("name", "/alice/   "),
        "dots": ("name", "/alice/.."),
        "replicas": ("replicas", 0),
        "retries": ("max_retries_failure", -1),
        "bundle size": ("bundle_blob", b"0" * (MAX_BUNDLE_SIZE_BYTES + 1)),
        "bundle zip": ("bundle_blob", b"not a zip"),
        "bundle escape": ("bundle_blob", _zip("../evil")),
    }


@pytest.mark.parametrize("case", list(_mutations()))
def test_bad_fields_are_refused(case: str) -> None:
    field, value = _mutations()[case]
    request = launch_request("ok", "true")
    setattr(request, field, value)
    with pytest.raises(RpcError) as refused:
        validate_launch(request)
    assert refused.value.code == Code.INVALID_ARGUMENT
    assert refused.value.message


def test_missing_command_negative_timeout_and_bad_file_names() -> None:
    empty = launch_request("ok", "true")
    empty.entrypoint.run_command.ClearField("argv")
    late = launch_request("ok", "true", timeout=time_pb2.Duration(milliseconds=-1))
    escaping = launch_request("ok", "true")
    escaping.entrypoint.workdir_files["../x"] = b""
    for request, words in ((empty, "nothing to run"), (late, "timeout"), (escaping, "relative path")):
        with pytest.raises(RpcError, match=words):
            validate_launch(request)


def test_a_realistic_request_passes_and_names_split() -> None:
    validate_launch(launch_request("fine", "true", bundle_blob=_zip("pkg/ok.py")))
    assert job_id_user("/alice/train-1") == "alice" and job_id_user("/alice/coord/step/eval") == "alice"


@pytest.mark.parametrize("name", ["/alice/coord/0", "/alice/coord/-1", "/alice/coord/step/1_0"])
def test_a_child_named_by_an_integer_is_refused_naming_the_task_it_would_be(name: str) -> None:
    with pytest.raises(RpcError, match="a child job's name cannot be an integer") as refused:
        job_id_user(name)
    assert refused.value.code == Code.INVALID_ARGUMENT and name.rpartition("/")[0] in refused.value.message


def test_long_error_messages_are_cut_but_say_so() -> None:
    from fray_jupyter.controller.rpc_error import MAX_MESSAGE_LENGTH, Code, RpcError

    error = RpcError(Code.NOT_FOUND, "job " + "x" * 10_000 + " not found")
    assert len(error.message) < MAX_MESSAGE_LENGTH + 40 and error.message.endswith("more characters)")
    assert RpcError(Code.NOT_FOUND, "short").message == "short"
