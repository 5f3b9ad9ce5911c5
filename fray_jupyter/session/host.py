"""The engine of one session host: a namespace kept across cells, run on the process's main thread.

A session task serves one :class:`HostEngine`. Its main thread calls :meth:`HostEngine.serve`,
which runs cells one at a time until :meth:`HostEngine.shutdown`; the other methods are called
from any thread (the threads of whatever serves the engine) and hand work to it.

Rules:

* **One namespace.** Every cell runs in the same globals, which are the process's ``__main__``
  while the engine serves (as in IPython, so ``pickle`` finds classes a cell defined); imports and
  variables stay from cell to cell. ``display`` is defined in it.
* **One cell at a time, on the main thread.** ``execute`` hands the cell to the main thread and
  waits for its :class:`~fray_jupyter.session.outputs.CellResult`. A second cell while one runs is
  refused, naming the running one. A cell id runs at most once: executing an id again (a retried
  call) waits for the first run and returns its result; a different source under a used id is
  refused. The engine keeps the last ``keep_cells`` cells' records; an older id is refused, never
  run again. ``run`` starts a cell as ``execute`` does but answers with its first outputs (or,
  once it ended, all of them and its result), so no call lasts as long as a long cell.
* **The value** of a cell is its last expression's (see ``cells``), as a mime bundle; ``_`` is
  bound to it. **Output** (``print``, ``display()``, matplotlib figures) is kept in order and
  readable while the cell runs (``read``; see ``capture``). **An exception** (any, ``SystemExit``
  and ``KeyboardInterrupt`` included) ends the cell as a
  :class:`~fray_jupyter.session.outputs.RemoteError` and is written to the task's stderr; the
  engine and its namespace stay usable.
* **Interrupt.** ``interrupt()`` raises ``KeyboardInterrupt`` in the running cell's code by
  sending SIGINT to the main thread, so a pure-Python loop stops at its next bytecode and a
  blocking call (``time.sleep``, a lock) is woken. Calls before the interrupt is delivered add
  nothing (a retried call interrupts once); each call after it delivers one more. A cell not yet
  started is interrupted as it starts. With no cell running nothing happens, and the reply says
  so. SIGINT between cells is ignored: it never stops the engine. Whether the cell then stops in
  time is for the caller to judge: code in a C call or a collective sees it only when it returns.
* **Workspace.** ``sync_workspace`` writes a sync's files into the host's work dir (its current
  directory when the engine was made, where the job's workspace was unpacked) and reloads the
  changed modules (``workspace_host``); like ``push`` it is refused while a cell runs. ``pip``
  runs pip in the host's Python (``packages``), its state kept.
* **Values.** ``push`` binds cloudpickled values (refused while a cell runs: it would race the
  cell); ``pull`` returns the named values cloudpickled, and a missing name is an error naming it
  and the names that exist.
"""

from __future__ import annotations

import builtins
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, TextIO

from fray_jupyter.session import figures, packages, values, workspace_host
from fray_jupyter.session.capture import CellRecord, CellStream
from fray_jupyter.session.cells import compile_cell, remote_error
from fray_jupyter.session.mime import mime_bundle
from fray_jupyter.session.outputs import (
    CellResult,
    Chunks,
    Display,
    HostStatus,
    InterruptReply,
    RemoteError,
    SessionError,
)
from fray_jupyter.session.packages import PipReply
from fray_jupyter.session.workspace_host import SyncReply

KEEP_CELLS: Final = 32
"""How many cells' records (outputs, results) a host keeps by default; older ones are dropped."""
RUN_LINGER: Final = 0.02
"""Seconds ``run`` waits on after a cell's first outputs for its end, so a short cell that prints
is still one call (its first outputs are that much later)."""
ENGINE_FILES: Final = frozenset(str(Path(__file__).with_name(name)) for name in ("host.py", "figures.py", "mime.py"))
"""The engine's own source files: their frames are left out of a cell's traceback."""
HIDDEN_NAMES: Final = frozenset({"display"})
"""Names the engine defines in the namespace, left out of the names a failed ``pull`` lists."""


class HostEngine:
    """One host's engine (see the module rules); ``host`` is its index in the session."""

    def __init__(self, host: int = 0, *, keep_cells: int = KEEP_CELLS) -> None:
        if keep_cells < 1:
            raise ValueError(f"keep_cells must be at least 1, got {keep_cells}")
        self.host = host
        self._keep = keep_cells
        self._module = types.ModuleType("__main__")
        self.namespace: dict[str, Any] = self._module.__dict__
        self.namespace.update({"__builtins__": builtins, "display": self.display})
        self._lock = threading.RLock()
        self._wake = threading.Condition(self._lock)
        self._records: dict[str, CellRecord] = {}
        self._ids: set[str] = set()
        self._pending: CellRecord | None = None
        self._running: CellRecord | None = None
        self._serving = False
        self._stopping = False
        self._main_thread: int | None = None
        self._in_user = False
        self._interrupt_pending = False
        self._shown: set[int] = set()
        self._started = time.time()
        self._idle_since = self._started
        self._cells_run = 0
        self.workdir = Path.cwd()
        self._old_objects: dict[Any, Any] = {}

    # -- the main thread ---------------------------------------------------------------------
    def serve(self) -> None:
        """Run cells on this (the main) thread until :meth:`shutdown`; see the module rules. A
        shutdown asked for before it began (an idle timeout that passed while the task was still
        starting) makes it return at once."""
        if threading.current_thread() is not threading.main_thread():
            raise SessionError("serve() must run on the main thread: SIGINT, which interrupts a cell, "
                               "reaches only the main thread")
        with self._lock:
            if self._serving:
                raise SessionError(f"host {self.host} is already serving")
            self._serving = True
            self._main_thread = threading.get_ident()
            self._wake.notify_all()
        saved = sys.stdout, sys.stderr, sys.modules.get("__main__")
        previous = signal.signal(signal.SIGINT, self._on_sigint)
        sys.stdout = CellStream("stdout", sys.stdout, self._current)
        sys.stderr = CellStream("stderr", sys.stderr, self._current)
        sys.modules["__main__"] = self._module
        figures.use_backend()
        try:
            while (record := self._next()) is not None:
                self._run(record)
        finally:
            signal.signal(signal.SIGINT, previous)
            sys.stdout, sys.stderr = saved[0], saved[1]
            if saved[2] is not None:
                sys.modules["__main__"] = saved[2]
            with self._lock:
                self._serving = False
                pending, self._pending = self._pending, None
            if pending is not None:
                pending.abandon(f"host {self.host} stopped serving")

    def wait_serving(self, timeout: float | None = None) -> bool:
        """Wait until :meth:`serve` runs (cells can be executed), at most ``timeout`` seconds; whether it does."""
        with self._wake:
            return self._wake.wait_for(lambda: self._serving and not self._stopping, timeout=timeout)

    def shutdown(self) -> None:
        """Make :meth:`serve` return once the running cell (if any) ends; idempotent."""
        with self._wake:
            self._stopping = True
            self._wake.notify_all()

    def _next(self) -> CellRecord | None:
        with self._wake:
            self._wake.wait_for(lambda: self._pending is not None or self._stopping)
            if self._stopping:
                return None
            record, self._pending = self._pending, None
            self._running = record
            return record

    def _on_sigint(self, signum: int, frame: types.FrameType | None) -> None:
        """SIGINT on the main thread: ``KeyboardInterrupt`` in a cell's code, nothing elsewhere (a
        pending interrupt then waits for the cell's start)."""
        if self._in_user:
            self._interrupt_pending = False
            raise KeyboardInterrupt

    def _run(self, record: CellRecord) -> None:
        started = time.time()
        value: Display | None = None
        error: RemoteError | None = None
        self._shown = set()
        figures.set_sink(self._show_figure)
        try:
            try:
                compiled = compile_cell(record.cell_id, record.source)
            except SyntaxError as exc:
                raise exc.with_traceback(None) from None  # the error is in the source, not in any frame
            try:
                self._in_user = True
                if self._interrupt_pending:
                    self._interrupt_pending = False
                    raise KeyboardInterrupt
                exec(compiled.body, self.namespace)  # noqa: S102 - running the user's cell is the job
                if compiled.last is not None:
                    result = eval(compiled.last, self.namespace)
                    if result is not None:
                        self.namespace["_"] = result
                        self._shown.add(id(result))
                        value = mime_bundle(result, self._note)
                figures.show_open()
            finally:
                self._in_user = False
        except BaseException as exc:  # noqa: BLE001 - every exception ends the cell, never the engine
            error = remote_error(exc, ENGINE_FILES)
            self._original(sys.stderr).write(error.traceback)
            self._show_figures_after_error()
        finally:
            figures.set_sink(None)
        ended = time.time()
        with self._lock:  # idle before the caller hears the result, so its next cell is not refused
            self._running = None
            self._interrupt_pending = False
            self._cells_run += 1
            self._idle_since = ended
            record.finish(CellResult(record.cell_id, self.host, record.outputs, value, error, started, ended))

    def _show_figures_after_error(self) -> None:
        """A failed cell still shows the figures it drew (as IPython does); drawing one that fails
        is noted, not raised."""
        try:
            figures.show_open()
        except Exception as exc:  # noqa: BLE001 - the figure's own drawing failed: the cell already failed
            self._note(f"a figure could not be drawn: {type(exc).__name__}: {exc}")

    @staticmethod
    def _original(stream: TextIO) -> TextIO:
        return stream.original if isinstance(stream, CellStream) else stream

    # -- output of the running cell ----------------------------------------------------------
    def _current(self) -> CellRecord | None:
        return self._running

    def _note(self, line: str) -> None:
        """A line from the engine to the running cell's stderr (and the task's)."""
        record = self._running
        if record is not None:
            record.write("stderr", f"{line}\n")
        self._original(sys.stderr).write(f"{line}\n")

    def _show_figure(self, figure: Any) -> None:
        if id(figure) in self._shown:
            return
        self._shown.add(id(figure))
        record = self._running
        if record is not None:
            record.add(mime_bundle(figure, self._note))

    def display(self, *objs: Any, raw: bool = False, metadata: Mapping[str, Any] | None = None) -> None:
        """Show each object in the running cell as a rich output (its mime bundle; with ``raw``,
        each object *is* a bundle: mime type → content); with no cell running, print it."""
        record = self._running
        for obj in objs:
            if raw and not isinstance(obj, Mapping):
                raise TypeError(f"display(raw=True) takes mime bundles (dicts), not {type(obj).__name__}")
            bundle = Display(dict(obj), dict(metadata or {})) if raw else mime_bundle(obj, self._note)
            if record is None:
                print(bundle.data.get("text/plain", ""))
                continue
            if figures.is_figure(obj):
                self._shown.add(id(obj))
            record.add(bundle)

    # -- any thread --------------------------------------------------------------------------
    def execute(self, cell_id: str, source: str) -> CellResult:
        """Run ``source`` as cell ``cell_id`` on the main thread and wait for its result (see the
        module rules)."""
        return self._start(cell_id, source).wait()

    def run(self, cell_id: str, source: str, wait: float = 0.0) -> tuple[Chunks, CellResult | None]:
        """Start cell ``cell_id`` as ``execute`` does (an id runs at most once) without waiting for
        its end, then read its outputs as ``read`` does (up to ``wait`` seconds for the first ones
        or its end, then up to ``RUN_LINGER`` more for its end); with them its result, when it has
        ended. A short cell, printing or not, is one call."""
        record = self._start(cell_id, source)
        chunks = record.read(0, wait)
        outputs, linger_until = list(chunks.outputs), time.monotonic() + RUN_LINGER
        while not chunks.done and (left := linger_until - time.monotonic()) > 0:
            chunks = record.read(chunks.cursor, left)
            outputs += chunks.outputs
        return Chunks(cell_id, tuple(outputs), chunks.cursor, chunks.done), record.wait() if chunks.done else None

    def _start(self, cell_id: str, source: str) -> CellRecord:
        if not isinstance(cell_id, str) or not cell_id:
            raise SessionError(f"a cell id is a non-empty string, not {cell_id!r}")
        if not isinstance(source, str):
            raise SessionError(f"a cell's source is a string, not {type(source).__name__}")
        with self._wake:
            record = self._records.get(cell_id)
            if record is None and cell_id in self._ids:
                raise SessionError(f"cell {cell_id!r} already ran on host {self.host}; its result is no longer kept "
                                   f"(the host keeps the last {self._keep} cells)")
            if record is None:
                self._check_idle("run another cell")
                if not self._serving or self._stopping:
                    raise SessionError(f"host {self.host} is not serving cells (its serve() is not running "
                                       "on the main thread)")
                record = self._pending = self._records[cell_id] = CellRecord(cell_id, source)
                self._ids.add(cell_id)
                self._forget_old()
                self._wake.notify_all()
            elif record.source != source:
                raise SessionError(f"cell id {cell_id!r} already ran other code on host {self.host}: "
                                   "each cell needs its own id")
        return record

    def _check_idle(self, doing: str) -> None:
        busy = self._running or self._pending
        if busy is not None:
            raise SessionError(f"host {self.host} is running cell {busy.cell_id}: it cannot {doing} until "
                               "that cell ends (or is interrupted)")

    def _forget_old(self) -> None:
        live = {self._pending, self._running}
        for cell_id in [cell_id for cell_id, record in self._records.items() if record not in live]:
            if len(self._records) <= self._keep:
                break
            del self._records[cell_id]

    def read(self, cell_id: str, cursor: int = 0, wait: float = 0.0) -> Chunks:
        """Cell ``cell_id``'s outputs from ``cursor`` on, waiting up to ``wait`` seconds for new ones
        (see ``capture``); an id not executed yet is waited for within the same ``wait`` (a read
        sent beside its ``execute`` may arrive first), then is an error."""
        deadline = time.monotonic() + wait
        with self._wake:
            self._wake.wait_for(lambda: cell_id in self._ids, timeout=wait)
            record = self._records.get(cell_id)
        wait = max(0.0, deadline - time.monotonic())
        if record is None:
            raise SessionError(f"host {self.host} has no cell {cell_id!r} (it keeps the last {self._keep} cells)")
        return record.read(cursor, wait)

    def interrupt(self, cell_id: str | None = None) -> InterruptReply:
        """Raise ``KeyboardInterrupt`` in the running cell (only if it is ``cell_id``, when given);
        see the module rules. Returns the cell it reached, or none."""
        with self._lock:
            record = self._running or self._pending
            if record is None or (cell_id is not None and record.cell_id != cell_id):
                return InterruptReply(self.host, None)
            if not self._interrupt_pending:
                self._interrupt_pending = True
                if record is self._running and self._main_thread is not None:
                    signal.pthread_kill(self._main_thread, signal.SIGINT)
            return InterruptReply(self.host, record.cell_id)

    def push(self, payload: Mapping[str, bytes]) -> list[str]:
        """Bind each name to its cloudpickled value, all or none; the names bound, sorted."""
        with self._lock:
            self._check_idle("take pushed values")
            loaded = values.loads(payload, f"host {self.host}")
            self.namespace.update(loaded)
        return sorted(loaded)

    def sync_workspace(self, files: Mapping[str, bytes], deleted: Sequence[str]) -> SyncReply:
        """Write ``files``, remove ``deleted`` and reload their modules (``workspace_host``'s rules)."""
        with self._lock:
            self._check_idle("sync its workspace")
            written, removed = workspace_host.apply(self.workdir, files, deleted)
            reloaded, not_reloaded = workspace_host.reload_changed(written, removed, self._old_objects)
        return SyncReply(self.host, len(written), len(removed), reloaded, not_reloaded)

    def pip(self, argv: Sequence[str]) -> PipReply:
        """pip with ``argv`` in this host's Python and work dir (``packages``' rules)."""
        return packages.pip(self.host, argv, self.workdir)

    def pull(self, names: Sequence[str]) -> dict[str, bytes]:
        """The named values, cloudpickled; a missing name fails, naming it and those that exist."""
        wanted = [values.check_name(name) for name in names]
        missing = [name for name in wanted if name not in self.namespace]
        if missing:
            have = [name for name in list(self.namespace) if not name.startswith("_") and name not in HIDDEN_NAMES]
            raise SessionError(f"host {self.host} has no variable {', '.join(map(repr, missing))}; "
                               f"it has: {values.listing(have)}")
        return values.dumps({name: self.namespace[name] for name in wanted}, f"host {self.host}")

    def status(self) -> HostStatus:
        """How many cells ran, the running cell and since when the host is idle."""
        with self._lock:
            running = self._running or self._pending
            return HostStatus(self.host, os.getpid(), self._started, self._cells_run,
                              running.cell_id if running else None, None if running else self._idle_since)
