"""Fixtures for the ``%%fray`` browser tests: the embedded controller that the lab's kernels
start on first use outlives them (its own session), so it is stopped when the session ends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from labserver import Lab

from tests.jupyter_isolation import stop_runtime_controller


@pytest.fixture(scope="session")
def lab_controller(lab: Lab) -> Iterator[Path]:
    """The lab's runtime dir, where a kernel's auto-started controller writes its runtime file;
    that controller is SIGTERMed after the session."""
    runtime = lab.root.parent / "runtime"
    yield runtime
    stop_runtime_controller(runtime)
