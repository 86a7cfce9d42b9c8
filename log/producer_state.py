"""Idempotent-producer state of one partition, with Apache Kafka's ProducerStateManager semantics.

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
  duplicate.

State survives restarts as snapshot files ``<offset>.snapshot`` (the state after every batch
below ``offset``), rebuilt forward from batch headers of the log after the newest snapshot.
Unlike Kafka's format, snapshots keep all five batches per producer, so duplicates are still
recognised right after a restart.

Snapshot file (big-endian)::

    magic b"ODPS" | version int16 (1) | crc32c uint32 of everything after it | producers int32 |
    per producer: producer_id int64 | epoch int16 | last_timestamp int64 | batches int8 |
        per batch: first_seq int32 | last_seq int32 | first_offset int64 | last_offset int64 |
                   timestamp int64
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from crc32c import crc32c

from log.errors import InvalidProducerEpochError, OutOfOrderSequenceError
from wire.record_batch import INT32_MAX, BatchInfo

BATCHES_TO_RETAIN = 5
NO_EPOCH = -1

_MAGIC = b"ODPS"
_VERSION = 1
_FILE_HEADER = struct.Struct(">4shIi")
_PRODUCER = struct.Struct(">qhqb")
_BATCH = struct.Struct(">iiqqq")


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_EPOCH
    last_timestamp: int = -1
    batches: list[BatchMetadata] = field(default_factory=list)

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    def copy(self) -> ProducerEntry:
        return ProducerEntry(self.producer_id, self.epoch, self.last_timestamp, list(self.batches))

    def find_duplicate(self, batch: BatchInfo) -> BatchMetadata | None:
        if batch.producer_epoch != self.epoch:
            return None
        last_seq = batch.last_sequence
        for meta in self.batches:
            if meta.first_seq == batch.base_sequence and meta.last_seq == last_seq:
                return meta
        return None

    def add_batch(self, epoch: int, meta: BatchMetadata) -> None:
        if epoch != self.epoch:
            self.epoch = epoch
            self.batches.clear()
        if len(self.batches) == BATCHES_TO_RETAIN:
            del self.batches[0]
        self.batches.append(meta)
        self.last_timestamp = meta.timestamp


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class PlacedBatch(NamedTuple):
    """A batch header together with the offsets and timestamp it gets (or got) in the log."""

    batch: BatchInfo
    first_offset: int
    last_offset: int
    timestamp: int


class ProducerStateManager:
    """Producer id -> ``ProducerEntry`` for one partition."""

    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}

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
            current = self.entries.get(pid)
            entry = updated.get(pid)
            if entry is None:
                entry = current.copy() if current is not None else ProducerEntry(pid)
                updated[pid] = entry
            epoch, first_seq = batch.producer_epoch, batch.base_sequence
            if epoch < entry.epoch:
                raise InvalidProducerEpochError(
                    f"producer {pid} wrote with epoch {epoch}, older than the current epoch {entry.epoch}"
                )
            if epoch != entry.epoch:
                if first_seq != 0 and entry.epoch != NO_EPOCH:
                    raise OutOfOrderSequenceError(
                        f"producer {pid} started epoch {epoch} at sequence {first_seq}, expected 0"
                    )
            elif not _in_sequence(entry.last_seq, first_seq):
                raise OutOfOrderSequenceError(
                    f"producer {pid} epoch {epoch}: sequence {first_seq} does not follow {entry.last_seq}"
                )
            entry.add_batch(epoch, _metadata(item))
        return updated

    def apply(self, updated: dict[int, ProducerEntry]) -> None:
        self.entries.update(updated)

    def replay(self, placed: PlacedBatch) -> None:
        """Rebuild from a batch already in the log: no validation, the log is the truth."""
        batch = placed.batch
        if batch.producer_id < 0:
            return
        entry = self.entries.get(batch.producer_id)
        if entry is None:
            entry = self.entries[batch.producer_id] = ProducerEntry(batch.producer_id)
        entry.add_batch(batch.producer_epoch, _metadata(placed))

    def remove_expired(self, now_ms: int, expiration_ms: int) -> None:
        """Forget producers idle for ``producer.id.expiration.ms`` (Kafka's default is one day)."""
        for pid in [pid for pid, e in self.entries.items() if now_ms - e.last_timestamp >= expiration_ms]:
            del self.entries[pid]

    # ----------------------------------------------------------------------------------------
    # Snapshots

    def to_snapshot(self) -> bytes:
        body = bytearray()
        for entry in self.entries.values():
            body += _PRODUCER.pack(entry.producer_id, entry.epoch, entry.last_timestamp, len(entry.batches))
            for meta in entry.batches:
                body += _BATCH.pack(*meta)
        count = struct.pack(">i", len(self.entries))
        checksum = crc32c(count + body)
        return _FILE_HEADER.pack(_MAGIC, _VERSION, checksum, len(self.entries)) + body

    @classmethod
    def from_snapshot(cls, data: bytes) -> ProducerStateManager:
        """Parse a snapshot; ``ValueError`` if it is damaged (the caller falls back to replay)."""
        if len(data) < _FILE_HEADER.size:
            raise ValueError("snapshot is too short")
        magic, version, checksum, count = _FILE_HEADER.unpack_from(data, 0)
        if magic != _MAGIC or version != _VERSION:
            raise ValueError("not an Odradek producer state snapshot")
        if crc32c(data[_FILE_HEADER.size - 4 :]) != checksum:
            raise ValueError("snapshot checksum mismatch")
        state = cls()
        position = _FILE_HEADER.size
        try:
            for _ in range(count):
                pid, epoch, last_timestamp, batches = _PRODUCER.unpack_from(data, position)
                position += _PRODUCER.size
                entry = ProducerEntry(pid, epoch, last_timestamp)
                for _ in range(batches):
                    entry.batches.append(BatchMetadata(*_BATCH.unpack_from(data, position)))
                    position += _BATCH.size
                state.entries[pid] = entry
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
