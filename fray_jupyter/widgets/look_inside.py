"""``InspectView``: the status panel's buttons that look inside a running task — **CPU**,
**Memory** and **Threads** on a row per task — and the output where the capture is shown.

Rules:

* One row per task (the first ``MAX_ROWS``; ``%fray profile JOB/I`` reaches any other). Its buttons
  are enabled while the task is RUNNING and no capture runs; otherwise disabled, the tooltip saying
  why ("task 1 is SUCCEEDED: only a running task can be looked inside").
* A click starts the capture on a thread of its own and returns at once, as the panel's poller
  does (ipykernel sends widget updates from threads), so the kernel's comm and the notebook stay
  free: CPU samples the task for ``CPU_SECONDS`` s (py-spy), memory attaches for ``MEMORY_SECONDS``
  s (memray), threads dumps every stack at once (py-spy dump). One capture at a time per panel:
  meanwhile every button is disabled and the note says what is being captured.
* The capture replaces what the output showed (``widgets.capture``: the CPU flamegraph as an
  interactive document, the dump with the task's own frames in bold, memory as memray's HTML or
  the stub's reason), and is written next to the notebook (the kernel's working directory) under
  ``Profile.save``'s name, as ``%fray profile`` writes it. A capture that fails is said in the note,
  with the reason; nothing a click starts raises into the notebook.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import ipywidgets as widgets

from fray_jupyter.client.client import FrayClient
from fray_jupyter.client.errors import FrayError
from fray_jupyter.client.inspection import InspectionFailed
from fray_jupyter.iris.proto import job_pb2
from fray_jupyter.iris.states import task_label, task_state_name
from fray_jupyter.views.job import note_html
from fray_jupyter.widgets import capture

CPU_SECONDS: Final[int] = 5
MEMORY_SECONDS: Final[int] = 5
MAX_ROWS: Final[int] = 16
KINDS: Final[tuple[tuple[str, str, str], ...]] = (
    ("cpu", "CPU", f"sample its CPU for {CPU_SECONDS} s (py-spy): a flamegraph"),
    ("memory", "Memory", f"attach memray for {MEMORY_SECONDS} s: where memory is allocated"),
    ("threads", "Threads", "every thread's stack now (py-spy dump)"),
)
"""(kind, button label, what a click captures)."""


@dataclass
class _Row:
    """One task's row: its label and its three buttons, by kind."""

    box: widgets.HBox
    buttons: dict[str, widgets.Button]


class InspectView(widgets.VBox):
    """The inspect buttons of one job's tasks and the capture they show (see the module rules);
    ``directory()`` is where captures are written (default: the kernel's working directory)."""

    def __init__(self, client: FrayClient, directory: Callable[[], Path] = Path.cwd) -> None:
        self.client = client
        self._directory = directory
        self._lock = threading.Lock()
        self._rows: dict[str, _Row] = {}
        self._states: dict[str, int] = {}
        self.capturing = ""  # what is being captured now, else ""
        self._thread: threading.Thread | None = None
        self.rows_box = widgets.VBox()
        self.note = widgets.HTML()
        self.output = widgets.Output()
        for widget, name in ((self.rows_box, "rows"), (self.note, "note"), (self.output, "output")):
            widget.add_class(f"fray-inspect-{name}")
        super().__init__([self.rows_box, self.note, self.output])
        self.add_class("fray-inspect")

    def show(self, tasks: Sequence[job_pb2.TaskStatus]) -> None:
        """Draw a row per task (the first ``MAX_ROWS``), its buttons enabled while it runs."""
        with self._lock:
            shown = list(tasks)[:MAX_ROWS]
            self._states = {task.task_id: task.state for task in shown}
            if [task.task_id for task in shown] != list(self._rows):
                self._rows = {task.task_id: self._row(task.task_id) for task in shown}
                more = len(tasks) - len(shown)
                extra = [widgets.HTML(note_html(f"{more} more task(s): %fray profile JOB/I looks inside any"))] \
                    if more > 0 else []
                self.rows_box.children = [row.box for row in self._rows.values()] + extra
            self._enable()

    def capture(self, task_id: str, kind: str) -> threading.Thread | None:
        """Start capturing ``kind`` of ``task_id`` in the background (the module rules); the thread,
        or None when a capture already runs or the task is not running (the note says why); a
        ``kind`` other than cpu, memory or threads is a ``ValueError`` naming it."""
        words = {name: text for name, text, _ in KINDS}
        if kind not in words:
            raise ValueError(f"kind={kind!r} is not a capture kind: use one of {', '.join(words)}")
        seconds = {"cpu": CPU_SECONDS, "memory": MEMORY_SECONDS}.get(kind, 1)
        label, what = f"task {task_label(task_id)}", words[kind]
        with self._lock:
            if self.capturing:
                self.note.value = note_html(f"wait for the {self.capturing} to finish", error=True)
                return None
            state = self._states.get(task_id)
            if state != job_pb2.TASK_STATE_RUNNING:
                self.note.value = note_html(self._why_not(task_id), error=True)
                return None
            self.capturing = f"{what} capture of {label}"
            self._enable()
        self.note.value = note_html(f"capturing {what} of {label}" + (f" for {seconds} s…" if kind != "threads"
                                                                       else "…"))
        self._thread = threading.Thread(target=self._capture, args=(task_id, kind, seconds, label),
                                        name=f"fray-inspect {task_id}", daemon=True)
        self._thread.start()
        return self._thread

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the running capture (if any) to end; True if none runs."""
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def _capture(self, task_id: str, kind: str, seconds: int, label: str) -> None:
        try:
            captured = self.client.profile(task_id, kind, seconds)
            directory = self._directory()
            saved = captured.save(directory)
            self.output.outputs = ({"output_type": "display_data", "metadata": {},
                                    "data": capture.bundle(captured, label, saved)},)
            self.note.value = ""
        except InspectionFailed as error:
            self.note.value = note_html(f"{kind} profile of {label} failed: {error.detail}", error=True)
        except (FrayError, OSError) as error:
            self.note.value = note_html(f"{kind} profile of {label} failed: {error}", error=True)
        except Exception as error:  # noqa: BLE001 - a capture thread never dies with a traceback; say it
            self.note.value = note_html(f"{kind} profile of {label} failed: {type(error).__name__}: {error}",
                                        error=True)
        finally:
            with self._lock:
                self.capturing = ""
                self._enable()

    def _why_not(self, task_id: str) -> str:
        """Why ``task_id``'s buttons are disabled now ("" when they are not)."""
        label = f"task {task_label(task_id)}"
        state = self._states.get(task_id)
        if state is None:
            return f"{label} is not one of this job's tasks shown here"
        if state != job_pb2.TASK_STATE_RUNNING:
            return f"{label} is {task_state_name(state).upper()}: only a running task can be looked inside"
        if self.capturing:
            return f"the {self.capturing} is running: one capture at a time"
        return ""

    def _enable(self) -> None:
        """Each button enabled or not, its tooltip saying what a click does or why it cannot (under the lock)."""
        for task_id, row in self._rows.items():
            why = self._why_not(task_id)
            for kind, _, does in KINDS:
                button = row.buttons[kind]
                button.disabled = bool(why)
                button.tooltip = why or f"task {task_label(task_id)}: {does}"

    def _row(self, task_id: str) -> _Row:
        label = widgets.HTML(f'<span class="fray-status">task {task_label(task_id)}</span>',
                             layout=widgets.Layout(width="72px"))
        buttons = {}
        for kind, text, _ in KINDS:
            button = widgets.Button(description=text, layout=widgets.Layout(width="90px"))
            button.add_class(f"fray-inspect-{kind}")
            button.on_click(lambda _button, kind=kind: self.capture(task_id, kind))
            buttons[kind] = button
        box = widgets.HBox([label, *buttons.values()], layout=widgets.Layout(align_items="center"))
        box.add_class("fray-inspect-row")
        box.add_class(f"fray-inspect-task-{task_label(task_id)}")
        return _Row(box, buttons)
