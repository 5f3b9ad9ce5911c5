"""Lazily exported package names: loaded on first use, cached, unknown names refused; heavy
packages imported for the first time in two threads at once load in both."""

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


RACE = """
import sys, threading, time
from fray_jupyter.client.clusters import list_clusters
from fray_jupyter.iris import arrow_ipc

errors, first_done = [], threading.Event()

def clusters():
    try:
        list_clusters()  # Marin's Iris CLI, which imports pyarrow through finelog
    except BaseException as error:
        errors.append(repr(error))
    first_done.set()

def arrow():
    while "pyarrow" not in sys.modules and not first_done.is_set():  # the other thread is inside pyarrow
        time.sleep(0.0005)
    try:
        arrow_ipc.write([arrow_ipc.Column("a", "int64", [1])])
    except BaseException as error:
        errors.append(repr(error))

threads = [threading.Thread(target=clusters), threading.Thread(target=arrow)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
print(errors)
"""


def test_two_threads_importing_pyarrow_for_the_first_time_at_once_both_succeed() -> None:
    # The Jobs sidebar's first two requests (the cluster list, a job's status texts) once did this in
    # the server's worker threads and both answered 500: pyarrow's package and its ipc module import
    # each other, and the second thread saw a partially initialised module.
    pytest.importorskip("iris")
    done = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


NO_WAIT = """
import threading
from fray_jupyter import lazy
from fray_jupyter.client.status_text import status_texts

lazy.loaded("email.mime.text")
held, release = threading.Event(), threading.Event()

def long_import():  # as the cluster list holds the lock while it imports Iris's CLI
    with lazy.one_import_at_a_time():
        held.set()
        release.wait()

threading.Thread(target=long_import, daemon=True).start()
held.wait()
module = lazy.loaded("email.mime")  # a package of a module loaded already: no lock, no wait
texts = status_texts({"arrowIpc": ""})  # a status-text answer of no rows: no table to decode
import sys
print(module.__name__, texts, "pyarrow" in sys.modules)
release.set()
"""


def test_a_loaded_module_and_an_empty_status_answer_wait_for_no_import() -> None:
    """While another thread holds the import lock, what is loaded already is returned at once, and a
    status-text answer of no rows is read without importing pyarrow (the sidebar's first job read
    waited behind the cluster list's import of Iris's CLI). Hangs (the timeout) if either waits."""
    done = subprocess.run([sys.executable, "-c", NO_WAIT], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["email.mime", "{}", "False"]
