"""Fixtures for the Fray Jobs sidebar tests: the embedded controller that the session's JupyterLab
(and its kernels) share, started from the lab's own runtime and data dirs and stopped by its pid."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from labserver import Lab

from fray_jupyter.client import FrayClient
from fray_jupyter.client.discovery import start_controller
from fray_jupyter.client.transport import open_transport
from fray_jupyter.iris.proto.controller_pb2 import Controller
from fray_jupyter.runtime_file import RUNTIME_FILE_NAME, ControllerInfo, read_runtime_file

SIDEBAR_ID = "fray-jobs"


def lab_runtime_file(lab: Lab) -> Path:
    """The runtime file the lab's server and kernels read (``running_lab`` puts every Jupyter dir
    beside the notebooks folder)."""
    return lab.root.parent / "runtime" / RUNTIME_FILE_NAME


@pytest.fixture(scope="session")
def jobs_controller(lab: Lab) -> Iterator[ControllerInfo]:
    """The lab's embedded controller, started now (as a kernel's ``connect()`` would) so that the
    server, the kernels and the test all share it; stopped at the end by its pid."""
    runtime_file = lab_runtime_file(lab)
    info = start_controller(runtime_file, lab.root.parent / "data" / "fray")
    yield info
    current = read_runtime_file(runtime_file)
    if current is not None and current.pid == info.pid:
        with contextlib.suppress(ProcessLookupError):
            os.kill(info.pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while read_runtime_file(runtime_file) is not None and time.monotonic() < deadline:
            time.sleep(0.05)


@pytest.fixture(scope="session")
def lab_client(jobs_controller: ControllerInfo) -> Iterator[FrayClient]:
    """A ``FrayClient`` of the lab's controller."""
    with FrayClient(jobs_controller.url, jobs_controller.token) as client:
        yield client


def launch_raw(info: ControllerInfo, request: Controller.LaunchJobRequest) -> str:
    """Send a ``LaunchJobRequest`` as is (no Fray name rules) over the client's transport."""
    transport = open_transport(info.url, info.token)
    try:
        return transport.call("LaunchJob", request, Controller.LaunchJobResponse, 10.0).job_id
    finally:
        transport.close()
