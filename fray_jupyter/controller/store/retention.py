"""What the embedded controller keeps on disk, and for how long (``fray-jupyter controller gc``).

Policy (each figure a controller option, or its environment variable, shown by ``controller status``):

* **Job records are kept**: state, tasks, attempts, errors and (capped) logs stay listable forever.
* **Files of finished jobs go**: a finished job's work dirs (``work/job-<n>``, with their temporary
  dirs), its output archives (``outputs/job-<n>``; each attempt's record then says UNAVAILABLE and
  why, so ``JobHandle.result()`` explains instead of failing to read a file) and its bundle zip
  (once no job that still has files uses it) are removed
  ``--retention-days`` after it finished (default 7; ``$FRAY_CONTROLLER_RETENTION_DAYS``), and
  sooner, oldest finished first, while the state dir is over ``--max-state-size`` (default 5 GiB;
  ``$FRAY_CONTROLLER_MAX_STATE_SIZE``, e.g. ``500m``). Files of a job that is still pending or
  running are never touched, so a running job alone can keep the state dir over its cap.
* **Leftovers go**: work dirs and output archives of jobs that no longer exist (replaced ones,
  once their processes have exited).
* **Logs are capped per task**: past ``--max-log-lines`` lines (default 100,000;
  ``$FRAY_CONTROLLER_MAX_LOG_LINES``) a task's further lines are dropped and its log ends with
  ``… N lines truncated`` (see ``logbuffer``).

The controller collects at start and every ``GC_INTERVAL_S`` seconds; ``controller gc`` collects
now (in the running controller, or directly on the state dir when none runs).
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

from fray_jupyter.controller.store.store import Store
from fray_jupyter.iris.proto import job_pb2

DAYS_ENV: Final[str] = "FRAY_CONTROLLER_RETENTION_DAYS"
SIZE_ENV: Final[str] = "FRAY_CONTROLLER_MAX_STATE_SIZE"
LOG_LINES_ENV: Final[str] = "FRAY_CONTROLLER_MAX_LOG_LINES"
DEFAULT_DAYS: Final[float] = 7.0
DEFAULT_MAX_BYTES: Final[int] = 5 * 2**30
DEFAULT_LOG_LINES: Final[int] = 100_000
GC_INTERVAL_S: Final[float] = 300.0
_SIZE: Final[re.Pattern[str]] = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", re.IGNORECASE)
_LOG = logging.getLogger(__name__)


def parse_size(text: str) -> int:
    """``"500m"`` → bytes (k, m, g, t are powers of 1024; a plain number is bytes); ValueError
    naming the text otherwise."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise ValueError(f"size {text!r} must be a number of bytes or like 500m, 5g")
    return int(float(match[1]) * 1024 ** " kmgt".index(match[2].lower() or " "))


@dataclass(frozen=True)
class Policy:
    """The retention figures (see the module docstring)."""

    days: float = DEFAULT_DAYS
    max_bytes: int = DEFAULT_MAX_BYTES
    log_lines: int = DEFAULT_LOG_LINES

    @classmethod
    def from_options(cls, days: float | None, max_size: str | None, log_lines: int | None,
                     environ: Mapping[str, str]) -> Policy:
        """Options win over their environment variables, which win over the defaults."""
        days_text, size_text, lines_text = environ.get(DAYS_ENV), environ.get(SIZE_ENV), environ.get(LOG_LINES_ENV)
        return cls(
            days=days if days is not None else float(days_text) if days_text else DEFAULT_DAYS,
            max_bytes=parse_size(max_size or size_text or str(DEFAULT_MAX_BYTES)),
            log_lines=log_lines if log_lines is not None else int(lines_text) if lines_text else DEFAULT_LOG_LINES,
        )


@dataclass
class Report:
    """What one collection did, and the state dir's size after it."""

    at_ms: int = 0
    jobs_cleaned: int = 0
    leftovers_removed: int = 0
    bytes_freed: int = 0
    state_bytes: int = 0
    over_cap: bool = False
    reasons: dict[str, int] = field(default_factory=dict)


def tree_bytes(path: Path) -> int:
    """Bytes of the files under ``path`` (0 when it does not exist)."""
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


class Retention:
    """Applies ``policy`` to the state dir ``root`` whose store is ``store``; ``busy_rows()``
    gives the row ids of jobs that still have processes (never touched)."""

    def __init__(self, store: Store, root: Path, policy: Policy, busy_rows: Callable[[], set[int]]) -> None:
        self.store, self.root, self.policy, self.busy_rows = store, root, policy, busy_rows
        self.last: Report | None = None

    async def collect(self) -> Report:
        """One collection by the policy; file trees are removed off the event loop."""
        report = Report(at_ms=int(time.time() * 1000))
        now_ms = report.at_ms
        cutoff = now_ms - int(self.policy.days * 86_400_000)
        live_rows = self.store.job_row_ids()
        busy = self.busy_rows()
        for kind in ("work", "outputs"):  # leftovers of jobs that no longer exist
            for directory in sorted((self.root / kind).glob("job-*")):
                number = directory.name.removeprefix("job-")
                if number.isdigit() and int(number) not in live_rows and int(number) not in busy:
                    report.bytes_freed += await asyncio.to_thread(_remove_tree, directory)
                    report.leftovers_removed += 1
        size = await asyncio.to_thread(tree_bytes, self.root)
        for job in self.store.finished_jobs_with_files():
            if job.id in busy:
                continue
            aged = (job.finished_ms or 0) <= cutoff
            if not aged and size <= self.policy.max_bytes:
                break  # oldest first: every later job is younger and the dir is under its cap
            reason = "age" if aged else "size cap"
            freed = await asyncio.to_thread(_remove_tree, self.root / "work" / f"job-{job.id}")
            freed += await asyncio.to_thread(_remove_tree, self.root / "outputs" / f"job-{job.id}")
            self._retire_archives(job.job_id, self._why_removed(reason, now_ms))
            self.store.update_job(job.job_id, cleaned_ms=now_ms)
            if job.bundle_path and not self.store.bundle_in_use(job.bundle_path):
                freed += _remove_file(Path(job.bundle_path))
            size -= freed
            report.bytes_freed += freed
            report.jobs_cleaned += 1
            report.reasons[reason] = report.reasons.get(reason, 0) + 1
        report.state_bytes = await asyncio.to_thread(tree_bytes, self.root)
        report.over_cap = report.state_bytes > self.policy.max_bytes
        if report.over_cap:
            _LOG.warning("state dir %s holds %d bytes, over its cap of %d: what is left belongs to jobs that "
                         "are still running, job records and logs", self.root, report.state_bytes,
                         self.policy.max_bytes)
        if report.jobs_cleaned or report.leftovers_removed:
            _LOG.info("retention: removed the files of %d finished job(s) and %d leftover(s), %d bytes freed",
                      report.jobs_cleaned, report.leftovers_removed, report.bytes_freed)
        self.last = report
        return report

    def _why_removed(self, reason: str, now_ms: int) -> str:
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(now_ms / 1000))
        rule = (f"files of finished jobs are kept {self.policy.days:g} days" if reason == "age" else
                f"the state dir was over its cap of {self.policy.max_bytes / 2**30:.3g} GiB")
        return (f"removed by the embedded controller's retention on {when} ({rule}; see "
                "`fray-jupyter controller status`)")

    def _retire_archives(self, job_id: str, why: str) -> None:
        """Mark each uploaded archive of ``job_id`` UNAVAILABLE with ``why`` (its file is gone)."""
        for (idx, attempt), blob in self.store.output_archives(job_id).items():
            archive = job_pb2.TaskOutputArchive.FromString(blob)
            if archive.state != job_pb2.TaskOutputArchive.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED:
                continue
            archive.state = job_pb2.TaskOutputArchive.TASK_OUTPUT_ARCHIVE_STATE_UNAVAILABLE
            archive.error = why
            self.store.set_output_archive(job_id, idx, attempt, archive.SerializeToString())

    async def run_periodically(self, interval: float = GC_INTERVAL_S) -> None:
        """Collect now and every ``interval`` seconds until cancelled; a failure is logged."""
        while True:
            try:
                await self.collect()
            except Exception:  # noqa: BLE001 - retention must never stop the controller
                _LOG.exception("retention pass failed")
            await asyncio.sleep(interval)

    def figures(self) -> dict[str, Any]:
        """The policy, the store's counts and the last collection, for ``controller status``."""
        counts = self.store.retention_counts()
        return {"policy": asdict(self.policy), **counts,
                "last_gc": asdict(self.last) if self.last is not None else None}


def _remove_tree(path: Path) -> int:
    freed = tree_bytes(path)
    shutil.rmtree(path, ignore_errors=True)
    return freed


def _remove_file(path: Path) -> int:
    try:
        size = path.stat().st_size
        path.unlink()
    except OSError:
        return 0
    return size
