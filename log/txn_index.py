"""The aborted-transaction index of one segment: ``<base offset>.txnindex``, Kafka's format.

A read_committed consumer receives, with every fetch, the aborted transactions that overlap
what it fetched (producer id, first offset) and drops those producers' batches until it meets
their abort marker.  Finding those transactions must not mean reading the log, so every abort
is recorded in the index of the segment its marker lands in.  Entries are 34 bytes, big-endian,
in marker order::

    version int16 (0) | producer_id int64 | first_offset int64 | last_offset int64 |
    last_stable_offset int64

``last_offset`` is the marker's offset; ``last_stable_offset`` is the first offset still
undecided once the abort is written (Kafka's ``lastStableOffset(completedTxn)``).  A search can
stop at the first entry whose stable offset reaches its upper bound: no transaction aborted
later can have begun below it.

Why no descriptor is kept (unlike ``.index``/``.timeindex``): aborts are rare and most
segments have no index at all (it is created with the first abort), so the file is opened
for each append or fsync and read once into memory on first use; the broker-wide descriptor
budget (``log.open_files``) is not spent on it.
"""

from __future__ import annotations

import logging
import os
import struct
from typing import NamedTuple

from log.sync_ledger import remove, sync

logger = logging.getLogger(__name__)

ENTRY = struct.Struct(">hqqqq")
_VERSION = 0


class AbortedTxn(NamedTuple):
    """One entry: the aborted transaction's data spans [first_offset, last_offset)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TxnIndex:
    """The entries of one segment's ``.txnindex`` file (which may not exist)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._entries: list[AbortedTxn] | None = None
        self._unsynced = False

    @property
    def entries(self) -> list[AbortedTxn]:
        """Every entry, read from the file on first use; a torn last entry (a crash during its
        append) is cut off, as the segment's recovery would rebuild it."""
        if self._entries is None:
            try:
                with open(self.path, "rb") as file:
                    data = file.read()
            except FileNotFoundError:
                data = b""
            whole = len(data) - len(data) % ENTRY.size
            if whole != len(data):
                logger.warning("%s: dropping a torn entry of %d bytes", self.path, len(data) - whole)
                os.truncate(self.path, whole)
            self._entries = [AbortedTxn(*fields[1:]) for fields in ENTRY.iter_unpack(data[:whole])]
        return self._entries

    def append(self, txn: AbortedTxn) -> None:
        """Record an abort (creating the file); markers come in offset order, so entries do too."""
        entries = self.entries
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise ValueError(
                f"{self.path}: abort at offset {txn.last_offset} does not follow {entries[-1].last_offset}"
            )
        self._write(ENTRY.pack(_VERSION, *txn), os.O_APPEND)
        entries.append(txn)

    def write_all(self, txns: list[AbortedTxn]) -> None:
        """Start over with ``txns`` (a segment the cleaner rewrote); with none, no file."""
        self.reset()
        if txns:
            self._write(b"".join(ENTRY.pack(_VERSION, *txn) for txn in txns), os.O_TRUNC)
            self._entries = list(txns)

    def _write(self, data: bytes, mode: int) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | mode, 0o644)
        try:
            os.write(fd, data)
        finally:
            os.close(fd)
        self._unsynced = True

    def truncate_to(self, offset: int) -> None:
        """Forget the aborts whose markers are at ``offset`` or later (the log was cut there)."""
        kept = [txn for txn in self.entries if txn.last_offset < offset]
        if len(kept) != len(self.entries):
            self.write_all(kept)

    def collect(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """Entries overlapping [fetch_offset, upper_bound_offset), and whether the search is
        complete (no later segment can hold one)."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def reset(self) -> None:
        """Drop every entry and the file (before the segment is rebuilt from its log)."""
        if os.path.exists(self.path):
            remove(self.path)
        self._entries = []
        self._unsynced = False

    def flush(self) -> None:
        """fsync what was appended since the last flush (with the segment's other files)."""
        if self._unsynced:
            self._unsynced = False
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                sync(fd)
            finally:
                os.close(fd)
