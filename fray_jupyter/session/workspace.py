"""The kernel's side of a session's workspace: what it shipped, and what each host has since.

Rules:

* A session's workspace is a directory bundled by ``iris.bundle`` (its rules: git-listed files,
  Iris's exclusions, ``--include`` / ``--exclude``, links out of it skipped, the 25 MiB cap) and
  sent as the job's bundle, unpacked into every host's work dir before its first cell.
* **What each host has** is kept per host as path → sha256, starting from the bundle's own
  hashes. A sync lists the directory again by the same rules and sends each host the files whose
  content differs from what that host has (by hash, never by timestamp) and the names of files it
  has that are gone; a host then has exactly the listing. A file's hash is read again only when
  its size, mtime, ctime or inode changed since it was last hashed (as git decides what to look
  at), so the check of an unchanged workspace reads no file.
* A host whose sync fails keeps its record except for the files that sync touched, which are
  marked unknown, so the next sync sends them again; the failure names the host and why.
* What one sync sends to a host is capped like the bundle (``MAX_BUNDLE_SIZE_BYTES``); more is a
  ``SessionError`` saying how much changed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from fray_jupyter.iris.bundle import (
    MAX_BUNDLE_SIZE_BYTES,
    Fingerprint,
    WorkspaceBundle,
    create_workspace_zip,
    fingerprint,
    mib,
    read_marked,
    workspace_listing,
)
from fray_jupyter.session.outputs import SessionError
from fray_jupyter.session.workspace_host import SyncReply

UNKNOWN: Final = "?"
"""The hash recorded for a file a failed sync may or may not have written on a host."""
Send = Callable[[int, dict[str, bytes], list[str]], SyncReply]


@dataclass(frozen=True)
class SyncReport:
    """One sync: files sent and deleted, hosts reached, modules reloaded (on any host), those not
    reloaded with why, and the hosts that failed with why."""

    sent: tuple[str, ...]
    deleted: tuple[str, ...]
    hosts: tuple[int, ...]
    reloaded: tuple[str, ...] = ()
    not_reloaded: tuple[tuple[str, str], ...] = ()
    failed: Mapping[int, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        """Whether anything was sent or deleted."""
        return bool(self.sent or self.deleted)

    def text(self) -> str:
        """In words: ``3 files to 4 hosts (1 deleted), reloaded my_exp.model``, then a line for
        each module not reloaded and each host that failed."""
        if not self.changed and not self.failed:
            return "workspace unchanged since the last sync"
        count = len(set(self.sent) | set(self.deleted))
        head = f"{count} file{'s' * (count != 1)} to {len(self.hosts)} host{'s' * (len(self.hosts) != 1)}"
        if self.deleted:
            head += f" ({len(self.deleted)} deleted)"
        head += f", reloaded {', '.join(self.reloaded)}" if self.reloaded else ", no loaded module to reload"
        lines = [head]
        lines += [f"  not reloaded: {name}: {why}" for name, why in self.not_reloaded]
        lines += [f"  host {host} missed this sync: {why}" for host, why in sorted(self.failed.items())]
        return "\n".join(lines)


@dataclass(frozen=True)
class WorkspaceSource:
    """The directory a session ships, the caller's include globs and exclude pattern, and the
    bundle its job carries."""

    root: Path
    bundle: WorkspaceBundle
    include: tuple[str, ...] = ()
    exclude: re.Pattern[str] | None = None

    @classmethod
    def of(cls, directory: str | Path, *, include: Sequence[str] = (),
           exclude: re.Pattern[str] | None = None) -> WorkspaceSource:
        """Bundle ``directory`` (``iris.bundle`` rules); its ``ValueError``s as they are."""
        bundle = create_workspace_zip(directory, include=include, exclude=exclude)
        return cls(Path(directory).expanduser().resolve(), bundle, tuple(include), exclude)


class WorkspaceSync:
    """Each host's record of the workspace, and the syncs that keep it current (module rules)."""

    def __init__(self, source: WorkspaceSource, hosts: int) -> None:
        self.source = source
        self.hosts = hosts
        self._had: list[dict[str, str]] = []
        bundle = source.bundle
        self._hashed: dict[str, tuple[Fingerprint, str]] = {
            name: (bundle.marks[name], digest) for name, digest in bundle.hashes.items() if name in bundle.marks}
        self.reset()

    def reset(self) -> None:
        """Every host has the bundle again (a new job: a start, a restart)."""
        self._had = [dict(self.source.bundle.hashes) for _ in range(self.hosts)]

    def scan(self) -> dict[str, str]:
        """The workspace now, path → sha256 (hashing only files whose fingerprint changed)."""
        root = self.source.root
        if not root.is_dir():
            raise SessionError(f"the session's workspace {root} is no longer a directory")
        try:
            listing, _ = workspace_listing(root, include=self.source.include, exclude=self.source.exclude)
        except ValueError as error:
            raise SessionError(str(error)) from None
        now = {}
        for name, status in listing.items():
            known = self._hashed.get(name)
            if known is None or known[0] != fingerprint(status):
                try:
                    self._hash(name)
                except FileNotFoundError:
                    continue  # deleted while it was read: gone
            now[name] = self._hashed[name][1]
        return now

    def _hash(self, name: str) -> bytes:
        path = self.source.root / name
        try:
            data, mark = read_marked(path)
        except ValueError as error:
            raise SessionError(str(error)) from None
        except FileNotFoundError:
            raise
        except OSError as error:
            raise SessionError(f"cannot read {path}: {error.strerror or error}") from None
        self._hashed[name] = (mark, hashlib.sha256(data).hexdigest())
        return data

    def _content(self, name: str, wanted: str) -> bytes:
        """``name``'s bytes, which must still hash to ``wanted`` (else it changed during the sync)."""
        try:
            data = self._hash(name)
        except FileNotFoundError:
            raise SessionError(f"{self.source.root / name} was deleted while the sync was being made: "
                               "sync again") from None
        if self._hashed[name][1] != wanted:
            raise SessionError(f"{self.source.root / name} changed while the sync was being made: sync again")
        return data

    def sync(self, send: Send) -> SyncReport:
        """Send every host what it lacks (module rules) through ``send(host, files, deleted)``,
        one thread per host; the report. Nothing is sent to a host that is current."""
        now = self.scan()
        plans = {host: ([name for name, digest in now.items() if had.get(name) != digest],
                        sorted(name for name in had if name not in now))
                 for host, had in enumerate(self._had)}
        needed = sorted({name for changed, _ in plans.values() for name in changed})
        contents = {name: self._content(name, now[name]) for name in needed}
        for host, (changed, _) in plans.items():
            size = sum(len(contents[name]) for name in changed)
            if size > MAX_BUNDLE_SIZE_BYTES:
                raise SessionError(f"{mib(size)} of the workspace changed for host {host}, over the "
                                   f"{mib(MAX_BUNDLE_SIZE_BYTES)} a sync may send: restart the session to ship it")
        busy = {host: plan for host, plan in plans.items() if plan[0] or plan[1]}
        if not busy:
            return SyncReport((), (), tuple(range(self.hosts)))
        replies: dict[int, SyncReply] = {}
        failed: dict[int, str] = {}
        with ThreadPoolExecutor(max_workers=len(busy)) as pool:
            futures = {host: pool.submit(send, host, {name: contents[name] for name in changed}, deleted)
                       for host, (changed, deleted) in busy.items()}
            for host, future in futures.items():
                changed, deleted = busy[host]
                try:
                    replies[host] = future.result()
                except Exception as error:  # noqa: BLE001 - any failure is that host's, said with its reason
                    failed[host] = " ".join(str(error).split()) or type(error).__name__
                    self._had[host].update({name: UNKNOWN for name in (*changed, *deleted)})
                else:
                    self._had[host] = dict(now)
        reloaded = sorted({name for reply in replies.values() for name in reply.reloaded})
        not_reloaded = sorted({item for reply in replies.values() for item in reply.not_reloaded})
        return SyncReport(tuple(sorted({n for changed, _ in busy.values() for n in changed})),
                          tuple(sorted({n for _, deleted in busy.values() for n in deleted})),
                          tuple(sorted(busy)), tuple(reloaded), tuple(not_reloaded), failed)
