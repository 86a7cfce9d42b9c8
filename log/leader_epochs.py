"""The leader epoch cache of one partition: Kafka's ``LeaderEpochFileCache``.

Every batch carries the epoch of the leader that wrote it (``partition_leader_epoch``); the cache
maps each epoch to the first offset written in it.  A follower that changed leaders asks the
new leader where its own last epoch ended (OffsetForLeaderEpoch, ``end_offset_for``) and
truncates there, so no divergent tail survives a leader change (KIP-101, KIP-279).

The file is Kafka's ``leader-epoch-checkpoint`` in the partition directory, so the data
directory stays readable by Kafka's tools::

    0            <- version
    2            <- entry count
    0 0          <- epoch start_offset, in epoch order
    3 1200

Durability: an entry is written (atomically, without fsync) when it is assigned, which
happens about once per leader change.  ``PartitionLog.flush`` makes it durable (``sync``)
before it moves the recovery point past data of that epoch; anything later is re-scanned by
recovery, which assigns the epochs of the batches it re-validates.  A missing or corrupt file
is rebuilt from the batch headers of the whole log (``rebuild``), never from records.

Threading: entries change on the broker's thread; ``sync`` runs on flush's worker thread.  A
lock keeps the two from writing the file at the same time.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable
from typing import NamedTuple

from log.checkpoint import write_atomically

logger = logging.getLogger(__name__)

LEADER_EPOCH_FILE = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1
_VERSION = 0
# A partition has one entry per leader change it saw: a file claiming millions is corrupt.
_MAX_ENTRIES = 1_000_000


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class CorruptEpochFileError(ValueError):
    """The checkpoint file does not follow Kafka's format; the cache is rebuilt from the log."""


def end_offset_for(entries: list[EpochEntry], requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
    """(epoch, end offset) as Kafka's ``LeaderEpochFileCache.endOffsetFor`` answers for ``entries``.

    - UNDEFINED requested, or newer than every entry: (-1, -1);
    - the latest epoch: it is still being written, so it ends at the log end;
    - older than the first entry: (requested, start of the first entry): that data is gone, the
      follower replicates from the leader's start;
    - otherwise the largest epoch <= requested and the start offset of the epoch after it.
    """
    undefined = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
    if requested_epoch == UNDEFINED_EPOCH or not entries:
        return undefined
    if entries[-1].epoch == requested_epoch:
        return requested_epoch, log_end_offset
    higher = next((i for i, entry in enumerate(entries) if entry.epoch > requested_epoch), None)
    if higher is None:
        return undefined
    if higher == 0:
        return requested_epoch, entries[0].start_offset
    return entries[higher - 1].epoch, entries[higher].start_offset


class LeaderEpochCache:
    """Epoch -> start offset of one partition, in epoch (and start offset) order."""

    def __init__(self, directory: str, entries: Iterable[EpochEntry] = ()) -> None:
        self.path = os.path.join(directory, LEADER_EPOCH_FILE)
        self._entries = list(entries)
        self._lock = threading.Lock()
        self._unsynced = False

    @classmethod
    def read(cls, directory: str) -> LeaderEpochCache | None:
        """The cache stored in ``directory``; None if the file is missing or corrupt (logged),
        for the caller to ``rebuild`` from the log."""
        cache = cls(directory)
        try:
            with open(cache.path, encoding="ascii") as file:
                cache._entries = parse(file.read())
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, CorruptEpochFileError) as exc:
            logger.warning("%s: rebuilding the leader epoch cache: %s", cache.path, exc)
            return None
        return cache

    # ----------------------------------------------------------------------------------------
    # Reading

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def epoch_entries(self) -> list[EpochEntry]:
        return list(self._entries)

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Where ``requested_epoch`` ended (see the module function of the same name)."""
        return end_offset_for(self._entries, requested_epoch, log_end_offset)

    # ----------------------------------------------------------------------------------------
    # Changing

    def assign(self, epoch: int, start_offset: int) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True if the cache changed.

        An epoch older than the latest is ignored (the log assigns only newer ones, as Kafka's
        UnifiedLog does); the latest again only moves its start back (Kafka's isUpdateNeeded).
        A newer epoch starting at or below an entry's start offset replaces the entries that
        would no longer be monotonic (Kafka's maybeTruncateNonMonotonicEntries).
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        with self._lock:
            if self._entries:
                latest = self._entries[-1]
                if epoch < latest.epoch or (epoch == latest.epoch and start_offset >= latest.start_offset):
                    return False
            kept = [e for e in self._entries if e.epoch < epoch and e.start_offset < start_offset]
            if len(kept) + 1 < len(self._entries):
                logger.warning(
                    "%s: epoch %d at offset %d replaces entries %s",
                    self.path,
                    epoch,
                    start_offset,
                    self._entries[len(kept) :],
                )
            self._replace([*kept, EpochEntry(epoch, start_offset)])
        return True

    def assign_if_newer(self, epoch: int, start_offset: int) -> None:
        """``assign`` ``epoch`` only when it is newer than the latest: Kafka's rule for each batch
        a log appends (UnifiedLog) and each one recovery re-reads (LogSegment.recover), which
        the live log and ``log.loader`` share through this."""
        if epoch > self.latest_epoch:
            self.assign(epoch, start_offset)

    def truncate_from_end(self, offset: int) -> None:
        """Forget the epochs starting at or after ``offset`` (the log was truncated there)."""
        with self._lock:
            kept = [e for e in self._entries if e.start_offset < offset]
            if len(kept) != len(self._entries):
                self._replace(kept)

    def truncate_from_start(self, offset: int) -> None:
        """The log now starts at ``offset``: the epoch holding it starts there, older ones go
        (Kafka's truncateFromStart)."""
        with self._lock:
            removed = [e for e in self._entries if e.start_offset <= offset]
            if removed and (len(removed) > 1 or removed[0].start_offset != offset):
                rest = self._entries[len(removed) :]
                self._replace([EpochEntry(removed[-1].epoch, offset), *rest])

    def clear(self) -> None:
        """Forget every epoch (the log was emptied: Kafka's clearAndFlush)."""
        with self._lock:
            if self._entries:
                self._replace([])

    # ----------------------------------------------------------------------------------------
    # File

    def _replace(self, entries: list[EpochEntry]) -> None:
        """Write ``entries`` to the file now, without fsync (``sync`` does that), and only then
        adopt them: if the write fails (a full disk) the cache still says what the file says,
        so a retried change is written, not skipped as already made.  The lock is held."""
        write_atomically(self.path, format_entries(entries), durable=False)
        self._entries = entries
        self._unsynced = True

    def write(self, *, durable: bool) -> None:
        """Write the file as it stands (a rebuilt cache), durably if asked."""
        with self._lock:
            write_atomically(self.path, format_entries(self._entries), durable=durable)
            self._unsynced = not durable

    def sync(self) -> None:
        """Make the entries durable if a change was not yet (worker-thread safe)."""
        with self._lock:
            if self._unsynced:
                write_atomically(self.path, format_entries(self._entries), durable=True)
                self._unsynced = False


def format_entries(entries: list[EpochEntry]) -> bytes:
    lines = [str(_VERSION), str(len(entries)), *(f"{e.epoch} {e.start_offset}" for e in entries)]
    return ("\n".join(lines) + "\n").encode("ascii")


def parse(text: str) -> list[EpochEntry]:
    """Entries of a checkpoint file; ``CorruptEpochFileError`` unless it is exactly Kafka's
    format with epochs and start offsets increasing."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    try:
        if len(lines) < 2 or int(lines[0]) != _VERSION:
            raise CorruptEpochFileError(f"expected version {_VERSION}")
        count = int(lines[1])
        if not 0 <= count <= _MAX_ENTRIES or count != len(lines) - 2:
            raise CorruptEpochFileError(f"expected {count} entries, found {len(lines) - 2}")
        entries = []
        for line in lines[2:]:
            epoch, start = line.split(" ")
            entries.append(EpochEntry(int(epoch), int(start)))
    except ValueError as exc:
        raise CorruptEpochFileError(str(exc)) from exc
    for before, after in zip(entries, entries[1:], strict=False):
        if after.epoch <= before.epoch or after.start_offset <= before.start_offset:
            raise CorruptEpochFileError(f"entry {after} does not follow {before}")
    if entries and (entries[0].epoch < 0 or entries[0].start_offset < 0):
        raise CorruptEpochFileError(f"negative entry {entries[0]}")
    return entries
