"""The profile history of a job's tasks: every capture this Jupyter server made (held in memory), and
the captures the controller keeps in its ``iris.profile`` stats namespace (Iris's schema, read with
SQL as Iris's dashboard lists a source's captures), so the sidebar can list and reopen them.

Rules:

* ``CaptureStore`` holds each capture the profile route made, per controller URL, at most
  ``MAX_HELD`` captures and ``MAX_HELD_BYTES`` bytes (the oldest go first). Its id is
  ``s-<number>``.
* The controller's rows of the job's tasks are read newest first, at most ``MAX_LISTED``
  (``history_sql``: not their bytes but their MD5, so their size is not known until one is reopened);
  a row's id is ``c-<task index>-<captured ms>-<type>`` and reopening it reads its bytes
  (``capture_sql``: the row captured in that millisecond). A row both hold (same task and kind, same
  bytes, captured while this server waited for it, give or take ``SKEW_MS``) is listed once, as this
  server's.
* A row's ``type`` / ``format`` (Iris's ``ProfileType`` / ``ProfileFormat``) is read as the
  client's kind and format (``KIND_OF``); a row of a type or format the client does not know is left out.
* An empty capture says why (``empty_reason``): the stub a controller answers when the profiler
  cannot read the task (an SVG with no frames, memray's HTML with no script, a speedscope file with
  no profiles, memray's stats with an ``error``, one line of text) — its text is the reason.
"""

from __future__ import annotations

import hashlib
import html
import itertools
import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from fray_jupyter.client.inspection import FORMATS
from fray_jupyter.client.usage import row_int, sql_string
from fray_jupyter.iris.states import task_id_for
from fray_jupyter.server import contract

MAX_HELD: Final[int] = 200
MAX_HELD_BYTES: Final[int] = 128 * 2**20
MAX_LISTED: Final[int] = 200
SKEW_MS: Final[int] = 60_000
STUB_BYTES: Final[int] = 4096
"""A capture larger than this is never read as a stub."""
KIND_OF: Final[dict[tuple[str, str], tuple[str, str]]] = {
    **{("cpu", fmt): ("cpu", fmt) for fmt in FORMATS["cpu"]},
    ("memory", "html"): ("memory", "flamegraph"),
    **{("memory", fmt): ("memory", fmt) for fmt in ("table", "stats", "raw")},
    ("thread", "raw"): ("threads", "text"),
}
"""An ``iris.profile`` row's (type, format) → the client's (kind, format)."""
ID: Final[re.Pattern[str]] = re.compile(r"^(s-(?P<number>\d{1,12})|c-(?P<index>\d{1,6})-(?P<ms>\d{1,15})-(?P<type>[a-z]{1,8}))$")
_TAGS: Final[re.Pattern[str]] = re.compile(r"<script.*?</script>|<style.*?</style>|<[^>]*>", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class Capture:
    """One capture of task ``index`` of ``job_id`` on the controller at ``url``: its kind, format and
    window, when it was asked for and made (epoch ms), its bytes (b"" for a controller row not read
    yet), where it is kept ("server" or "controller"), Iris's trigger, its size (0: not known) and
    the MD5 of its bytes."""

    capture_id: str
    url: str
    job_id: str
    index: int
    attempt: int | None
    kind: str
    format: str
    seconds: int
    requested_ms: int
    captured_ms: int
    data: bytes
    origin: str
    trigger: str = "on_demand"
    size: int = 0
    digest: str = ""

    @property
    def extension(self) -> str:
        """Its file extension (``inspection.FORMATS``)."""
        return FORMATS[self.kind][self.format][1]

    def json(self) -> contract.ProfileCapture:
        """The capture as the history lists it."""
        return contract.ProfileCapture(
            capture_id=self.capture_id, task_index=self.index, attempt=self.attempt, kind=self.kind,
            format=self.format, seconds=self.seconds, captured_ms=self.captured_ms, size=self.size,
            origin=self.origin, trigger=self.trigger,
            note=empty_reason(self.kind, self.format, self.data) if self.origin == "server" else "")


class CaptureStore:
    """The captures this server made (module rules); thread-safe."""

    def __init__(self, most: int = MAX_HELD, most_bytes: int = MAX_HELD_BYTES) -> None:
        self.most, self.most_bytes = most, most_bytes
        self._held: list[Capture] = []
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()

    def add(self, *, url: str, job_id: str, index: int, attempt: int | None, kind: str, fmt: str, seconds: int,
            requested_ms: int, captured_ms: int, data: bytes) -> Capture:
        """Hold a new capture; the oldest go while there are too many or too many bytes."""
        with self._lock:
            capture = Capture(f"s-{next(self._numbers)}", url, job_id, index, attempt, kind, fmt, seconds,
                              requested_ms, captured_ms, data, "server", size=len(data),
                              digest=hashlib.md5(data, usedforsecurity=False).hexdigest())
            self._held.append(capture)
            while len(self._held) > self.most or (len(self._held) > 1 and
                                                  sum(len(c.data) for c in self._held) > self.most_bytes):
                self._held.pop(0)
            return capture

    def of_job(self, url: str, job_id: str) -> list[Capture]:
        """The job's captures on the controller at ``url``, newest first."""
        with self._lock:
            return [c for c in reversed(self._held) if c.url == url and c.job_id == job_id]

    def get(self, url: str, job_id: str, capture_id: str) -> Capture | None:
        """One held capture of the job, or None."""
        return next((c for c in self.of_job(url, job_id) if c.capture_id == capture_id), None)


def history_sql(job_id: str, task_count: int) -> str:
    """The controller's newest ``MAX_LISTED`` captures of the job's tasks: not their bytes, their MD5."""
    sources = ", ".join(sql_string(task_id_for(job_id, index)) for index in range(max(task_count, 1)))
    return ('SELECT source, attempt_id, captured_at, duration_seconds, type, format, trigger, '
            f'md5(profile_data) AS digest FROM "iris.profile" WHERE source IN ({sources}) '
            f"ORDER BY captured_at DESC LIMIT {MAX_LISTED}")


def capture_sql(job_id: str, index: int, captured_ms: int, profile_type: str) -> str:
    """The bytes and format of the controller's capture of task ``index`` of that type made in that
    millisecond (a store keeping finer times still matches)."""
    return ('SELECT profile_data, format, attempt_id, duration_seconds, trigger FROM "iris.profile" '
            f"WHERE source = {sql_string(task_id_for(job_id, index))} AND type = {sql_string(profile_type)} "
            f"AND captured_at >= to_timestamp_millis({int(captured_ms)}) "
            f"AND captured_at < to_timestamp_millis({int(captured_ms) + 1}) LIMIT 1")


def controller_capture(url: str, job_id: str, row: dict[str, Any], data: bytes = b"") -> Capture | None:
    """An ``iris.profile`` row as a ``Capture`` (None for a type or format the client does not know)."""
    known = KIND_OF.get((str(row.get("type")), str(row.get("format"))))
    index = str(row.get("source", "")).rpartition("/")[2]
    if known is None or not index.isdigit():
        return None
    ms, profile_type = row_int(row.get("captured_at")), str(row.get("type"))
    attempt = row.get("attempt_id")
    return Capture(f"c-{int(index)}-{ms}-{profile_type}", url, job_id, int(index),
                   attempt if isinstance(attempt, int) else None, known[0], known[1], row_int(row.get("duration_seconds")),
                   ms, ms, data, "controller", str(row.get("trigger") or "on_demand"), len(data),
                   str(row.get("digest") or "") or hashlib.md5(data, usedforsecurity=False).hexdigest())


def same_capture(held: Capture, row: Capture) -> bool:
    """Whether a controller row is one of this server's captures (module rules)."""
    return (held.index, held.kind, held.digest) == (row.index, row.kind, row.digest) and \
        held.requested_ms - SKEW_MS <= row.captured_ms <= held.captured_ms + SKEW_MS


def merged(held: Sequence[Capture], rows: Sequence[Capture]) -> list[Capture]:
    """This server's captures and the controller's rows it does not hold, newest first."""
    others = [row for row in rows if not any(same_capture(capture, row) for capture in held)]
    return sorted([*held, *others], key=lambda capture: capture.captured_ms, reverse=True)


def _text(markup: str) -> str:
    return " ".join(html.unescape(_TAGS.sub(" ", markup)).split())


def empty_reason(kind: str, fmt: str, data: bytes) -> str:
    """Why a capture holds no profile ("" when it holds one), from the stub's own text (module rules)."""
    if len(data) > STUB_BYTES:
        return ""
    text = data.decode(errors="replace")
    if not text.strip():
        return "the capture is empty"
    extension = FORMATS[kind][fmt][1]
    if extension == "svg":
        return "" if 'id="frames"' in text else _text(text) or "the profile holds no samples"
    if extension == "html":
        return "" if "<script" in text.lower() else _text(text) or "the report holds no allocations"
    if extension == "json":
        try:
            answer = json.loads(text)
        except ValueError:
            return ""
        if isinstance(answer, dict) and isinstance(answer.get("error"), str):
            return str(answer["error"])
        return "the profile holds no samples" if isinstance(answer, dict) and answer.get("profiles") == [] else ""
    if extension == "txt" and kind != "threads":
        lines = text.strip().splitlines()
        return lines[0] if len(lines) == 1 and not re.search(r"\d\s*$", lines[0]) else ""
    return ""
