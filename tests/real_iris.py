"""A real Iris local controller (marin-iris[controller]) for tests and benches: the child process
of ``fray_jupyter.controller.iris_local`` with HOME, TMPDIR and its log inside a scratch dir, so
nothing is written outside it. ``real_iris_controller(scratch)`` yields its
``http://127.0.0.1:<port>`` URL and stops it at the end of the ``with`` block (or when the test
process dies: the child stops when its stdin closes)."""

from __future__ import annotations

from fray_jupyter.controller.iris_local import iris_local_cluster as real_iris_controller

__all__ = ["real_iris_controller"]
