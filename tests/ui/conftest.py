"""Browser-test fixtures: one real JupyterLab per session, and pytest-playwright's page on Debian
Chromium. Run this folder in its own pytest invocation (env-recipes.md G6): ``pytest tests/ui``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from labserver import Lab, launch_args, running_lab


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    """A ``jupyter lab`` serving a temporary folder, stopped after the session."""
    with running_lab(tmp_path_factory.mktemp("lab")) as server:
        yield server


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """pytest-playwright's hook: launch the system Chromium, headless."""
    return {**browser_type_launch_args, **launch_args()}
