"""A task attempt's output archive as Iris makes one, and the result files fray-jupyter's callable
runner leaves in it.

Rules (restating ``iris.cluster.runtime.output_capture``):

* Files a task writes under ``$IRIS_OUTPUT_DIR`` become, when the attempt ends, one archive per
  attempt: a tar stream (PAX; uid, gid, names and mtime zeroed) compressed with zstd (level 3),
  named ``outputs.tar.zst``. Directories, regular files and symlinks are stored; other entries
  (fifos, sockets, devices) are counted as skipped.
* ``TaskAttempt.output_archive`` records it: ``state`` EMPTY (nothing written), UPLOADED (``uri``
  is an fsspec URL, ``size_bytes`` and ``sha256`` are those of the compressed file), FAILED
  (``error`` says why, e.g. ``too_large: ...``) or UNAVAILABLE (the attempt was stopped, or had
  no output dir).
* Limits, checked before anything is written: ``MAX_OUTPUT_BYTES`` (2 GiB of regular-file bytes)
  and ``MAX_OUTPUT_ENTRIES`` (10,000 entries), Iris's ``TaskOutputPolicy`` defaults.

fray-jupyter's callable runner (``iris.convert``) writes ``RESULT_FILE`` (the cloudpickled return
value) or ``ERROR_FILE`` (JSON: the exception's ``type``, ``message`` and ``traceback`` text) into
the output dir. A value whose pickle exceeds ``MAX_RESULT_BYTES`` (100 MiB) is refused by the
runner with an error naming its size: write large results to storage and return their path.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tarfile
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final, cast

from fray_jupyter.iris.proto import job_pb2

A = job_pb2.TaskOutputArchive
ARCHIVE_NAME: Final[str] = "outputs.tar.zst"
MAX_OUTPUT_BYTES: Final[int] = 2 * 1024**3
MAX_OUTPUT_ENTRIES: Final[int] = 10_000
MAX_RESULT_BYTES: Final[int] = 100 * 1024**2
RESULT_FILE: Final[str] = "_fray_result.pkl"
ERROR_FILE: Final[str] = "_fray_error.json"
RUNNER_FILES: Final[frozenset[str]] = frozenset({RESULT_FILE, ERROR_FILE})
"""The files the callable runner writes; listings of a task's own outputs leave them out."""
_ERROR_MAX_CHARS: Final[int] = 900
_SKIPPED_SAMPLE_LIMIT: Final[int] = 10


class _CaptureError(RuntimeError):
    pass


@dataclass(frozen=True)
class OutputFile:
    """One entry of an archive: its path inside the output dir, size in bytes and kind."""

    name: str
    size: int
    kind: str = "file"  # "file", "dir" or "link"


def _inventory(source: Path, max_bytes: int, max_entries: int) -> list[tuple[Path, str, int]]:
    """``(path, relative name, st_mode)`` of every entry under ``source``, sorted by name, depth first."""
    entries: list[tuple[Path, str, int]] = []
    total = 0

    def walk(directory: Path, prefix: str) -> None:
        nonlocal total
        with os.scandir(directory) as iterator:
            children = sorted(iterator, key=lambda entry: entry.name)
        for child in children:
            info = child.stat(follow_symlinks=False)
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
            if total > max_bytes:
                raise _CaptureError(f"too_large: regular-file bytes exceed {max_bytes}")
            relative = f"{prefix}{child.name}"
            entries.append((Path(child.path), relative, info.st_mode))
            if len(entries) > max_entries:
                raise _CaptureError(f"too_many_entries: entry count exceeds {max_entries}")
            if stat.S_ISDIR(info.st_mode):
                walk(Path(child.path), relative + "/")

    walk(source, "")
    return entries


def _archivable(mode: int) -> bool:
    return stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)


class _Hashing(io.RawIOBase):
    """A write-only stream that hashes and counts what passes through to ``raw``."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw, self.digest, self.size = raw, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        written = self.raw.write(data)
        self.digest.update(memoryview(data)[:written])
        self.size += written
        return written


def capture(source: Path, destination: Path, *, max_bytes: int = MAX_OUTPUT_BYTES,
            max_entries: int = MAX_OUTPUT_ENTRIES) -> job_pb2.TaskOutputArchive:
    """Archive the tree under ``source`` into ``destination`` (written to a temporary name, then
    renamed) and return the record Iris would keep. Never raises: a failure is a FAILED record."""
    import zstandard

    if not source.is_dir():
        return A(state=A.TASK_OUTPUT_ARCHIVE_STATE_UNAVAILABLE, error="output_directory_unavailable")
    partial = destination.with_name(f".{destination.name}.partial-{os.getpid()}")
    try:
        entries = _inventory(source, max_bytes, max_entries)
        skipped = [job_pb2.TaskOutputSkippedEntry(path=name[:200], reason="special_file")
                   for _, name, mode in entries if not _archivable(mode)]
        if len(skipped) == len(entries):
            return A(state=A.TASK_OUTPUT_ARCHIVE_STATE_EMPTY, skipped_count=len(skipped),
                     skipped_sample=skipped[:_SKIPPED_SAMPLE_LIMIT])
        destination.parent.mkdir(parents=True, exist_ok=True)
        with partial.open("wb") as raw:
            hashing = _Hashing(raw)
            compressor = zstandard.ZstdCompressor(level=3)
            with (compressor.stream_writer(cast(IO[bytes], hashing), closefd=False) as compressed,
                  tarfile.open(fileobj=compressed, mode="w|", format=tarfile.PAX_FORMAT) as archive):
                for path, name, mode in entries:
                    if not _archivable(mode):
                        continue
                    info = archive.gettarinfo(str(path), arcname=name)
                    info.uid = info.gid = info.mtime = 0
                    info.uname = info.gname = ""
                    if stat.S_ISREG(mode):
                        with path.open("rb") as content:
                            archive.addfile(info, content)
                    else:
                        archive.addfile(info)
        partial.rename(destination)
    except _CaptureError as error:
        return A(state=A.TASK_OUTPUT_ARCHIVE_STATE_FAILED, error=str(error))
    except Exception as error:  # noqa: BLE001 - a failed capture is recorded, never raised
        partial.unlink(missing_ok=True)
        return A(state=A.TASK_OUTPUT_ARCHIVE_STATE_FAILED, error=f"storage_error: {str(error)[:_ERROR_MAX_CHARS]}")
    return A(state=A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED, uri=destination.resolve().as_uri(),
             size_bytes=hashing.size, sha256=hashing.digest.hexdigest(),
             retention=A.TASK_OUTPUT_ARCHIVE_RETENTION_LOCAL_CLUSTER,
             skipped_count=len(skipped), skipped_sample=skipped[:_SKIPPED_SAMPLE_LIMIT])


def iter_members(data: bytes, wanted: Callable[[tarfile.TarInfo], bool] = lambda member: False,
                 ) -> Iterator[tuple[tarfile.TarInfo, bytes | None]]:
    """Each entry of an archive's bytes, with the content of the regular files ``wanted``
    accepts (None for every other entry)."""
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
    with tarfile.open(fileobj=reader, mode="r|") as archive:
        for member in archive:
            content = None
            if member.isfile() and wanted(member):
                extracted = archive.extractfile(member)
                content = extracted.read() if extracted is not None else b""
            yield member, content


def list_files(data: bytes) -> list[OutputFile]:
    """The entries of an archive's bytes, in archive order."""
    return [OutputFile(member.name, member.size if member.isfile() else 0,
                       "file" if member.isfile() else "dir" if member.isdir() else "link")
            for member, _ in iter_members(data)]


def read_files(data: bytes, names: Collection[str]) -> dict[str, bytes]:
    """The contents of the regular files named in ``names`` that the archive holds."""
    return {member.name: content for member, content in iter_members(data, lambda m: m.name in names)
            if content is not None}


def extract(data: bytes, destination: Path) -> list[Path]:
    """Unpack an archive's bytes under ``destination`` (tarfile's ``data`` filter: nothing lands
    outside it, no special files) and return the paths of its regular files."""
    import zstandard

    destination.mkdir(parents=True, exist_ok=True)
    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
    files: list[Path] = []
    with tarfile.open(fileobj=reader, mode="r|") as archive:
        for member in archive:
            archive.extract(member, destination, filter="data")
            if member.isfile():
                files.append(destination / member.name)
    return files
