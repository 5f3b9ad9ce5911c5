"""The controller's start-up rules that need no process: tokens for other users come from the environment."""

from __future__ import annotations

import pytest

from fray_jupyter.controller.startup import USER_TOKENS_ENV, user_tokens


def test_user_tokens_are_user_equals_token_entries_split_by_commas_or_spaces() -> None:
    assert user_tokens("") == {}
    assert user_tokens("bob=b1, carol=c-2\n dave=d_3") == {"bob": "b1", "carol": "c-2", "dave": "d_3"}


@pytest.mark.parametrize("value", ["bob", "=secret", "a/b=secret", "bob="])
def test_a_bad_entry_names_the_variable_and_never_the_token(value: str) -> None:
    with pytest.raises(ValueError) as caught:
        user_tokens(value)
    assert str(caught.value).startswith(f"${USER_TOKENS_ENV}: ") and "expected USER=TOKEN" in str(caught.value)
    assert "secret" not in str(caught.value)
