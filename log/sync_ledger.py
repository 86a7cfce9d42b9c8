"""What a power cut leaves on disk, recorded at every sync so tests can cut the power.

``kill -9`` only proves that the page cache survives the broker process.  A power cut (or a
kernel crash) keeps what reached the disk: of a file, the bytes it had when its last completed
``fsync``/``fdatasync`` started; of a directory, the entries (renames, replacements) as of its
last completed ``fsync``.  Every such operation in ``log/`` goes through this module.  Normally
that is all it does; while a test records (``recording()``), it also notes, per inode, the
length each sync covered, and the renames that no directory sync has covered yet.
``pull_the_plug(root)`` then turns a data directory into what the disk would hold after power
loss, and the test reopens it through the real recovery path.

Model and its simplifications: a file keeps exactly its synced length (a real disk may also
keep some unsynced pages: tests may append garbage after the cut to cover that); a rename or
replacement not covered by a sync of its directory is undone, bringing back a file it
replaced; a file created and never synced stays, empty, under its name (a real disk might also
drop the name if its directory was never synced); unlinks are not undone, and the log unlinks
through ``remove`` so that a later file reusing the inode number inherits no synced length.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

_ASIDE = ".power-cut-aside"


@dataclass
class _Rename:
    source: str
    target: str
    replaced: str | None  # a hard link to the file ``target`` named before, if any


@dataclass
class SyncLedger:
    """The durable state a power cut would leave, as the syncs so far made it."""

    synced_lengths: dict[tuple[int, int], int] = field(default_factory=dict)  # (dev, inode) -> bytes
    pending: list[_Rename] = field(default_factory=list)
    _asides: int = 0

    def aside_name(self, path: str) -> str:
        self._asides += 1
        return f"{path}{_ASIDE}{self._asides}"


_ledger: SyncLedger | None = None


@contextmanager
def recording() -> Iterator[SyncLedger]:
    """Record syncs and renames in ``log/`` (tests only; one ledger per process at a time)."""
    global _ledger
    _ledger = SyncLedger()
    try:
        yield _ledger
    finally:
        _ledger = None


def sync(fd: int, *, data_only: bool = False) -> None:
    """``fsync`` (or ``fdatasync``: data and the size, not other metadata) a file."""
    ledger = _ledger
    if ledger is None:
        (os.fdatasync if data_only else os.fsync)(fd)
        return
    before = os.fstat(fd)  # what the sync surely covers: bytes written before it started
    (os.fdatasync if data_only else os.fsync)(fd)
    ledger.synced_lengths[(before.st_dev, before.st_ino)] = before.st_size


SyncReceipt = tuple[int, int, int] | None
"""What a sync starting now will cover, for ``confirm``: (device, inode, length), or None when
no test records."""


def receipt(fd: int) -> SyncReceipt:
    """Note what an ``fdatasync`` of ``fd`` that starts after this will cover, for a sync made
    elsewhere (another process: ``broker.services.storage.sync_worker``); ``confirm`` it once it has completed."""
    if _ledger is None:
        return None
    before = os.fstat(fd)
    return before.st_dev, before.st_ino, before.st_size


def confirm(synced: SyncReceipt) -> None:
    """The sync a ``receipt`` was taken for has completed."""
    ledger = _ledger
    if ledger is not None and synced is not None:
        device, inode, length = synced
        ledger.synced_lengths[(device, inode)] = length


def sync_directory(directory: str) -> None:
    """Persist the entries (creations, renames, unlinks) of ``directory``."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    ledger = _ledger
    if ledger is not None:
        here = os.path.abspath(directory)
        ledger.pending = [r for r in ledger.pending if os.path.dirname(r.target) != here]


def replace(source: str, target: str) -> None:
    """``os.replace``; durable only once the target's directory is synced (``sync_directory``)."""
    ledger = _ledger
    if ledger is None:
        os.replace(source, target)
        return
    source, target = os.path.abspath(source), os.path.abspath(target)
    replaced = None
    if os.path.isfile(target):
        replaced = ledger.aside_name(target)
        os.link(target, replaced)
    os.replace(source, target)
    ledger.pending.append(_Rename(source, target, replaced))


def remove(path: str) -> None:
    """``os.unlink``, and the ledger forgets what was synced of the file: a file created later
    may get the same inode number, and must not inherit its synced length."""
    ledger = _ledger
    if ledger is not None:
        status = os.stat(path)
        ledger.synced_lengths.pop((status.st_dev, status.st_ino), None)
    os.unlink(path)


def pull_the_plug(root: str, ledger: SyncLedger) -> None:
    """Make ``root`` hold what a power cut right now would leave of it (see the module doc)."""
    for rename in reversed(ledger.pending):
        if os.path.lexists(rename.target) and not os.path.lexists(rename.source):
            os.rename(rename.target, rename.source)
        if rename.replaced is not None:
            os.rename(rename.replaced, rename.target)
    ledger.pending.clear()
    for directory, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            if _ASIDE in name:
                os.unlink(path)  # replaced by a rename that became durable
                continue
            status = os.stat(path)
            synced = ledger.synced_lengths.get((status.st_dev, status.st_ino), 0)
            if status.st_size > synced:
                os.truncate(path, synced)
