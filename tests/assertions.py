"""Assertions several test modules share."""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from pydantic import ValidationError


def one_line_value_error(excinfo: pytest.ExceptionInfo[BaseException], *fragments: str) -> str:
    """The error is a plain one-line ValueError (never pydantic's text) containing every fragment."""
    error = excinfo.value
    assert type(error) is ValueError, f"{type(error).__name__} is not a plain ValueError"
    assert not isinstance(error, ValidationError)
    message = str(error)
    assert message and "\n" not in message
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return message


def one_usage_line(raised: pytest.ExceptionInfo[BaseException], fragment: str, magic: str) -> None:
    """The magic failed with a plain one-line ``UsageError`` starting with ``magic`` and containing
    ``fragment``."""
    error = raised.value
    assert type(error) is UsageError, f"{type(error).__name__} is not a plain UsageError"
    message = str(error)
    assert "\n" not in message and message.startswith(magic), message
    assert fragment in message, f"{fragment!r} not in {message!r}"
