"""A thread dump read line by line (``client.thread_dump``, and the sidebar's answer from it,
``server.threads.dump_json``): the task's own frames told from library frames, whether py-spy printed
a full path, its short path below ``sys.path``, a frozen module or a native frame."""

from __future__ import annotations

import pytest

from fray_jupyter.client.thread_dump import line_kind
from fray_jupyter.server.threads import dump_json


@pytest.mark.parametrize(("line", "kind"), [
    ('Thread 21207 (active+gil): "MainThread"', "thread"),
    ("Process 21207: python train.py", "process"),
    ("    busy_loop (<string>:3)", "own"),
    ("    train_step (train.py:42)", "own"),
    ("    step (/home/alice/project/model.py:9)", "own"),
    ("    wait (threading.py:331)", "library"),
    ("    _run_once (asyncio/base_events.py:1823)", "library"),
    ("    _call_with_frames_removed (<frozen importlib._bootstrap>:488)", "library"),
    ("    dumps (/usr/lib/python3.12/json/__init__.py:231)", "library"),
    ("    fetch (/venv/lib/python3.12/site-packages/httpx/_client.py:10)", "library"),
    ("    request (httpx/_client.py:10)", "library"),
    ("    PyEval_EvalFrameDefault (libpython3.12.so.1.0)", "library"),
    ("        Locals:", "detail"),
    ("            step: 12", "detail"),
    ("Python v3.12.1 (/usr/bin/python3.12)", "process"),
])
def test_a_dump_line_is_the_task_s_own_frame_or_a_library_s(line: str, kind: str) -> None:
    assert line_kind(line) == kind


def test_a_dump_counts_the_task_s_own_frames() -> None:
    dump = dump_json('Thread 7 (idle): "MainThread"\n    wait (threading.py:331)\n    train (train.py:9)\n')
    assert dump["kinds"] == ["thread", "library", "own"] and dump["own_frames"] == 1


def test_the_process_header_is_one_kind_however_many_lines_its_command_spans() -> None:
    dump = dump_json("Process 9: python -c\nimport time\n    time.sleep(1)\nPython v3.12.1 (/usr/bin/python3)\n\n"
                     'Thread 9 (idle): "MainThread"\n    <module> (<string>:2)\n')
    assert dump["kinds"] == ["process"] * 4 + ["other", "thread", "own"]
