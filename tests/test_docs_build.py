"""The docs build's rule for what fails it (``tests/docs_build.py``)."""

from __future__ import annotations

from tests.docs_build import SPHINX_MESSAGE


def test_sphinx_s_warnings_and_errors_fail_the_build_and_a_kernel_s_own_log_does_not() -> None:
    assert SPHINX_MESSAGE.search("/repo/docs/guide/inspect.md:12: WARNING: undefined label: 'nowhere'")
    assert SPHINX_MESSAGE.search("ERROR: Unknown directive type: 'fray-nothing'.")
    assert SPHINX_MESSAGE.search("WARNING: Executing notebook failed: CellExecutionError [mystnb.exec]")
    assert not SPHINX_MESSAGE.search("ERROR:tornado.general:Uncaught exception in ZMQStream callback")
