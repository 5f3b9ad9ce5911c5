"""errors: Connect status names map to typed errors, each printed as one line naming URL and job."""

from __future__ import annotations

import pytest

from fray_jupyter.client.errors import (
    ERROR_CLASSES,
    AuthenticationFailed,
    ControllerUnreachable,
    FrayError,
    InvalidRequest,
    JobAlreadyExists,
    JobNotFound,
    RpcFailed,
    error_for,
    one_line,
)

URL = "http://127.0.0.1:1234"


@pytest.mark.parametrize(("code", "cls"), [
    ("unauthenticated", AuthenticationFailed), ("permission_denied", AuthenticationFailed),
    ("not_found", JobNotFound), ("already_exists", JobAlreadyExists), ("invalid_argument", InvalidRequest),
    ("failed_precondition", InvalidRequest), ("unavailable", ControllerUnreachable),
    ("internal", RpcFailed), ("unimplemented", RpcFailed), ("something-new", RpcFailed),
])
def test_codes_map_to_classes(code: str, cls: type[FrayError]) -> None:
    error = error_for(code, "server said so", url=URL, method="GetJobStatus")
    assert type(error) is cls and error.code == code and isinstance(error, FrayError)
    assert error.retryable == (code == "unavailable")


def test_every_table_entry_is_a_fray_error() -> None:
    assert all(issubclass(cls, FrayError) for cls in ERROR_CLASSES.values())


def test_messages_are_one_line_and_name_url_and_job() -> None:
    error = error_for("not_found", "Job /a/b\n  not found", url=URL, method="GetJobStatus")
    error.job_id = "/a/b"
    assert str(error) == f"job /a/b not found on {URL}: Job /a/b not found"
    failed = error_for("internal", "boom\ntraceback...", url=URL, method="LaunchJob")
    assert str(failed) == f"LaunchJob failed on {URL}: internal: boom traceback..."


def test_long_details_are_cut() -> None:
    assert len(one_line("x " * 1000)) == 300
    assert one_line("  a \t b\n") == "a b"
