"""What ``pytest`` collects, and how ``pytest -n N`` shares it out.

Run from the repository's root with no path, pytest collects every suite but the browser tests,
which need a pytest process of their own (pytest-jupyter's autouse event-loop fixtures, active in
the server tests, close a loop Playwright's sync API still runs). Name the folder to run them:
``pytest tests/ui`` (``scripts/test`` runs both).

With pytest-xdist (``scripts/test`` runs ``-n 3 --dist loadscope``), each test module runs whole
on one worker, so its module fixtures (a controller, a genuine Iris cluster) start once. The
differential suite's modules are handed out first and the quick tier's last (``tests/work_units.py``),
so the differential ones spread over the workers, the twin and embedded controller they share
(package-scoped) stop on each worker once it is done with them, and short modules fill the end."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from fray_jupyter.client import FrayClient
    from fray_jupyter.controller.api.service import ControllerService
    from tests.controller_harness import ControllerProcess
    from tests.docs_build import DocsBuild

TESTS = Path(__file__).parent
UI = TESTS / "ui"
LEFT_OUT = pytest.StashKey[bool]()
DATA_DIR = pytest.StashKey[str]()


def _names_ui(config: pytest.Config) -> bool:
    """Whether the command line names the browser suite (or a file or test inside it)."""
    for arg in config.args:
        path = Path(arg.split("::", 1)[0]).resolve()
        if path == UI or UI in path.parents:
            return True
    return False


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave ``tests/ui`` out unless the command line names it."""
    if collection_path == UI and not _names_ui(config):
        config.stash[LEFT_OUT] = True
        return True
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    """Say how to run the browser tests when this run left them out."""
    if config.stash.get(LEFT_OUT, False):
        terminalreporter.write_line("browser tests run in their own process: pytest tests/ui")


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``quick`` marker: ``pytest -m quick`` selects the tier ``scripts/test --quick`` runs.
    Point Jupyter's user data dir (where a submit keeps what it sent, ``client/sent.py``) at a
    directory of this run, inherited by every kernel and process the tests start, so no test writes
    into the home directory; a run that sets ``JUPYTER_DATA_DIR`` itself keeps it."""
    config.addinivalue_line("markers", "quick: its module starts no process (tests/quick_tier.py)")
    if "JUPYTER_DATA_DIR" not in os.environ:
        import tempfile

        config.stash[DATA_DIR] = os.environ["JUPYTER_DATA_DIR"] = tempfile.mkdtemp(prefix="fray-tests-jupyter-data-")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove the run's Jupyter data dir (``pytest_configure``) when this run made it."""
    if made := config.stash.get(DATA_DIR, None):
        import shutil

        shutil.rmtree(made, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Under ``--dist loadscope``, the order of ``tests/work_units.py``; otherwise xdist's own choice."""
    if config.getvalue("dist") != "loadscope":
        return None
    from tests.work_units import SlowModulesFirst

    return SlowModulesFirst(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``quick`` every test of a module of the quick tier (``tests/quick_tier.py``), when ``-m``
    names the mark (each pytest process would otherwise read every module's source for nothing)."""
    if "quick" not in (config.getoption("markexpr") or ""):
        return
    from tests.quick_tier import is_quick

    for item in items:
        if is_quick(item.path):
            item.add_marker(pytest.mark.quick)


TIMES_ENV = "FRAY_TEST_TIMES"
"""Set to a file path to have a row appended to it for every test, tab-separated: node id, wall
seconds (setup, call and teardown), and CPU seconds of the test process's whole tree: itself, the
processes it reaped, and every live descendant (a module's controller or twin, their tasks, a
kernel), so a long-lived fixture's cost lands on the tests it runs under. Where the suite's time
and cores go (``docs/development.md``, "Tests")."""


def _tree_cpu() -> float:
    """CPU seconds of this process, its reaped children, and its live descendants with what they reaped."""
    own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    total = own.ru_utime + own.ru_stime + reaped.ru_utime + reaped.ru_stime
    parents: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        ticks[int(entry)] = sum(int(field) for field in fields[11:15])  # utime stime cutime cstime
    me, per_second = os.getpid(), os.sysconf("SC_CLK_TCK")
    for pid, count in ticks.items():
        ancestor = parents.get(pid, 0)
        while ancestor > 1 and ancestor != me:
            ancestor = parents.get(ancestor, 0)
        if ancestor == me:
            total += count / per_second
    return total


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> object:
    """Record the test's wall and process-tree CPU time when ``$FRAY_TEST_TIMES`` names a file."""
    target = os.environ.get(TIMES_ENV)
    if not target:
        yield
        return
    start, cpu = time.monotonic(), _tree_cpu()
    yield
    with open(target, "a", encoding="utf-8") as out:
        out.write(f"{item.nodeid}\t{time.monotonic() - start:.2f}\t{_tree_cpu() - cpu:.2f}\n")


@pytest.fixture(scope="session")
def docs_build(tmp_path_factory: pytest.TempPathFactory) -> DocsBuild:
    """The run's one docs build and the examples it executed, shared by every worker (``tests/docs_build.py``)."""
    from tests.docs_build import build_docs

    return build_docs(tmp_path_factory)


@pytest.fixture(scope="module")
def controller(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerProcess]:
    """A real embedded controller, one for the module: started with the flags of the module's
    ``CONTROLLER_ARGS`` (a tuple of str) and the environment variables of its ``CONTROLLER_ENV`` (a
    dict) where it sets them, with the defaults where it does not."""
    from tests.controller_harness import start_controller, stop_quietly

    flags: tuple[str, ...] = getattr(request.module, "CONTROLLER_ARGS", ())
    env: dict[str, str] | None = getattr(request.module, "CONTROLLER_ENV", None)
    process = start_controller(tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2]) / "state",
                               *flags, env=env)
    try:
        yield process
    finally:
        stop_quietly(process)


@pytest.fixture
def client(controller: ControllerProcess) -> Iterator[FrayClient]:
    """A client of the module's ``controller``."""
    from fray_jupyter.client import FrayClient

    with FrayClient(controller.info.url, controller.info.token) as opened:
        yield opened


@pytest.fixture
def service(tmp_path: Path) -> Iterator[ControllerService]:
    """The embedded controller's service in this process (its store, and an engine of 2 slots that is
    not running), for tests of what one call does; its store closed after the test."""
    from tests.service_core import Core

    core = Core(tmp_path, slots=2)
    try:
        yield core.service
    finally:
        core.store.close()
