"""``GetProcessStatus`` for the controller process (target ``/system/process`` or empty), as Iris's
``iris/cluster/process_status.py`` answers it: host name, pid, Python version, uptime, resident
and virtual memory (``/proc/self/statm``; peak RSS where there is no ``/proc``), CPU use in
millicores since the previous call (0 on the first), live threads, open file descriptors, the
machine's memory and CPU count. No log entries are returned (Iris reads logs with FetchLogs).
"""

from __future__ import annotations

import os
import platform
import resource
import sys
import threading
import time
from pathlib import Path

from fray_jupyter.iris.proto import job_pb2


class ProcessStatus:
    """The controller's process facts; keeps the previous CPU reading for the next call's rate."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self._last = (time.monotonic(), time.process_time())

    def status(self) -> job_pb2.GetProcessStatusResponse:
        """This process's ``GetProcessStatusResponse`` (see the module docstring)."""
        rss, vms = _memory()
        return job_pb2.GetProcessStatusResponse(process_info=job_pb2.ProcessInfo(
            hostname=platform.node(), pid=os.getpid(), python_version=sys.version.split()[0],
            uptime_ms=int((time.monotonic() - self.started) * 1000), memory_rss_bytes=rss, memory_vms_bytes=vms,
            cpu_millicores=self._millicores(), thread_count=threading.active_count(), open_fd_count=_open_fds(),
            memory_total_bytes=_total_memory(), cpu_count=os.cpu_count() or 0))

    def _millicores(self) -> int:
        wall, cpu = time.monotonic(), time.process_time()
        (last_wall, last_cpu), self._last = self._last, (wall, cpu)
        return int((cpu - last_cpu) / (wall - last_wall) * 1000) if wall > last_wall else 0


def _memory() -> tuple[int, int]:
    try:
        pages = Path("/proc/self/statm").read_text().split()
        size = os.sysconf("SC_PAGE_SIZE")
        return int(pages[1]) * size, int(pages[0]) * size
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1024 if sys.platform == "linux" else 1)
        return peak, peak


def _total_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 0


def _open_fds() -> int:
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError:
        return 0
