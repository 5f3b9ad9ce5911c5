"""Lazily exported package names: loaded on first use, cached, unknown names refused."""

from __future__ import annotations

import pytest

import fray_jupyter


def test_every_export_resolves_and_unknown_names_are_refused() -> None:
    for name in fray_jupyter.__all__:
        assert getattr(fray_jupyter, name) is not None
        assert name in vars(fray_jupyter)  # cached after the first access
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        fray_jupyter.nope  # noqa: B018
