"""Per-attempt output archives: the format matches Iris's own capture (read back by Iris's reader
and ours alike), limits fail the capture instead of truncating it, and reading an archive checks
what the controller recorded."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import threading
from pathlib import Path

import pytest
import zstandard

from fray_jupyter.client.results import ResultUnavailable, read_archive
from fray_jupyter.iris import outputs
from fray_jupyter.iris.proto import job_pb2

A = job_pb2.TaskOutputArchive


def _tree(root: Path) -> Path:
    (root / "plots").mkdir(parents=True)
    (root / "metrics.json").write_text('{"loss": 0.5}')
    (root / "plots" / "curve.svg").write_text("<svg/>")
    (root / "latest").symlink_to("metrics.json")
    return root


def test_capture_writes_a_zstd_tar_with_size_and_sha256(tmp_path: Path) -> None:
    destination = tmp_path / "archives" / "0" / "uid" / outputs.ARCHIVE_NAME
    record = outputs.capture(_tree(tmp_path / "out"), destination)
    assert record.state == A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED, record
    assert record.uri == destination.as_uri()
    data = destination.read_bytes()
    assert record.size_bytes == len(data) and record.sha256 == hashlib.sha256(data).hexdigest()
    assert [(f.name, f.size, f.kind) for f in outputs.list_files(data)] == [
        ("latest", 0, "link"), ("metrics.json", 13, "file"), ("plots", 0, "dir"), ("plots/curve.svg", 6, "file")]
    assert outputs.read_files(data, {"plots/curve.svg"}) == {"plots/curve.svg": b"<svg/>"}
    with tarfile.open(fileobj=zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)), mode="r|") as tar:
        assert {(m.uid, m.gid, m.mtime, m.uname) for m in tar} == {(0, 0, 0, "")}
    assert not [p for p in destination.parent.iterdir() if p.name != outputs.ARCHIVE_NAME]


def test_our_capture_matches_iris_capture_byte_for_byte(tmp_path: Path) -> None:
    from iris.cluster.runtime import output_capture as capture_module
    from iris.rpc import job_pb2 as iris_job_pb2  # type: ignore[import-untyped]
    from rigging.filesystem.storage_path import StoragePath  # type: ignore[import-untyped]
    from rigging.timing import Deadline, Duration  # type: ignore[import-untyped]

    source = _tree(tmp_path / "out")
    ours = outputs.capture(source, tmp_path / "ours" / outputs.ARCHIVE_NAME)
    theirs = capture_module.capture_task_outputs(
        source,
        capture_module.ResolvedOutputDestination(
            StoragePath((tmp_path / "theirs" / outputs.ARCHIVE_NAME).as_uri()),
            iris_job_pb2.TaskOutputArchive.TASK_OUTPUT_ARCHIVE_RETENTION_LOCAL_CLUSTER),
        capture_module.TaskOutputLimits(outputs.MAX_OUTPUT_BYTES, outputs.MAX_OUTPUT_ENTRIES),
        Deadline.from_now(Duration.from_seconds(30)), threading.Event())
    assert (ours.state, ours.size_bytes, ours.sha256) == (theirs.state, theirs.size_bytes, theirs.sha256)


def test_empty_missing_and_special_only_dirs(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert outputs.capture(tmp_path / "empty", tmp_path / "a.tar.zst").state == A.TASK_OUTPUT_ARCHIVE_STATE_EMPTY
    missing = outputs.capture(tmp_path / "nope", tmp_path / "b.tar.zst")
    assert (missing.state, missing.error) == (A.TASK_OUTPUT_ARCHIVE_STATE_UNAVAILABLE, "output_directory_unavailable")
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "pipe")
    record = outputs.capture(tmp_path / "fifo", tmp_path / "c.tar.zst")
    assert (record.state, record.skipped_count) == (A.TASK_OUTPUT_ARCHIVE_STATE_EMPTY, 1)
    assert record.skipped_sample[0].path == "pipe" and not (tmp_path / "c.tar.zst").exists()


def test_limits_fail_the_capture_and_write_nothing(tmp_path: Path) -> None:
    source = _tree(tmp_path / "out")
    big = outputs.capture(source, tmp_path / "big.tar.zst", max_bytes=10)
    assert big.state == A.TASK_OUTPUT_ARCHIVE_STATE_FAILED and big.error.startswith("too_large")
    many = outputs.capture(source, tmp_path / "many.tar.zst", max_entries=2)
    assert many.state == A.TASK_OUTPUT_ARCHIVE_STATE_FAILED and many.error.startswith("too_many_entries")
    assert not list(tmp_path.glob("*.tar.zst"))


def test_extract_keeps_everything_under_the_destination(tmp_path: Path) -> None:
    record = outputs.capture(_tree(tmp_path / "out"), tmp_path / "a" / outputs.ARCHIVE_NAME)
    files = outputs.extract(read_archive(record), tmp_path / "x")
    assert sorted(p.relative_to(tmp_path / "x").as_posix() for p in files) == ["metrics.json", "plots/curve.svg"]
    assert (tmp_path / "x" / "latest").resolve() == (tmp_path / "x" / "metrics.json").resolve()


def test_reading_checks_size_and_sha256(tmp_path: Path) -> None:
    record = outputs.capture(_tree(tmp_path / "out"), tmp_path / "a" / outputs.ARCHIVE_NAME)
    assert read_archive(record) == Path(tmp_path / "a" / outputs.ARCHIVE_NAME).read_bytes()
    wrong = A(); wrong.CopyFrom(record); wrong.sha256 = "0" * 64
    with pytest.raises(ResultUnavailable, match="sha256"):
        read_archive(wrong)
    gone = A(state=A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED, uri=(tmp_path / "gone.tar.zst").as_uri())
    with pytest.raises(ResultUnavailable, match="cannot read the output archive .*gone.tar.zst"):
        read_archive(gone)


def test_a_url_whose_filesystem_is_not_installed_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import fsspec  # type: ignore[import-untyped]

    def missing(*_: object, **__: object) -> None:
        raise ImportError("Install gcsfs to access Google Storage")

    monkeypatch.setattr(fsspec, "open", missing)
    archive = A(state=A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED, uri="gs://bucket/iris/task-outputs/x/outputs.tar.zst")
    with pytest.raises(ResultUnavailable) as caught:
        read_archive(archive)
    assert str(caught.value) == ("reading task outputs at gs://bucket/iris/task-outputs/x/outputs.tar.zst "
                                 "needs gcsfs: pip install gcsfs")
    monkeypatch.setitem(__import__("sys").modules, "fsspec", None)
    with pytest.raises(ResultUnavailable, match="needs fsspec and s3fs: pip install fsspec s3fs"):
        read_archive(A(state=A.TASK_OUTPUT_ARCHIVE_STATE_UPLOADED, uri="s3://b/k"))


def test_other_fsspec_urls_are_read(tmp_path: Path) -> None:
    import fsspec
    record = outputs.capture(_tree(tmp_path / "out"), tmp_path / "a" / outputs.ARCHIVE_NAME)
    with fsspec.open("memory://fray/outputs.tar.zst", "wb") as stream:
        stream.write(read_archive(record))
    moved = A(); moved.CopyFrom(record); moved.uri = "memory://fray/outputs.tar.zst"
    assert read_archive(moved) == read_archive(record)
