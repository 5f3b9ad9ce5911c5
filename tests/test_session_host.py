"""The per-host engine, run as sessions run it: real host processes (``tests/session_hosts.py``), each
engine on its process's main thread, called from other threads."""

from __future__ import annotations

import base64
import pickle
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from fray_jupyter.session import values
from fray_jupyter.session.host import HostEngine
from fray_jupyter.session.outputs import CellResult, Display, SessionError, Stream
from tests.session_hosts import HostProcess, hosts, on_every, pulled, wait_until

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def gang(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[HostProcess]]:
    with hosts(3, tmp_path_factory.mktemp("session")) as started:
        yield started


@pytest.fixture
def host(gang: list[HostProcess]) -> HostProcess:
    return gang[0]


def new_id() -> str:
    return f"c{uuid4().hex[:8]}"


def run(host: HostProcess, source: str) -> CellResult:
    result: CellResult = host.call("execute", new_id(), source)
    return result


def value(result: CellResult) -> str | None:
    assert result.error is None, result.error.traceback
    return None if result.value is None else str(result.value.data["text/plain"])


def text(result: CellResult, stream: str = "stdout") -> str:
    return "".join(out.text for out in result.outputs if isinstance(out, Stream) and out.name == stream)


def start_running(host: HostProcess, source: str) -> tuple[str, object]:
    """A long cell started on ``host``, returned once the host says it is running it."""
    cell = new_id()
    future = host.submit("execute", cell, source)
    wait_until(lambda: host.call("status").running == cell, f"host {host.host} runs {cell}")
    return cell, future


# -- the namespace and the value ------------------------------------------------------------------
def test_state_is_kept_across_cells_on_every_host(gang: list[HostProcess]) -> None:
    cell = new_id()
    for future in on_every(gang, "execute", cell, "import math\nside = 7"):
        assert future.result().error is None
    results = [future.result() for future in on_every(gang, "execute", new_id(), "math.sqrt(side * side)")]
    assert [value(result) for result in results] == ["7.0", "7.0", "7.0"]
    assert [result.host for result in results] == [0, 1, 2]


def test_the_value_is_the_last_expression_unless_a_semicolon_hides_it(host: HostProcess) -> None:
    assert value(run(host, "a = 1\na + 1")) == "2"
    assert value(run(host, "a + 2  # a comment after it")) == "3"
    assert value(run(host, "a + 1;")) is None
    assert value(run(host, "a = 5")) is None
    assert value(run(host, "None")) is None


def test_underscore_is_the_previous_cells_value(host: HostProcess) -> None:
    assert value(run(host, "6 * 7")) == "42"
    assert value(run(host, "_ + 1")) == "43"


def test_a_cell_defined_class_pickles_as_in_ipython(host: HostProcess) -> None:
    """The namespace is ``__main__``: plain pickle finds a class a cell defined."""
    assert value(run(host, "import pickle\nclass Point:\n    pass\nlen(pickle.dumps(Point())) > 0")) == "True"


# -- output -----------------------------------------------------------------------------------------
def test_output_is_readable_while_the_cell_runs(host: HostProcess, tmp_path: Path) -> None:
    go = tmp_path / "go"
    source = f"import os, time\nprint('started')\nwhile not os.path.exists({str(go)!r}):\n    time.sleep(0.01)\nprint('ended')"
    cell, future = start_running(host, source)
    seen: list[str] = []
    cursor = 0

    def started() -> bool:
        nonlocal cursor
        chunks = host.call("read", cell, cursor, wait=1.0)
        assert not chunks.done
        seen.extend(out.text for out in chunks.outputs if isinstance(out, Stream))
        cursor = chunks.cursor
        return "started\n" in "".join(seen)

    wait_until(started, "the first line is readable while the cell runs")
    go.touch()
    result = future.result()  # type: ignore[attr-defined]
    rest = host.call("read", cell, cursor)
    assert rest.done and "".join(out.text for out in rest.outputs) == "ended\n"
    assert text(result) == "started\nended\n"
    with pytest.raises(SessionError, match="cursor 99 is outside"):
        host.call("read", cell, 99)
    with pytest.raises(SessionError, match="has no cell 'never-ran'"):
        host.call("read", "never-ran")


def test_rich_outputs_are_mime_bundles_in_order_with_the_text(host: HostProcess) -> None:
    source = """
class Html:
    def _repr_html_(self):
        return "<b>bold</b>"
class Png:
    def _repr_png_(self):
        return b"\\x89PNG\\r\\n\\x1a\\nfake"
class Bundle:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/markdown": "*md*"}, {"text/markdown": {"isolated": True}}
    def _repr_html_(self):
        return "<i>also</i>"
class Broken:
    def _repr_html_(self):
        raise RuntimeError("no html today")
print("before")
display(Html())
print("between")
display(Png(), Bundle())
display({"text/plain": "raw", "application/json": {"k": 1}}, raw=True)
Broken()
"""
    result = run(host, source)
    kinds = [(type(out).__name__, out.text if isinstance(out, Stream) else sorted(out.data)) for out in result.outputs]
    assert kinds == [("Stream", "before\n"), ("Display", ["text/html", "text/plain"]), ("Stream", "between\n"),
                     ("Display", ["image/png", "text/plain"]), ("Display", ["text/html", "text/markdown", "text/plain"]),
                     ("Display", ["application/json", "text/plain"]),
                     ("Stream", "Broken._repr_html_ raised RuntimeError: no html today\n")]
    displays = [out for out in result.outputs if isinstance(out, Display)]
    assert displays[0].data["text/html"] == "<b>bold</b>"
    assert base64.b64decode(displays[1].data["image/png"]).startswith(PNG_MAGIC)
    assert displays[2].metadata == {"text/markdown": {"isolated": True}}
    assert result.value is not None and result.value.data["text/plain"].startswith("<__main__.Broken object")


def test_a_matplotlib_figure_comes_as_png_where_the_cell_showed_it(host: HostProcess) -> None:
    pytest.importorskip("matplotlib")
    source = ("import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\nprint('after show')\n"
              "fig = plt.figure()\nplt.plot([3, 2, 1])\nprint('end of cell')")
    result = run(host, source)
    order = [out.text if isinstance(out, Stream) else "png" for out in result.outputs]
    assert order == ["png", "after show\nend of cell\n", "png"]
    for out in result.outputs:
        if isinstance(out, Display):
            assert base64.b64decode(out.data["image/png"]).startswith(PNG_MAGIC)
            assert out.data["text/plain"].startswith("<Figure size")
    assert value(run(host, "plt.get_fignums()")) == "[]"  # shown figures are closed
    shown_once = run(host, "fig = plt.figure()\nplt.plot([1])\nfig")
    assert shown_once.value is not None and "image/png" in shown_once.value.data
    assert [out for out in shown_once.outputs if isinstance(out, Display)] == []


def test_a_dataframe_shows_as_its_html_table(host: HostProcess) -> None:
    pytest.importorskip("pandas")
    result = run(host, "import pandas as pd\npd.DataFrame({'a': [1, 2]})")
    assert result.value is not None and "<table" in result.value.data["text/html"]
    assert "a" in result.value.data["text/plain"]


def test_the_task_log_keeps_what_the_cell_printed(host: HostProcess) -> None:
    marker = f"marker-{uuid4().hex}"
    run(host, f"print({marker!r})")
    run(host, f"raise ValueError({marker + '-error'!r})")
    log = host.log.read_text()
    assert f"{marker}\n" in log and f"ValueError: {marker}-error" in log


# -- exceptions -------------------------------------------------------------------------------------
def test_an_exception_is_a_remote_error_with_the_cells_own_frames(host: HostProcess) -> None:
    defining = new_id()
    assert host.call("execute", defining, "class Bad(Exception):\n    pass\ndef check(v):\n    raise Bad(f'no {v}')").error is None
    calling = new_id()
    result: CellResult = host.call("execute", calling, "x = 1\ncheck(x)")
    error = result.error
    assert error is not None and error.type == "Bad" and error.message == "no 1" and error.summary == "Bad: no 1"
    assert [(frame.filename, frame.lineno, frame.name, frame.line) for frame in error.frames] == [
        (f"<cell {calling}>", 2, "<module>", "check(x)"),
        (f"<cell {defining}>", 4, "check", "raise Bad(f'no {v}')")]
    assert error.traceback.startswith("Traceback (most recent call last):")
    assert "host.py" not in error.traceback and error.traceback.rstrip().endswith("Bad: no 1")
    assert value(run(host, "x + 1")) == "2"  # the session goes on


def test_a_chained_exception_keeps_its_chain() -> None:
    """The text is Python's own, chain included (checked in-process: no cell needed)."""
    from fray_jupyter.session.cells import remote_error
    try:
        try:
            {}["k"]
        except KeyError as inner:
            raise RuntimeError("outer") from inner
    except RuntimeError as exc:
        error = remote_error(exc)
    assert "KeyError: 'k'" in error.traceback and "direct cause" in error.traceback
    assert error.type == "RuntimeError"


def test_a_syntax_error_names_the_cell_and_the_line(host: HostProcess) -> None:
    cell = new_id()
    error = host.call("execute", cell, "ok = 1\nx = (").error
    assert error.type == "SyntaxError" and error.frames == ()
    assert f'File "<cell {cell}>", line 2' in error.traceback


def test_system_exit_ends_only_the_cell(host: HostProcess) -> None:
    result = run(host, "raise SystemExit(3)")
    assert result.error is not None and result.error.type == "SystemExit"
    assert value(run(host, "'still here'")) == "'still here'"


# -- one cell at a time ---------------------------------------------------------------------------
def test_a_host_runs_one_cell_at_a_time_and_refuses_pushes_meanwhile(host: HostProcess) -> None:
    cell, future = start_running(host, "while True:\n    pass")
    with pytest.raises(SessionError, match=f"host 0 is running cell {cell}: it cannot run another cell"):
        run(host, "1")
    with pytest.raises(SessionError, match=f"host 0 is running cell {cell}: it cannot take pushed values"):
        host.call("push", values.dumps({"v": 1}, "the kernel"))
    assert host.call("interrupt", cell).was_running
    assert future.result().interrupted  # type: ignore[attr-defined]


def test_a_retried_execute_returns_the_first_run_and_does_not_run_again(host: HostProcess) -> None:
    run(host, "runs = 0")
    cell = new_id()
    first = host.call("execute", cell, "runs += 1\nruns")
    again = host.call("execute", cell, "runs += 1\nruns")
    assert first == again and value(first) == "1"
    assert value(run(host, "runs")) == "1"
    with pytest.raises(SessionError, match=f"cell id '{cell}' already ran other code on host 0"):
        host.call("execute", cell, "runs = 100")


def test_run_starts_a_cell_and_answers_its_result_when_it_ends_within_the_wait(host: HostProcess) -> None:
    """One call for a short cell; for a longer one its first outputs, then the result from ``execute``."""
    chunks, result = host.call("run", new_id(), "print('quick')\n6 * 7", 5.0)
    assert chunks.done and value(result) == "42" and text(result) == "quick\n"
    cell = new_id()
    source = "import time\nprint('first', flush=True)\ntime.sleep(0.3)\nprint('then')"
    chunks, result = host.call("run", cell, source, 5.0)
    shown = "".join(out.text for out in chunks.outputs)
    assert result is None and not chunks.done and shown.startswith("first") and "then" not in shown
    assert text(host.call("execute", cell, source)) == "first\nthen\n"  # waits for it, runs it once


def test_status_counts_cells_and_says_since_when_the_host_is_idle(host: HostProcess) -> None:
    before = host.call("status")
    result = run(host, "1")
    after = host.call("status")
    assert after.cells_run == before.cells_run + 1 and after.running is None
    assert after.idle_since == result.ended and after.pid == host.process.pid


# -- interrupts -------------------------------------------------------------------------------------
def test_an_interrupt_stops_a_pure_python_loop_on_every_host_and_state_survives(gang: list[HostProcess]) -> None:
    for future in on_every(gang, "execute", new_id(), "kept = 'before the loop'"):
        assert future.result().error is None
    running = [start_running(host, "while True:\n    pass") for host in gang]
    replies = [host.call("interrupt") for host in gang]
    assert [(reply.host, reply.cell_id) for reply in replies] == [(index, cell) for index, (cell, _) in enumerate(running)]
    for cell, future in running:
        result = future.result()  # type: ignore[attr-defined]
        assert result.interrupted and result.error.frames[-1].filename == f"<cell {cell}>"
    results = [future.result() for future in on_every(gang, "execute", new_id(), "kept")]
    assert [value(result) for result in results] == ["'before the loop'"] * 3


def test_an_interrupt_wakes_a_blocking_call(host: HostProcess) -> None:
    # the interrupt is sent once the cell is in its sleep: one sent while the host says "running" but
    # before the cell's first line ends the cell there, with no frame of its own
    _, future = start_running(host, "import time\nasleep = True\ntime.sleep(3600)")
    wait_until(lambda: pulled(host, "asleep"), "the cell is about to sleep")
    assert host.call("interrupt").was_running
    error = future.result().error  # type: ignore[attr-defined]
    assert error.type == "KeyboardInterrupt" and error.frames[-1].line == "time.sleep(3600)"


def test_an_interrupt_with_no_cell_running_does_nothing_and_says_so(host: HostProcess) -> None:
    reply = host.call("interrupt")
    assert not reply.was_running and reply.cell_id is None
    assert value(run(host, "import time\ntime.sleep(0.05)\n'not interrupted'")) == "'not interrupted'"


def test_an_interrupt_names_the_cell_it_is_for(host: HostProcess) -> None:
    cell, future = start_running(host, "while True:\n    pass")
    assert host.call("interrupt", "some-other-cell").cell_id is None
    assert host.call("status").running == cell
    assert host.call("interrupt", cell).cell_id == cell
    assert future.result().interrupted  # type: ignore[attr-defined]


def test_each_delivered_interrupt_reaches_a_cell_that_caught_the_last(host: HostProcess) -> None:
    # ``entered`` counts the times the cell is inside its ``try``: an interrupt is sent only then (one
    # sent while "running" but before the first line, or in the ``except``, is not the rule's case)
    source = ("caught = entered = 0\nwhile True:\n    try:\n        entered += 1\n        while True:\n"
              "            pass\n    except KeyboardInterrupt:\n        caught += 1\n        if caught == 2:\n"
              "            raise")
    cell, future = start_running(host, source)
    wait_until(lambda: pulled(host, "entered") == 1, "the cell is inside its try")
    host.call("interrupt", cell)
    wait_until(lambda: pulled(host, "entered") == 2, "the cell caught the interrupt and is inside its try again")
    assert pulled(host, "caught") == 1  # the first interrupt is caught (pull works while a cell runs)
    host.call("interrupt", cell)
    assert future.result().interrupted  # type: ignore[attr-defined]
    assert value(run(host, "caught")) == "2"


# -- values -----------------------------------------------------------------------------------------
def test_push_and_pull_move_values_to_one_host_or_every_host(gang: list[HostProcess]) -> None:
    assert gang[1].call("push", values.dumps({"only_here": [1, 2], "also": "x"}, "the kernel")) == ["also", "only_here"]
    assert values.loads(gang[1].call("pull", ["only_here"]), "the kernel") == {"only_here": [1, 2]}
    with pytest.raises(SessionError) as missing:
        gang[0].call("pull", ["only_here", "nor_this"])
    message = str(missing.value)
    assert message.startswith("host 0 has no variable 'only_here', 'nor_this'; it has: ")
    assert "\n" not in message and "display" not in message.split("it has: ")[1].split(", ")
    for future in on_every(gang, "push", values.dumps({"everywhere": 3}, "the kernel")):
        future.result()
    assert [value(future.result()) for future in on_every(gang, "execute", new_id(), "everywhere * 2")] == ["6"] * 3


def test_a_function_a_cell_defined_can_be_pulled(host: HostProcess) -> None:
    run(host, "def twice(v):\n    return 2 * v")
    twice = values.loads(host.call("pull", ["twice"]), "the kernel")["twice"]
    assert twice(21) == 42


def test_a_value_that_cannot_move_is_named() -> None:
    with pytest.raises(SessionError, match=r"^the kernel cannot pickle 'guard' \(lock\): TypeError"):
        values.dumps({"guard": threading.Lock()}, "the kernel")
    with pytest.raises(SessionError, match=r"^'not a name' is not a variable name"):
        values.dumps({"not a name": 1}, "the kernel")


def test_a_push_that_cannot_be_loaded_names_the_value_and_binds_nothing(host: HostProcess) -> None:
    payload = {"fine": pickle.dumps(1), "junk": b"not a pickle"}
    with pytest.raises(SessionError, match=r"^host 0 cannot load 'junk': UnpicklingError"):
        host.call("push", payload)
    with pytest.raises(SessionError, match="has no variable 'fine'"):
        host.call("pull", ["fine"])


def test_a_pull_of_a_value_that_cannot_be_pickled_names_it(host: HostProcess) -> None:
    run(host, "import threading\nheld = threading.Lock()")
    with pytest.raises(SessionError, match=r"^host 0 cannot pickle 'held' \(lock\)"):
        host.call("pull", ["held"])


@pytest.mark.parametrize("kind", ["numpy", "bytes"])
def test_100_mb_moves_to_every_host_and_back(gang: list[HostProcess], kind: str) -> None:
    """A 100 MB numpy array (where numpy is installed) and 100 MB of bytes (everywhere)."""
    if kind == "numpy":
        numpy = pytest.importorskip("numpy")
        big: Any = numpy.arange(100 * 2**20 // 8, dtype=numpy.float64)
        check = "float(big.sum()) == len(big) * (len(big) - 1) / 2"
    else:
        big = bytes(range(256)) * (100 * 2**20 // 256)
        check = "big[:256] == bytes(range(256)) and len(big) == 100 * 2**20"
    payload = values.dumps({"big": big}, "the kernel")
    assert len(payload["big"]) >= 100 * 2**20
    for future in on_every(gang, "push", payload):
        assert future.result() == ["big"]
    assert [value(future.result()) for future in on_every(gang, "execute", new_id(), check)] == ["True"] * 3
    back = values.loads(gang[2].call("pull", ["big"]), "the kernel")["big"]
    assert type(back) is type(big) and len(back) == len(big) and back[-1] == big[-1]
    for future in on_every(gang, "execute", new_id(), "del big"):
        assert future.result().error is None


# -- the main thread --------------------------------------------------------------------------------
def test_serve_runs_only_on_the_main_thread_and_execute_needs_it() -> None:
    engine = HostEngine(4)
    with pytest.raises(SessionError, match="host 4 is not serving cells"):
        engine.execute("c1", "1")
    failures: list[BaseException] = []

    def serve() -> None:
        try:
            engine.serve()
        except SessionError as exc:
            failures.append(exc)

    thread = threading.Thread(target=serve)
    thread.start()
    thread.join()
    assert len(failures) == 1 and "serve() must run on the main thread" in str(failures[0])
    with pytest.raises(ValueError, match="keep_cells must be at least 1, got 0"):
        HostEngine(keep_cells=0)


def test_a_shutdown_asked_before_serving_began_is_kept() -> None:
    """An idle timeout can pass while the task is still starting: that shutdown must end the serve
    that begins after it, or the host would hold its slice for ever (CI saw one)."""
    engine = HostEngine(1)
    engine.shutdown()
    served = threading.Event()
    hung: list[bool] = []

    def guard() -> None:  # a lost shutdown would hang serve(): fail instead, after a generous bound
        if not served.wait(30):
            hung.append(True)
            engine.shutdown()

    threading.Thread(target=guard, daemon=True).start()
    engine.serve()
    served.set()
    assert not hung, "serve() waited although shutdown() was asked for before it began"


def serving(engine: HostEngine, drive: Callable[[], None]) -> None:
    """Serve ``engine`` on this (the main) thread while ``drive`` calls it from another thread."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            engine.wait_serving()
            drive()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
            failures.append(exc)
        finally:
            engine.shutdown()

    thread = threading.Thread(target=run)
    thread.start()
    engine.serve()
    thread.join()
    if failures:
        raise failures[0]


def test_a_host_forgets_old_cells_but_never_runs_an_id_again() -> None:
    engine = HostEngine(0, keep_cells=2)

    def drive() -> None:
        for cell in ("c1", "c2", "c3"):
            engine.execute(cell, "n = 1")
        with pytest.raises(SessionError, match="has no cell 'c1' \\(it keeps the last 2 cells\\)"):
            engine.read("c1")
        with pytest.raises(SessionError, match="cell 'c1' already ran on host 0; its result is no longer kept"):
            engine.execute("c1", "n = 1")
        assert engine.read("c3").done and engine.status().cells_run == 3

    serving(engine, drive)
    with pytest.raises(SessionError, match="host 0 is not serving cells"):
        engine.execute("c4", "1")

