"""The kernel's side of a session's workspace: each host's record, what a sync sends (by content,
deletions too), a failed host sent its files again, and the hostile cases (a link out of the
workspace, a file rewritten while a sync reads it, too much changed at once). Hosts here are
directories written by the host's own ``workspace_host.apply``."""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
from pathlib import Path

import pytest

from fray_jupyter.iris import bundle as bundle_module
from fray_jupyter.session.outputs import SessionError
from fray_jupyter.session.workspace import SyncReport, WorkspaceSource, WorkspaceSync
from fray_jupyter.session.workspace_host import SyncReply, apply


def _workspace(root: Path) -> WorkspaceSource:
    (root / "my_exp").mkdir(parents=True, exist_ok=True)
    (root / "my_exp" / "__init__.py").write_text("")
    (root / "my_exp" / "model.py").write_text("def f():\n    return 1\n")
    (root / "my_exp" / "old.py").write_text("OLD = 1\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return WorkspaceSource.of(root)


class Hosts:
    """Host work dirs unpacked from the bundle, synced by ``apply``; ``broken`` hosts fail."""

    def __init__(self, tmp: Path, source: WorkspaceSource, count: int) -> None:
        import io
        import zipfile

        self.dirs = [tmp / f"host-{host}" for host in range(count)]
        self.broken: set[int] = set()
        self.sent: dict[int, list[str]] = {}
        for directory in self.dirs:
            directory.mkdir()
            zipfile.ZipFile(io.BytesIO(source.bundle.blob)).extractall(directory)

    def send(self, host: int, files: dict[str, bytes], deleted: list[str]) -> SyncReply:
        if host in self.broken:
            raise SessionError(f"host {host} is unreachable")
        self.sent[host] = sorted(files) + [f"-{name}" for name in deleted]
        written, removed = apply(self.dirs[host], files, deleted)
        return SyncReply(host, len(written), len(removed), ("my_exp.model",) if files else ())

    def listing(self, host: int) -> dict[str, bytes]:
        root = self.dirs[host]
        return {path.relative_to(root).as_posix(): path.read_bytes() for path in root.rglob("*") if path.is_file()}


def test_a_sync_sends_what_changed_by_content_and_deletions_to_every_host(tmp_path: Path) -> None:
    source = _workspace(tmp_path / "nb")
    hosts = Hosts(tmp_path, source, 2)
    sync = WorkspaceSync(source, 2)
    assert sync.sync(hosts.send).text() == "workspace unchanged since the last sync" and hosts.sent == {}
    model = source.root / "my_exp" / "model.py"
    os.utime(model, ns=(1, 1))  # a new timestamp, the same content: nothing to send
    assert not sync.sync(hosts.send).changed
    model.write_text("def f():\n    return 2\n")
    (source.root / "my_exp" / "old.py").unlink()
    (source.root / "my_exp" / "new.py").write_text("NEW = 1\n")
    report = sync.sync(hosts.send)
    assert report.text() == "3 files to 2 hosts (1 deleted), reloaded my_exp.model"
    assert hosts.sent == {0: ["my_exp/model.py", "my_exp/new.py", "-my_exp/old.py"]} | {
        1: ["my_exp/model.py", "my_exp/new.py", "-my_exp/old.py"]}
    expected = {name: (source.root / name).read_bytes() for name in ("my_exp/__init__.py", "my_exp/model.py",
                                                                    "my_exp/new.py")}
    assert hosts.listing(0) == hosts.listing(1) == expected


def test_a_host_that_missed_a_sync_is_named_and_gets_the_files_next_time(tmp_path: Path) -> None:
    source = _workspace(tmp_path / "nb")
    hosts = Hosts(tmp_path, source, 3)
    sync = WorkspaceSync(source, 3)
    (source.root / "my_exp" / "model.py").write_text("def f():\n    return 2\n")
    hosts.broken = {1}
    report = sync.sync(hosts.send)
    assert report.failed == {1: "host 1 is unreachable"}
    assert "  host 1 missed this sync: host 1 is unreachable" in report.text().splitlines()
    hosts.broken, hosts.sent = set(), {}
    assert sync.sync(hosts.send).hosts == (1,) and hosts.sent == {1: ["my_exp/model.py"]}
    assert hosts.listing(1) == hosts.listing(0)


def test_a_link_out_of_the_workspace_is_skipped_with_a_word(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("token")
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "creds.txt").symlink_to(secret)
    (tmp_path / "nb" / "main.py").write_text("")
    source = WorkspaceSource.of(tmp_path / "nb")
    assert source.bundle.files == ("main.py",)
    assert "skipped 1 link(s) pointing outside the workspace: creds.txt" in source.bundle.note


def test_too_much_changed_at_once_is_refused_saying_how_much(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _workspace(tmp_path / "nb")
    sync = WorkspaceSync(source, 1)
    monkeypatch.setattr("fray_jupyter.session.workspace.MAX_BUNDLE_SIZE_BYTES", 1000)
    (source.root / "data.bin").write_bytes(os.urandom(5000))
    with pytest.raises(SessionError) as raised:
        sync.sync(Hosts(tmp_path, source, 1).send)
    assert "changed for host 0, over the 0.0 MiB a sync may send" in str(raised.value)


def test_a_file_rewritten_during_syncs_arrives_whole_or_is_an_error(tmp_path: Path) -> None:
    """An editor saving a binary over and over (write beside, replace): every sync either sends one
    whole version, which the host then holds byte for byte, or says the file kept changing."""
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / ".gitignore").write_text("*.tmp\n")  # the editor's scratch file is not the workspace's
    source = _workspace(tmp_path / "nb")
    hosts = Hosts(tmp_path, source, 1)
    sync = WorkspaceSync(source, 1)
    versions = [bytes([letter]) * 2_000_000 for letter in b"ab"]
    digests = {hashlib.sha256(version).hexdigest() for version in versions}
    target = source.root / "weights.bin"
    stop = threading.Event()

    def save() -> None:
        turn = 0
        while not stop.is_set():
            (source.root / ".weights.tmp").write_bytes(versions[turn % 2])
            os.replace(source.root / ".weights.tmp", target)
            turn += 1

    target.write_bytes(versions[0])
    writer = threading.Thread(target=save)
    writer.start()
    outcomes: list[SyncReport | SessionError] = []
    try:
        for _ in range(20):
            try:
                outcomes.append(sync.sync(hosts.send))
            except SessionError as error:
                outcomes.append(error)
    finally:
        stop.set()
        writer.join()
    for outcome in outcomes:
        if isinstance(outcome, SessionError):
            assert "weights.bin" in str(outcome) and "\n" not in str(outcome)
    held = hosts.dirs[0] / "weights.bin"
    if held.exists():
        assert hashlib.sha256(held.read_bytes()).hexdigest() in digests
    sync.sync(hosts.send)  # once the saving stops, the host holds the last version exactly
    assert held.read_bytes() == target.read_bytes()


def test_a_file_that_keeps_changing_while_read_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "f.bin"
    path.write_bytes(b"x")
    marks = iter(range(100))
    monkeypatch.setattr(bundle_module, "fingerprint", lambda _: (1, next(marks), 0, 0))
    with pytest.raises(ValueError) as raised:
        bundle_module.read_marked(path)
    assert str(raised.value).startswith(f"{path} kept changing while it was being read (3 tries)")
