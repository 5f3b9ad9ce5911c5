"""How long the embedded controller lives, and what it reports about itself.

Idle rule: with an idle timeout (``--idle-timeout`` seconds, else ``$FRAY_CONTROLLER_IDLE_TIMEOUT``;
0 means never), the controller stops by itself (as on SIGTERM) once no task has been running or
waiting to start and no RPC has arrived for that long. The controller that discovery starts in
the background gets ``runtime_file.AUTO_IDLE_TIMEOUT_S`` (one hour) unless the variable says otherwise; one
started by hand never idles out unless asked. The next use starts it again on the same state dir,
history intact. (``/health`` and the admin verbs are not activity.)
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Mapping

from google.protobuf.message import Message

from fray_jupyter.controller.api.methods import Method
from fray_jupyter.controller.transport.rpc import Answer, Invoke
from fray_jupyter.runtime_file import IDLE_ENV

_LOG = logging.getLogger(__name__)


def idle_timeout(option: float | None, environ: Mapping[str, str], default: float = 0.0) -> float:
    """Seconds of idleness before the controller stops (0: never): the option, else the
    variable, else ``default``; ValueError naming a bad value."""
    if option is not None:
        value = option
    else:
        text = environ.get(IDLE_ENV, "").strip()
        try:
            value = float(text) if text else default
        except ValueError:
            raise ValueError(f"${IDLE_ENV}={text!r} must be a number of seconds (0: never)") from None
    if value < 0:
        raise ValueError(f"idle timeout {value:g} must be 0 (never) or more seconds")
    return value


class Activity:
    """When the controller last did something for someone; ``watch`` applies the idle rule."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.started = time.time()
        self._last = time.monotonic()

    def touch(self) -> None:
        """Something happened now."""
        self._last = time.monotonic()

    @property
    def idle_s(self) -> float:
        """Seconds since the last activity."""
        return time.monotonic() - self._last

    def wrap(self, invoke: Invoke) -> Invoke:
        """``invoke``, counting every RPC as activity."""
        def counted(method: Method, request: Message) -> Answer:
            self.touch()
            return invoke(method, request)
        return counted

    async def watch(self, busy: Callable[[], bool], stop: asyncio.Event) -> None:
        """Set ``stop`` once idle for ``timeout`` seconds (never with timeout 0). While tasks
        run it looks every second; while not busy it sleeps until the idle deadline. Work only
        starts through an RPC (which touches) or at start-up (looked at before the first
        sleep), so no busy spell can begin and end unseen during that sleep."""
        if self.timeout <= 0:
            return
        while not stop.is_set():
            if busy():
                self.touch()
                await asyncio.sleep(min(1.0, self.timeout / 4))
                continue
            remaining = self.timeout - self.idle_s
            if remaining <= 0:
                _LOG.info("idle for %.0f s (no running or queued tasks, no requests): stopping", self.idle_s)
                stop.set()
                return
            await asyncio.sleep(remaining)

    def figures(self) -> dict[str, float]:
        """Start time, uptime, idle time and timeout, for ``controller status``."""
        return {"started_ms": int(self.started * 1000), "uptime_s": round(time.time() - self.started, 1),
                "idle_s": round(self.idle_s, 1), "idle_timeout_s": self.timeout, "pid": os.getpid()}
