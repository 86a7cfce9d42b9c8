"""Idempotent and transactional producer state of one partition, with Apache Kafka's
ProducerStateManager semantics.

Per producer id the partition remembers the epoch and the last five batches written
(first/last sequence, first/last offset, timestamp).  That is what lets a retried batch be
acknowledged with its *original* offsets instead of being written twice, and what detects gaps
(OUT_OF_ORDER_SEQUENCE_NUMBER) and zombies (INVALID_PRODUCER_EPOCH).  The rules, as Kafka's
ProducerAppendInfo applies them to client appends:

- an epoch below the known one is fenced;
- a new epoch must start at sequence 0, unless the producer is unknown (no state: lenient, so
  producers survive the broker forgetting them, e.g. after retention deleted their batches);
- within an epoch the next batch must start at last sequence + 1, wrapping int32 max -> 0;
- a batch whose (epoch, first seq, last seq) equals one of the five retained batches is a
  duplicate;
- a batch without a sequence (-1) is one a coordinator wrote for the producer (TxnOffsetCommit
  in ``__consumer_offsets``, Kafka's AppendOrigin.COORDINATOR): only its epoch is checked, and
  it is never taken for a duplicate.

Transactions: a transactional batch from a producer with no open transaction opens one at its
first offset (``current_txn_first_offset``); a non-transactional batch while one is open is
INVALID_TXN_STATE; a transaction marker (control batch) closes it.  A marker is refused when
its producer epoch is below the known one (INVALID_PRODUCER_EPOCH: Kafka's check for
transaction versions 0 and 1, which a version 2 marker, written with the bumped epoch, passes
too) or its coordinator epoch is below the one last seen (TRANSACTION_COORDINATOR_FENCED).
A marker with a new epoch starts that epoch, as in Kafka, so the next transaction's first
batch starts at sequence 0.  The open transactions' first offsets bound the last stable
offset (``first_open_offset``); producers with an open transaction never expire.

State survives restarts as snapshot files ``<offset>.snapshot`` (the state after every batch
below ``offset``), rebuilt forward from the log after the newest snapshot: data batches from
their headers, markers from their one record.  Unlike Kafka's format, snapshots keep all five
batches per producer, so duplicates are still recognised right after a restart.

Snapshot file (big-endian); version 1 files (written before transactions) lack the two
transaction fields, which then read as -1::

    magic b"ODPS" | version int16 (2) | crc32c uint32 of everything after it | producers int32 |
    per producer: producer_id int64 | epoch int16 | last_timestamp int64 |
        coordinator_epoch int32 | current_txn_first_offset int64 | batches int8 |
        per batch: first_seq int32 | last_seq int32 | first_offset int64 | last_offset int64 |
                   timestamp int64
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from crc32c import crc32c

from log.errors import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
)
from wire.control_batch import EndTxnMarker
from wire.primitives import INT32_MAX
from wire.record_batch import BatchInfo

BATCHES_TO_RETAIN = 5
NO_EPOCH = -1
NO_OFFSET = -1
NO_SEQUENCE = -1

_MAGIC = b"ODPS"
_VERSION = 2
_FILE_HEADER = struct.Struct(">4shIi")
_PRODUCERS = {1: struct.Struct(">qhqb"), 2: struct.Struct(">qhqiqb")}
_BATCH = struct.Struct(">iiqqq")


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


class CompletedTxn(NamedTuple):
    """A transaction a marker ended in this partition: its data spans [first_offset,
    last_offset), the marker is at ``last_offset`` (Kafka's CompletedTxn)."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_EPOCH
    last_timestamp: int = -1
    batches: list[BatchMetadata] = field(default_factory=list)
    coordinator_epoch: int = -1
    current_txn_first_offset: int = NO_OFFSET  # first offset of the open transaction, if any

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def copy(self) -> ProducerEntry:
        return ProducerEntry(
            self.producer_id,
            self.epoch,
            self.last_timestamp,
            list(self.batches),
            self.coordinator_epoch,
            self.current_txn_first_offset,
        )

    def find_duplicate(self, batch: BatchInfo) -> BatchMetadata | None:
        if batch.producer_epoch != self.epoch or batch.base_sequence == NO_SEQUENCE:
            return None
        last_seq = batch.last_sequence
        for meta in self.batches:
            if meta.first_seq == batch.base_sequence and meta.last_seq == last_seq:
                return meta
        return None

    def _set_epoch(self, epoch: int) -> None:
        """A new epoch forgets the old one's batches (its sequences start over)."""
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()

    def add_batch(self, epoch: int, meta: BatchMetadata) -> None:
        self._set_epoch(epoch)
        self.last_timestamp = meta.timestamp
        if meta.first_seq == NO_SEQUENCE:
            return  # a coordinator's write: nothing to deduplicate it against
        if len(self.batches) == BATCHES_TO_RETAIN:
            del self.batches[0]
        self.batches.append(meta)
        self.last_timestamp = meta.timestamp

    def join_txn(self, first_offset: int) -> None:
        """A transactional batch at ``first_offset``: it opens a transaction unless one is open."""
        if self.current_txn_first_offset == NO_OFFSET:
            self.current_txn_first_offset = first_offset

    def end_txn(self, epoch: int, marker: EndTxnMarker, offset: int, timestamp: int) -> CompletedTxn | None:
        """Close the open transaction with the marker at ``offset``; the transaction it ended,
        None when none was open (the marker is still written: harmless, as in Kafka)."""
        completed = None
        if self.current_txn_first_offset != NO_OFFSET:
            completed = CompletedTxn(
                self.producer_id, self.current_txn_first_offset, offset, not marker.is_commit
            )
        self._set_epoch(epoch)
        self.coordinator_epoch = marker.coordinator_epoch
        self.current_txn_first_offset = NO_OFFSET
        self.last_timestamp = timestamp
        return completed


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class PlacedBatch(NamedTuple):
    """A batch header together with the offsets and timestamp it gets (or got) in the log."""

    batch: BatchInfo
    first_offset: int
    last_offset: int
    timestamp: int


class ProducerStateManager:
    """Producer id -> ``ProducerEntry`` for one partition, plus its open transactions."""

    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}
        # Producer id -> first offset of its open transaction: the last stable offset needs the
        # smallest on every fetch, which must not cost a walk over every idempotent producer.
        self._open_txns: dict[int, int] = {}

    def find_duplicate(self, batch: BatchInfo) -> BatchMetadata | None:
        """The retained batch this one repeats (same epoch and sequence range), if any."""
        entry = self.entries.get(batch.producer_id)
        return entry.find_duplicate(batch) if entry is not None else None

    def validate(self, placed: Iterable[PlacedBatch]) -> dict[int, ProducerEntry]:
        """Check client batches against the state; return the updated entries, unapplied.

        Nothing changes until ``apply``: the caller writes the batches first, so a failed write
        leaves the state untouched.
        """
        updated: dict[int, ProducerEntry] = {}
        for item in placed:
            batch = item.batch
            pid = batch.producer_id
            if pid < 0:
                continue
            entry = updated.get(pid)
            if entry is None:
                current = self.entries.get(pid)
                entry = updated[pid] = current.copy() if current is not None else ProducerEntry(pid)
            epoch, first_seq = batch.producer_epoch, batch.base_sequence
            if epoch < entry.epoch:
                raise InvalidProducerEpochError(
                    f"producer {pid} wrote with epoch {epoch}, older than the current epoch {entry.epoch}"
                )
            if first_seq == NO_SEQUENCE:
                pass  # written by a coordinator for the producer (TxnOffsetCommit): no sequence
            elif epoch != entry.epoch:
                if first_seq != 0 and entry.epoch != NO_EPOCH:
                    raise OutOfOrderSequenceError(
                        f"producer {pid} started epoch {epoch} at sequence {first_seq}, expected 0"
                    )
            elif not _in_sequence(entry.last_seq, first_seq):
                raise OutOfOrderSequenceError(
                    f"producer {pid} epoch {epoch}: sequence {first_seq} does not follow {entry.last_seq}"
                )
            if batch.is_transactional:
                entry.join_txn(item.first_offset)
            elif entry.current_txn_first_offset != NO_OFFSET:
                raise InvalidTxnStateError(
                    f"producer {pid} wrote a non-transactional batch at offset {item.first_offset} "
                    f"while its transaction from offset {entry.current_txn_first_offset} is open"
                )
            entry.add_batch(epoch, _metadata(item))
        return updated

    def validate_marker(
        self, pid: int, epoch: int, marker: EndTxnMarker, offset: int, timestamp: int
    ) -> tuple[dict[int, ProducerEntry], CompletedTxn | None]:
        """Check a transaction marker about to be written at ``offset``: the updated entry
        (unapplied, for ``apply``) and the transaction it ends, if one is open."""
        current = self.entries.get(pid)
        entry = current.copy() if current is not None else ProducerEntry(pid)
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"transaction marker for producer {pid} has epoch {epoch}, older than the current epoch {entry.epoch}"
            )
        if marker.coordinator_epoch < entry.coordinator_epoch:
            raise TransactionCoordinatorFencedError(
                f"transaction marker for producer {pid} comes from coordinator epoch "
                f"{marker.coordinator_epoch}, older than {entry.coordinator_epoch}"
            )
        return {pid: entry}, entry.end_txn(epoch, marker, offset, timestamp)

    def apply(self, updated: dict[int, ProducerEntry]) -> None:
        self.entries.update(updated)
        for pid, entry in updated.items():
            if entry.current_txn_first_offset != NO_OFFSET or self._open_txns:
                self._track_txn(pid, entry)

    def _track_txn(self, pid: int, entry: ProducerEntry) -> None:
        if entry.current_txn_first_offset != NO_OFFSET:
            self._open_txns[pid] = entry.current_txn_first_offset
        else:
            self._open_txns.pop(pid, None)

    def replay(self, placed: PlacedBatch, marker: EndTxnMarker | None = None) -> CompletedTxn | None:
        """Rebuild from a batch already in the log: no validation, the log is the truth.

        A control batch needs its ``marker`` (None for one compaction emptied, which changes
        nothing, as in Kafka); returns the transaction it ended.
        """
        batch = placed.batch
        pid = batch.producer_id
        if pid < 0 or (batch.is_control and marker is None):
            return None
        entry = self.entries.get(pid)
        if entry is None:
            entry = self.entries[pid] = ProducerEntry(pid)
        completed = None
        if batch.is_control and marker is not None:
            completed = entry.end_txn(batch.producer_epoch, marker, placed.first_offset, placed.timestamp)
        else:
            entry.add_batch(batch.producer_epoch, _metadata(placed))
            if batch.is_transactional:
                entry.join_txn(placed.first_offset)
        self._track_txn(pid, entry)
        return completed

    def first_open_offset(self, excluding: int | None = None) -> int:
        """The first offset of the earliest open transaction (-1 if none), not counting
        producer ``excluding``'s (what an abort marker records as the stable offset after it)."""
        if not self._open_txns:  # every fetch asks: the common case costs one test
            return NO_OFFSET
        return min((o for pid, o in self._open_txns.items() if pid != excluding), default=NO_OFFSET)

    def remove_expired(self, now_ms: int, expiration_ms: int) -> None:
        """Forget producers idle for ``producer.id.expiration.ms`` (Kafka's default is one day);
        never one whose transaction is open, which would leave the last stable offset stuck."""
        for pid in [
            pid
            for pid, e in self.entries.items()
            if now_ms - e.last_timestamp >= expiration_ms and e.current_txn_first_offset == NO_OFFSET
        ]:
            del self.entries[pid]

    # ----------------------------------------------------------------------------------------
    # Snapshots

    def to_snapshot(self) -> bytes:
        body = bytearray()
        producer = _PRODUCERS[_VERSION]
        for entry in self.entries.values():
            body += producer.pack(
                entry.producer_id,
                entry.epoch,
                entry.last_timestamp,
                entry.coordinator_epoch,
                entry.current_txn_first_offset,
                len(entry.batches),
            )
            for meta in entry.batches:
                body += _BATCH.pack(*meta)
        count = struct.pack(">i", len(self.entries))
        checksum = crc32c(count + body)
        return _FILE_HEADER.pack(_MAGIC, _VERSION, checksum, len(self.entries)) + body

    @classmethod
    def from_snapshot(cls, data: bytes) -> ProducerStateManager:
        """Parse a snapshot of either version; ``ValueError`` if it is damaged (the caller
        falls back to replay)."""
        if len(data) < _FILE_HEADER.size:
            raise ValueError("snapshot is too short")
        magic, version, checksum, count = _FILE_HEADER.unpack_from(data, 0)
        producer = _PRODUCERS.get(version)
        if magic != _MAGIC or producer is None:
            raise ValueError("not an Odradek producer state snapshot")
        if crc32c(data[_FILE_HEADER.size - 4 :]) != checksum:
            raise ValueError("snapshot checksum mismatch")
        state = cls()
        position = _FILE_HEADER.size
        try:
            for _ in range(count):
                *fields, batches = producer.unpack_from(data, position)
                position += producer.size
                entry = ProducerEntry(*fields[:3], [], *fields[3:])
                for _ in range(batches):
                    entry.batches.append(BatchMetadata(*_BATCH.unpack_from(data, position)))
                    position += _BATCH.size
                state.entries[entry.producer_id] = entry
                state._track_txn(entry.producer_id, entry)
        except struct.error as exc:
            raise ValueError(f"snapshot is truncated: {exc}") from exc
        if position != len(data):
            raise ValueError("snapshot has trailing bytes")
        return state


def _metadata(placed: PlacedBatch) -> BatchMetadata:
    batch = placed.batch
    return BatchMetadata(
        batch.base_sequence, batch.last_sequence, placed.first_offset, placed.last_offset, placed.timestamp
    )
