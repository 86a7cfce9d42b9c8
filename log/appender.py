"""Appending to a partition log: a leader's client batches, a follower's replicated batches and
transaction markers (Kafka's UnifiedLog.append and appendAsFollower).

Each append first decides where its batches go -- offsets from the log end for a leader, the
leader's own for a follower -- and checks them against producer state, then writes them as one
``pwrite`` to the active segment (rolling first when due, ``Segment.should_roll``) and only then
updates producer state, so a failed write leaves the log as it was.  The leader epoch is
recorded before the write, as Kafka's does.  A disk error takes the log offline.
"""

from __future__ import annotations

from typing import NamedTuple

from log.availability import Availability
from log.checkpoint_writer import CheckpointWriter
from log.clock import Clock
from log.errors import KafkaStorageError, MessageTooLargeError, UnexpectedAppendOffsetError
from log.high_watermark import HighWatermark
from log.local_log import LocalLog, SyncMark
from log.producer_snapshots import read_marker
from log.producer_state import PlacedBatch
from log.segment import Segment
from log.transaction_state import TransactionState
from wire.control_batch import ControlType, EndTxnMarker, encode_end_txn_marker
from wire.record_batch import (
    BatchInfo,
    InvalidRecordError,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)


class AppendInfo(NamedTuple):
    """What Produce answers: offsets given, LogAppendTime (-1 for CreateTime), log start."""

    first_offset: int
    last_offset: int
    log_append_time: int
    log_start_offset: int
    duplicate: bool = False


class LogAppender:
    """The appends of one log."""

    def __init__(
        self,
        local: LocalLog,
        high_watermark: HighWatermark,
        transactions: TransactionState,
        checkpoint: CheckpointWriter,
        availability: Availability,
        clock: Clock,
    ) -> None:
        self._local = local
        self._high_watermark = high_watermark
        self._transactions = transactions
        self._checkpoint = checkpoint
        self._availability = availability
        self._clock = clock

    def append(
        self, record_set: memoryview, batches: list[BatchInfo], leader_epoch: int, now_ms: int
    ) -> AppendInfo:
        """Assign offsets to validated batches, patch their headers in place and write them.

        ``batches`` come from ``scan_batches(record_set)`` and must be contiguous in it.  A
        retry of one of an idempotent producer's last five batches writes nothing and returns
        the original offsets with ``duplicate=True``.  Raises ``MessageTooLargeError``,
        ``OutOfOrderSequenceError``, ``InvalidProducerEpochError``, ``KafkaStorageError``.
        """
        self._availability.check_online()
        if not batches:
            raise InvalidRecordError("an append needs at least one record batch")
        local = self._local
        config = local.config
        producers = self._transactions.producers
        log_append_time = now_ms if config.log_append_time else -1
        next_offset = local.log_end_offset
        placed: list[PlacedBatch] = []
        max_timestamp, offset_of_max_timestamp = -1, next_offset
        for batch in batches:
            if batch.size > config.max_message_bytes:
                raise MessageTooLargeError(
                    f"batch of {batch.size} bytes exceeds max.message.bytes {config.max_message_bytes}"
                )
            last_offset = next_offset + batch.last_offset_delta
            timestamp = now_ms if log_append_time >= 0 else batch.max_timestamp
            placed.append(PlacedBatch(batch, next_offset, last_offset, timestamp))
            if timestamp > max_timestamp:
                max_timestamp, offset_of_max_timestamp = timestamp, last_offset
            next_offset = last_offset + 1
            if batch.producer_id >= 0:
                duplicate = producers.find_duplicate(batch)
                if duplicate is not None:
                    return AppendInfo(
                        duplicate.first_offset,
                        duplicate.last_offset,
                        duplicate.timestamp if log_append_time >= 0 else -1,
                        local.log_start_offset,
                        duplicate=True,
                    )
        updated_producers = producers.validate(placed)
        for item in placed:
            set_base_offset(record_set, item.batch, item.first_offset)
            set_partition_leader_epoch(record_set, item.batch, leader_epoch)
            if log_append_time >= 0:
                set_log_append_time(record_set, item.batch, now_ms)
        data = record_set[batches[0].position : batches[-1].end_position]
        last_offset = next_offset - 1
        self._assign_epoch(leader_epoch, placed[0].first_offset)
        self._write(data, placed[0].first_offset, last_offset, max_timestamp, offset_of_max_timestamp, now_ms)
        producers.apply(updated_producers)
        return AppendInfo(placed[0].first_offset, last_offset, log_append_time, local.log_start_offset)

    def append_as_follower(self, record_set: memoryview, batches: list[BatchInfo]) -> AppendInfo:
        """Write batches fetched from the leader as they are (Kafka's appendAsFollower).

        ``batches`` come from ``scan_batches(record_set, from_client=False)`` and must be
        contiguous in it.  They keep the offsets, partition leader epochs and timestamps the
        leader wrote: the first must start at or after the log end and each after the one before
        (gaps are fine: compacted topics have them), else ``UnexpectedAppendOffsetError``.  The
        leader validated them, so there is no duplicate detection, sequence check or
        max.message.bytes check here; producer state, the aborted-transaction index and the leader
        epoch cache are updated from the headers (and markers) as recovery replays them, so a
        follower can take over as leader and still detect a producer's retries.
        """
        self._availability.check_online()
        if not batches:
            raise InvalidRecordError("an append needs at least one record batch")
        local = self._local
        expected = local.log_end_offset
        max_timestamp, offset_of_max_timestamp = -1, batches[0].base_offset
        for batch in batches:
            if batch.base_offset < expected:
                raise UnexpectedAppendOffsetError(
                    f"{local.directory}: a replicated batch starts at offset {batch.base_offset}, "
                    f"expected {expected} or more"
                )
            if batch.max_timestamp > max_timestamp:
                max_timestamp, offset_of_max_timestamp = batch.max_timestamp, batch.last_offset
            expected = batch.next_offset
        first_offset, last_offset = batches[0].base_offset, batches[-1].last_offset
        data = record_set[batches[0].position : batches[-1].end_position]
        for batch in batches:
            self._assign_epoch(batch.partition_leader_epoch, batch.base_offset)
        segment = self._write(
            data, first_offset, last_offset, max_timestamp, offset_of_max_timestamp, self._clock()
        )
        transactions = self._transactions
        for batch in batches:
            placed = PlacedBatch(batch, batch.base_offset, batch.last_offset, batch.max_timestamp)
            marker = read_marker(local.directory, record_set, batch) if batch.is_control else None
            transactions.record_completed(segment, transactions.producers.replay(placed, marker))
        return AppendInfo(first_offset, last_offset, -1, local.log_start_offset)

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        now_ms: int,
        *,
        leader_epoch: int = 0,
    ) -> AppendInfo:
        """Write the control batch that ends ``producer_id``'s transaction in this partition
        (what Kafka's WriteTxnMarkers does on each partition leader).

        An abort is recorded in the aborted-transaction index of the segment the marker lands
        in.  A marker for a producer with no open transaction is written all the same (Kafka
        does; it changes nothing for readers).  ``leader_epoch`` is stamped on the batch like
        ``append``'s.  The marker carries CreateTime ``now_ms``.  Raises
        ``InvalidProducerEpochError`` (epoch below the producer's), ``TransactionCoordinatorFencedError``
        (coordinator epoch below the last seen) and ``KafkaStorageError``; nothing is written
        then.  As after ``append``, the caller wakes long-polling fetches: under read_committed
        they wait for exactly this.
        """
        self._availability.check_online()
        offset = self._local.log_end_offset
        marker = EndTxnMarker(ControlType.COMMIT if commit else ControlType.ABORT, coordinator_epoch)
        transactions = self._transactions
        updated, completed = transactions.producers.validate_marker(
            producer_id, producer_epoch, marker, offset, now_ms
        )
        batch = encode_end_txn_marker(
            marker,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            timestamp=now_ms,
            base_offset=offset,
            partition_leader_epoch=leader_epoch,
        )
        self._assign_epoch(leader_epoch, offset)
        segment = self._write(memoryview(batch), offset, offset, now_ms, offset, now_ms)
        transactions.record_completed(segment, completed)
        transactions.producers.apply(updated)
        return AppendInfo(offset, offset, -1, self._local.log_start_offset)

    def roll(self, now_ms: int, base_offset: int) -> Segment:
        """Start a new segment at ``base_offset`` (the log end, or past it for a replicated batch
        after a gap, as Kafka rolls at the batch's first offset); snapshot producer state at the
        log end, as Kafka does."""
        segment = self._local.roll(now_ms, base_offset)
        self._transactions.snapshot(durable=False)
        return segment

    def _assign_epoch(self, epoch: int, start_offset: int) -> None:
        """Record ``epoch``'s start if it is newer than the latest; a disk error takes the log
        offline.

        Called before the batches are written, as Kafka's UnifiedLog assigns the epoch before
        its segment append: the checkpoint file is what a partition's first append (or a new
        leader's) can fail to write on a full disk, and failing there leaves nothing appended,
        so KAFKA_STORAGE_ERROR means the batch is not in the log and a retry cannot duplicate
        it.  A write that fails after this leaves an epoch starting at the log end with no
        data yet, which Kafka's leaders hold too (and reloading the log drops it)."""
        epochs = self._local.epochs
        try:
            epochs.assign_if_newer(epoch, start_offset)
        except OSError as exc:
            raise self._availability.went_offline(exc, epochs.path) from exc

    def _write(
        self,
        data: memoryview,
        first_offset: int,
        last_offset: int,
        max_timestamp: int,
        offset_of_max_timestamp: int,
        now_ms: int,
    ) -> Segment:
        """Write whole batches, offsets assigned from the log end, rolling first when due;
        returns the segment written to.  A disk error takes the log offline."""
        local = self._local
        segment = local.segments[-1]
        try:
            if self._checkpoint.clean_on_disk:
                self._checkpoint.write(clean_shutdown=False)
            if segment.should_roll(local.config, now_ms, len(data), max_timestamp, last_offset):
                segment = self.roll(now_ms, first_offset)
            position = segment.append(
                data, last_offset, max_timestamp, offset_of_max_timestamp, local.config.index_interval_bytes
            )
        except (KafkaStorageError, OSError) as exc:
            raise self._availability.went_offline(exc, segment.log_path) from exc
        self._high_watermark.last_append = SyncMark(first_offset, segment, position)
        return segment
