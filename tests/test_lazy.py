"""Lazily exported package names: loaded on first use, cached, unknown names refused."""

from __future__ import annotations

import subprocess
import sys

import pytest

import fray_jupyter


def test_every_export_resolves_and_unknown_names_are_refused() -> None:
    for name in fray_jupyter.__all__:
        assert getattr(fray_jupyter, name) is not None
        assert name in vars(fray_jupyter)  # cached after the first access
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        fray_jupyter.nope  # noqa: B018


def test_importing_the_package_loads_no_model() -> None:
    code = "import sys, fray_jupyter, fray_jupyter.client; print(sorted(m for m in ('pydantic', 'httpx', 'grpc') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stderr
