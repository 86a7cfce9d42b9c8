"""One partition's log: an ordered list of segments, offsets, producer state and durability.

This is the live log; opening one (recovery, and rebuilding the state that follows from the
data) is ``log.loader``'s, which hands it a ``LoadedLog`` to serve from.

Threading model: every method runs on the broker's trio thread except ``flush`` (and
``sync_data``), which the broker calls from a worker thread so fsync never blocks the event
loop, the descriptors ``begin_data_sync`` hands out, which the broker's sync process
fdatasyncs (``broker.sync_worker``), and the cleaner's
reading and writing (``log.cleaner``), which also runs in a worker thread.  ``flush`` only
fsyncs file descriptors and advances the recovery point; a lock keeps segment removal and close
from closing a descriptor under a running fsync.  Appends do not take the lock.  While a
cleaning pass is under way no segment leaves the log except through the cleaner's own swap:
retention waits for the next pass and DeleteRecords only moves the log start, so the worker
thread never reads a closed descriptor.

Offsets: the log end offset is the next offset to assign; the high watermark, what consumers
read up to, equals it on a single node except while appends wait for the sync their
acknowledgement needs (``flush.messages``);
the log start offset only moves forward (DeleteRecords, retention) and is checkpointed.

Removed segments are renamed ``*.deleted`` and their files deleted ``file.delete.delay.ms``
later (at once when it is 0), as Kafka does, so a reader holding a ``FileSlice`` can finish;
``purge_deleted_segments`` does the deleting and start-up removes any leftovers (``log.swap``).

Transactions (Kafka's data plane): a producer's transactional batches open a transaction at
their first offset (``log.producer_state``); ``append_marker`` writes the control batch that
ends it.  The *last stable offset* is the first offset of the earliest transaction not yet
decided, at most the high watermark: read_committed consumers read below it
(``read_committed``), and learn which producers' data there was aborted from the aborted
transaction index of each segment (``log.txn_index``; an entry goes into the index of the
segment the abort marker lands in).  Recovery (``log.loader``) rebuilds those entries for the
segments it re-validates while it replays producer state (``log.producer_snapshots``), which
alone knows the open transactions.

Replication (Kafka's follower side, used by ``broker/replication/``): ``append_as_follower``
writes batches with the offsets and leader epochs their leader gave them; ``truncate_to`` and
``truncate_fully_and_start_at`` cut a divergent tail or restart the log where the leader's starts;
the leader epoch cache (``log.leader_epochs``) records where each epoch started.  A clustered
partition's high watermark is the one its leader computed (``set_replicated_high_watermark``):
consumers then read below the smaller of it and the sync limit, and followers read past it
(``read_slices(..., upto=...)``).
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

from log.checkpoint import PartitionCheckpoint
from log.clock import Clock, wall_clock_ms
from log.config import LONG_MAX, LogConfig
from log.deletion import delete_partition_directory
from log.disk_error_report import describe_os_error
from log.errors import (
    KafkaStorageError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    UnexpectedAppendOffsetError,
)
from log.leader_epochs import UNDEFINED_EPOCH, EpochEntry, LeaderEpochCache, end_offset_for
from log.loader import LoadedLog, close_all, load
from log.open_files import LazyFile
from log.producer_snapshots import (
    aborted_entry,
    read_marker,
    rebuild_producer_state,
    remove_snapshots,
    write_snapshot,
)
from log.producer_state import CompletedTxn, PlacedBatch, ProducerEntry
from log.retention import SegmentFacts, segments_to_delete
from log.segment import Segment
from log.storage_probe import probe_writable
from log.swap import DELETED, SWAP
from log.sync_ledger import SyncReceipt, confirm, receipt, sync_directory
from log.txn_index import AbortedTxn
from wire.control_batch import ControlType, EndTxnMarker, encode_end_txn_marker
from wire.record_batch import (
    BatchInfo,
    InvalidRecordError,
    decode_records,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)

logger = logging.getLogger(__name__)


class AppendInfo(NamedTuple):
    """What Produce answers: offsets given, LogAppendTime (-1 for CreateTime), log start."""

    first_offset: int
    last_offset: int
    log_append_time: int
    log_start_offset: int
    duplicate: bool = False


class FileSlice(NamedTuple):
    """A byte range of a segment file for ``os.sendfile``; valid until the log changes segments.

    It names the file rather than a descriptor: reading the next partition may evict this
    file's descriptor from the LRU (``log.open_files``), and ``fd`` reopens it if so.
    """

    file: LazyFile
    position: int
    length: int

    @property
    def fd(self) -> int:
        return self.file.fd

    def read(self) -> bytes:
        """The slice's bytes, read now."""
        return self.file.read(self.position, self.position + self.length)


@dataclass
class DataSync:
    """An fdatasync of a log's unsynced data, begun by ``PartitionLog.begin_data_sync``: the
    descriptors to sync (duplicates, whoever syncs them; ``close`` them after) and what
    ``end_data_sync`` records once they are."""

    target: int  # the log end when it began: what the sync makes durable
    truncations: int  # a truncation since means the target may no longer exist
    descriptors: list[int]
    receipts: list[SyncReceipt]

    def close(self) -> None:
        for fd in self.descriptors:
            os.close(fd)
        self.descriptors = []


class SyncMark(NamedTuple):
    """A batch boundary of the log: its offset, and where it is in which segment."""

    offset: int
    segment: Segment
    position: int


class CommittedRead(NamedTuple):
    """What a read_committed fetch gets: ``read_slices`` below the last stable offset, and
    (producer id, first offset) of every aborted transaction overlapping them."""

    slices: list[FileSlice]
    aborted: list[tuple[int, int]]


class PartitionLog:
    """A partition directory of segments (``<topic>-<partition>/``), opened with recovery."""

    def __init__(
        self, directory: str, config: LogConfig, loaded: LoadedLog, clock: Clock = wall_clock_ms
    ) -> None:
        """A log serving from ``loaded`` (``log.loader``): use ``open``, or ``unopenable``."""
        self.directory = directory
        self.config = config
        self.clock = clock
        self._data_synced_to = 0  # offsets below this are fdatasynced (``sync_data``)
        # Truncations so far: a flush running in a worker thread meanwhile must not move the
        # recovery point to a log end sampled before the cut.
        self._truncations = 0
        self._last_append: SyncMark | None = None  # where the newest append starts
        # Appends whose acknowledgement waits for a sync stay invisible to consumers until it is
        # done (the high watermark stops at the first of them), as Kafka moves its high watermark
        # only after the flush an append triggered: nothing read can vanish in a power cut.
        self._hidden: SyncMark | None = None
        self._hidden_until = 0
        self._replicated_mark: SyncMark | None = None  # where ``_replicated_hw`` is in the files
        self._lock = threading.Lock()
        self._closed = False
        # The event loop and ``mark_unclean``'s worker threads both write the checkpoint.
        self._checkpoint_lock = threading.Lock()
        self._cleaning = False
        self._pinned_for_cleaning: list[Segment] = []
        # Held by the cleaner's worker thread while it reads segments; ``closing`` asks it to stop.
        self.cleaning_lock = threading.Lock()
        self.closing = threading.Event()
        # Set while a truncation stops the running pass (Kafka's abortAndPauseCleaning).
        self.cleaning_aborted = threading.Event()
        # Flushes that found something to fsync (group commit makes this small), the open's included.
        self.fsyncs = loaded.fsyncs
        self._start_from(loaded)

    def _start_from(self, loaded: LoadedLog) -> None:
        """Take the state a load left (``log.loader``): at construction, and again when
        ``adopt_recovered`` brings the log back after a disk error, so both take all of it."""
        self._segments = loaded.segments
        self._bases = [s.base_offset for s in loaded.segments]
        self._log_start_offset = loaded.log_start_offset
        self._recovery_point = loaded.recovery_point
        self._producers = loaded.producers
        self._epochs = loaded.epochs
        # A clustered partition's high watermark as replication computed it; None on a single
        # node, where the log end (less what waits for a sync) is the high watermark.
        self._replicated_hw = loaded.replicated_high_watermark
        # Transactions a marker ended that the high watermark has not passed yet: still
        # undecided for consumers (Kafka's unreplicated transactions), see ``last_stable_offset``.
        # A load replays markers into producer state only.
        self._undecided: list[CompletedTxn] = []
        self._checkpointed = loaded.checkpointed
        # The checkpoint on disk says clean: appends must say otherwise first.
        self._clean_on_disk = loaded.clean_on_disk
        self.first_dirty_offset = loaded.first_dirty_offset
        # (delete files at ms, segment): none after a load, which deletes ``*.deleted`` leftovers.
        self._deleted: list[tuple[int, Segment]] = []
        self._offline: KafkaStorageError | None = None

    # ----------------------------------------------------------------------------------------
    # Opening (``log.loader`` does the loading and recovery)

    @classmethod
    def open(cls, directory: str, config: LogConfig, clock: Clock = wall_clock_ms) -> PartitionLog:
        """Open (or create) the log in ``directory``, recovering it if it was not closed cleanly
        (``log.loader``: after an unclean shutdown every segment from the one holding the
        checkpointed recovery point onwards is validated batch by batch and cut at the first
        invalid batch); the recovered data is fsynced before the log serves."""
        directory = os.fspath(directory)
        loaded = load(directory, config, clock())
        log = cls(directory, config, loaded, clock)
        if loaded.found == "new":
            # DEBUG: one CreateTopics may make 10,000 of these; the request itself is the news.
            logger.debug("%s: created a new log", log.directory)
        elif loaded.found == "unclean":
            logger.info(
                "%s: recovered after an unclean shutdown, log end offset %d",
                log.directory,
                log.log_end_offset,
            )
        return log

    @classmethod
    def unopenable(
        cls, directory: str, config: LogConfig, exc: Exception, clock: Clock = wall_clock_ms
    ) -> PartitionLog:
        """Stand-in for a log whose files could not be opened at all (EMFILE, EACCES, a file
        where its directory should be, unreadable metadata): it holds no segment and answers
        KAFKA_STORAGE_ERROR, so the broker starts and serves every other partition.  The
        offline re-probe (``reopen_after_disk_error``) brings it back once it can be opened."""
        log = cls(directory, config, LoadedLog.nothing(directory), clock)
        log._offline = KafkaStorageError(f"cannot open {directory}: {exc}")
        return log

    # ----------------------------------------------------------------------------------------
    # Offsets and sizes

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        # No segment only in an ``unopenable`` stand-in, which reports an empty log.
        return self._segments[-1].next_offset if self._segments else self._log_start_offset

    @property
    def high_watermark(self) -> int:
        """What consumers may read up to: the log end, except appends still waiting for the sync
        their acknowledgement needs (``hide_last_append_until_synced``), and in a cluster at most
        the replicated high watermark."""
        synced = self._hidden.offset if self._hidden is not None else self.log_end_offset
        replicated = self._replicated_hw
        return synced if replicated is None else min(synced, replicated)

    @property
    def replicated_high_watermark(self) -> int | None:
        return self._replicated_hw

    def set_replicated_high_watermark(self, offset: int | None) -> None:
        """Set the high watermark replication computed (the leader: the smallest log end in
        the ISR; a follower: its leader's), clamped to [log start, log end] as Kafka's
        updateHighWatermark does; None returns to single-node behaviour.  It is checkpointed
        with the partition (``checkpoint``, ``close``) and restored, clamped, at open."""
        if offset is not None:
            offset = min(max(offset, self._log_start_offset), self.log_end_offset)
        self._replicated_hw = offset

    def _visible_limit(self) -> SyncMark | None:
        """Where consumers' reads stop in the files (None: the log end): see ``high_watermark``."""
        hidden, replicated = self._hidden, self._replicated_hw
        if replicated is None or replicated >= (hidden.offset if hidden is not None else self.log_end_offset):
            return hidden
        mark = self._replicated_mark
        if mark is None or mark.offset != replicated or not self._holds(mark.segment, replicated):
            mark = self._replicated_mark = self._mark_at(replicated)
        return mark

    def _holds(self, segment: Segment, offset: int) -> bool:
        """``segment`` is (still) the one of this log that would hold ``offset``."""
        return self._segments[max(0, bisect.bisect_right(self._bases, offset) - 1)] is segment

    def _limit_at(self, offset: int) -> SyncMark | None:
        """A read limit at ``offset`` (None at or past the log end)."""
        return None if offset >= self.log_end_offset else self._mark_at(offset)

    @property
    def last_stable_offset(self) -> int:
        """What read_committed consumers may read up to (Kafka's LSO): the first offset of the
        earliest undecided transaction -- open, or ended by a marker the high watermark has not
        passed (a power cut could still lose the marker) -- never below the log start, and at
        most the high watermark."""
        high_watermark = self.high_watermark
        first = self._producers.first_open_offset()
        if self._undecided:
            self._undecided = [txn for txn in self._undecided if txn.last_offset >= high_watermark]
            firsts = [txn.first_offset for txn in self._undecided] + ([first] if first >= 0 else [])
            first = min(firsts, default=-1)
        if first < 0:
            return high_watermark
        return min(high_watermark, max(first, self._log_start_offset))

    def hide_last_append_until_synced(self) -> None:
        """The newest append waits for a sync: keep it, and all after it, from consumers until
        ``reveal_synced`` is given a mark at or past its end."""
        if self._hidden is None:
            self._hidden = self._last_append
        self._hidden_until = self.log_end_offset

    def sync_mark(self) -> SyncMark:
        """The log end as a place in the files, taken before a sync (see ``reveal_synced``)."""
        segment = self._segments[-1]
        return SyncMark(self.log_end_offset, segment, segment.size)

    def reveal_synced(self, mark: SyncMark) -> None:
        """A ``sync_data`` that started after ``sync_mark`` returned ``mark`` has completed:
        consumers may read up to it."""
        if self._hidden is None:
            return
        if self._hidden_until <= mark.offset:
            self._hidden = None
        elif mark.offset > self._hidden.offset:
            self._hidden = mark

    @property
    def recovery_point(self) -> int:
        """Every offset below this is known to be fsynced."""
        return self._recovery_point

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def segment_base_offsets(self) -> tuple[int, ...]:
        return tuple(self._bases)

    @property
    def segments(self) -> tuple[Segment, ...]:
        """The segments, oldest first; the last is the active one (read-only view for the cleaner)."""
        return tuple(self._segments)

    # ----------------------------------------------------------------------------------------
    # Append

    def append(
        self, record_set: memoryview, batches: list[BatchInfo], leader_epoch: int, now_ms: int
    ) -> AppendInfo:
        """Assign offsets to validated batches, patch their headers in place and write them.

        ``batches`` come from ``scan_batches(record_set)`` and must be contiguous in it.  A
        retry of one of an idempotent producer's last five batches writes nothing and returns
        the original offsets with ``duplicate=True``.  Raises ``MessageTooLargeError``,
        ``OutOfOrderSequenceError``, ``InvalidProducerEpochError``, ``KafkaStorageError``.
        """
        self._check_online()
        if not batches:
            raise InvalidRecordError("an append needs at least one record batch")
        config = self.config
        log_append_time = now_ms if config.log_append_time else -1
        next_offset = self.log_end_offset
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
                duplicate = self._producers.find_duplicate(batch)
                if duplicate is not None:
                    return AppendInfo(
                        duplicate.first_offset,
                        duplicate.last_offset,
                        duplicate.timestamp if log_append_time >= 0 else -1,
                        self._log_start_offset,
                        duplicate=True,
                    )
        updated_producers = self._producers.validate(placed)
        for item in placed:
            set_base_offset(record_set, item.batch, item.first_offset)
            set_partition_leader_epoch(record_set, item.batch, leader_epoch)
            if log_append_time >= 0:
                set_log_append_time(record_set, item.batch, now_ms)
        data = record_set[batches[0].position : batches[-1].end_position]
        last_offset = next_offset - 1
        self._assign_epoch_online(leader_epoch, placed[0].first_offset)
        self._write(data, placed[0].first_offset, last_offset, max_timestamp, offset_of_max_timestamp, now_ms)
        self._producers.apply(updated_producers)
        return AppendInfo(placed[0].first_offset, last_offset, log_append_time, self._log_start_offset)

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
        self._check_online()
        if not batches:
            raise InvalidRecordError("an append needs at least one record batch")
        expected = self.log_end_offset
        max_timestamp, offset_of_max_timestamp = -1, batches[0].base_offset
        for batch in batches:
            if batch.base_offset < expected:
                raise UnexpectedAppendOffsetError(
                    f"{self.directory}: a replicated batch starts at offset {batch.base_offset}, "
                    f"expected {expected} or more"
                )
            if batch.max_timestamp > max_timestamp:
                max_timestamp, offset_of_max_timestamp = batch.max_timestamp, batch.last_offset
            expected = batch.next_offset
        first_offset, last_offset = batches[0].base_offset, batches[-1].last_offset
        data = record_set[batches[0].position : batches[-1].end_position]
        for batch in batches:
            self._assign_epoch_online(batch.partition_leader_epoch, batch.base_offset)
        segment = self._write(
            data, first_offset, last_offset, max_timestamp, offset_of_max_timestamp, self.clock()
        )
        for batch in batches:
            placed = PlacedBatch(batch, batch.base_offset, batch.last_offset, batch.max_timestamp)
            marker = read_marker(self.directory, record_set, batch) if batch.is_control else None
            self._record_completed(segment, self._producers.replay(placed, marker))
        return AppendInfo(first_offset, last_offset, -1, self._log_start_offset)

    def _assign_epoch_online(self, epoch: int, start_offset: int) -> None:
        """Record ``epoch``'s start if it is newer than the latest; a disk error takes the log
        offline.

        Called before the batches are written, as Kafka's UnifiedLog assigns the epoch before
        its segment append: the checkpoint file is what a partition's first append (or a new
        leader's) can fail to write on a full disk, and failing there leaves nothing appended,
        so KAFKA_STORAGE_ERROR means the batch is not in the log and a retry cannot duplicate
        it.  A write that fails after this leaves an epoch starting at the log end with no
        data yet, which Kafka's leaders hold too (and reloading the log drops it)."""
        try:
            self._epochs.assign_if_newer(epoch, start_offset)
        except OSError as exc:
            raise self.went_offline(exc, self._epochs.path) from exc

    def _record_completed(self, segment: Segment, completed: CompletedTxn | None) -> None:
        """A marker written to ``segment`` ended ``completed``: index it if it aborted, and keep
        it undecided for consumers until the high watermark passes it."""
        if completed is None:
            return
        if completed.aborted:
            try:
                segment.txn_index.append(aborted_entry(self._producers, completed))
            except OSError as exc:
                raise self.went_offline(exc, segment.txn_index.path) from exc
        self._undecided.append(completed)

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
        segment = self._segments[-1]
        try:
            if self._clean_on_disk:
                self._write_checkpoint(clean_shutdown=False)
            if segment.should_roll(self.config, now_ms, len(data), max_timestamp, last_offset):
                segment = self._roll(now_ms, first_offset)
            position = segment.append(
                data, last_offset, max_timestamp, offset_of_max_timestamp, self.config.index_interval_bytes
            )
        except (KafkaStorageError, OSError) as exc:
            raise self.went_offline(exc, segment.log_path) from exc
        self._last_append = SyncMark(first_offset, segment, position)
        return segment

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
        self._check_online()
        offset = self.log_end_offset
        marker = EndTxnMarker(ControlType.COMMIT if commit else ControlType.ABORT, coordinator_epoch)
        updated, completed = self._producers.validate_marker(
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
        self._assign_epoch_online(leader_epoch, offset)
        segment = self._write(memoryview(batch), offset, offset, now_ms, offset, now_ms)
        self._record_completed(segment, completed)
        self._producers.apply(updated)
        return AppendInfo(offset, offset, -1, self._log_start_offset)

    def _roll(self, now_ms: int, base_offset: int) -> Segment:
        """Start a new segment at ``base_offset`` (the log end, or past it for a replicated batch
        after a gap, as Kafka rolls at the batch's first offset); snapshot producer state at the
        log end, as Kafka does."""
        self._segments[-1].seal()
        segment = Segment.create(self.directory, base_offset, self.config, now_ms)
        self._segments.append(segment)
        self._bases.append(segment.base_offset)
        write_snapshot(self.directory, self.log_end_offset, self._producers, durable=False)
        return segment

    # ----------------------------------------------------------------------------------------
    # Read

    def read(self, offset: int, max_bytes: int, upto: int | None = None) -> bytes:
        """Whole batches from the one holding ``offset``, up to ``max_bytes`` but at least one.

        Reads stay within one segment, as Kafka's do; the client simply fetches again, and stop
        at the high watermark (or ``upto``, as for ``read_slices``).  An offset at or past it (up
        to the log end) gives ``b""``; outside [log start, log end] raises ``OffsetOutOfRangeError``.
        """
        located = self._locate(offset, max_bytes, self._read_limit(upto))
        if located is None:
            return b""
        segment, start, end = located
        try:
            return segment.read(start, end)
        except OSError as exc:
            raise self.went_offline(exc) from exc

    def read_slices(self, offset: int, max_bytes: int, upto: int | None = None) -> list[FileSlice]:
        """``read`` as file ranges for ``os.sendfile``; use before yielding to other tasks.

        ``upto`` moves the limit from the high watermark to that offset: a leader serving a
        follower passes its ``log_end_offset`` (followers replicate what consumers cannot see
        yet).  Only whole batches below ``upto`` are returned.
        """
        located = self._locate(offset, max_bytes, self._read_limit(upto))
        if located is None:
            return []
        segment, start, end = located
        return [FileSlice(segment.log_file, start, end - start)]

    def read_committed(self, offset: int, max_bytes: int) -> CommittedRead:
        """``read_slices`` for a read_committed consumer (Kafka's FetchIsolation.TXN_COMMITTED):
        only whole batches below the last stable offset, with the aborted transactions that
        overlap them up to the offset after the last batch returned."""
        stable = self.last_stable_offset
        try:
            limit = self._visible_limit() if stable == self.high_watermark else self._mark_at(stable)
            located = self._locate(offset, max_bytes, limit)
            if located is None:
                return CommittedRead([], [])
            segment, start, end = located
            slices = [FileSlice(segment.log_file, start, end - start)]
            first = self._segments.index(segment)
            if not any(s.txn_index.entries for s in self._segments[first:]):
                return CommittedRead(slices, [])  # no abort since: skip reading a header
            return CommittedRead(slices, self.aborted_transactions(offset, segment.offset_at(end)))
        except OSError as exc:
            raise self.went_offline(exc) from exc

    def _read_limit(self, upto: int | None) -> SyncMark | None:
        """Where a read stops: the high watermark, or ``upto`` (see ``read_slices``)."""
        try:
            return self._visible_limit() if upto is None else self._limit_at(upto)
        except OSError as exc:
            raise self.went_offline(exc) from exc

    def _mark_at(self, offset: int) -> SyncMark:
        """Where the batch holding ``offset`` starts (its segment's end if none holds it)."""
        segment = self._segments[max(0, bisect.bisect_right(self._bases, offset) - 1)]
        batch = segment.find_batch(offset)
        return SyncMark(offset, segment, batch.position if batch is not None else segment.size)

    def _locate(self, offset: int, max_bytes: int, limit: SyncMark | None) -> tuple[Segment, int, int] | None:
        """Where the batches to read from ``offset`` are: nothing at or past ``limit`` (the
        log end when None)."""
        self._check_online()
        end_offset = self.log_end_offset
        if not self._log_start_offset <= offset <= end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{self._log_start_offset}, {end_offset}] in {self.directory}"
            )
        if offset >= (end_offset if limit is None else limit.offset):
            return None
        try:
            first = bisect.bisect_right(self._bases, offset) - 1
            for segment in self._segments[first:]:
                batch = segment.find_batch(offset)
                if batch is not None:
                    end = segment.batches_end(batch.position, max_bytes)
                    if limit is not None and limit.segment is segment:
                        end = min(end, limit.position)
                    return (segment, batch.position, end) if end > batch.position else None
        except OSError as exc:
            raise self.went_offline(exc) from exc
        return None

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of every aborted transaction with data in
        [fetch_offset, upper_bound_offset): what Kafka's Fetch returns under read_committed."""
        return [
            (txn.producer_id, txn.first_offset) for txn in self.aborted_txns(fetch_offset, upper_bound_offset)
        ]

    def aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted-transaction index entries with ``last_offset >= fetch_offset`` and
        ``first_offset < upper_bound_offset``, read from the segment holding ``fetch_offset``
        onwards until an entry says no later abort can overlap (Kafka's
        collectAbortedTransactions)."""
        found: list[AbortedTxn] = []
        first = max(0, bisect.bisect_right(self._bases, fetch_offset) - 1)
        try:
            for segment in self._segments[first:]:
                txns, complete = segment.txn_index.collect(fetch_offset, upper_bound_offset)
                found += txns
                if complete:
                    break
        except OSError as exc:
            raise self.went_offline(exc) from exc
        return found

    # ----------------------------------------------------------------------------------------
    # Timestamps

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record at or after ``timestamp``, else None.

        The first segment whose max timestamp reaches the target is searched with its time
        index, then its batches' max timestamps, then the records of one batch -- correct with
        out-of-order timestamps because every structure holds running maxima.
        """
        self._check_online()
        start = self._log_start_offset
        for segment in list(self._segments):
            if segment.max_timestamp < timestamp or segment.next_offset <= start:
                continue
            hint = max(segment.time_index.lookup(timestamp).offset, start, segment.base_offset)
            first = segment.find_batch(hint)
            if first is None:
                continue
            for batch in segment.walk(first.position):
                if batch.max_timestamp >= timestamp and batch.last_offset >= start:
                    for record in self._records_of(segment, batch):
                        if record.timestamp >= timestamp and record.offset >= start:
                            return record.offset, record.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with the largest timestamp (ListOffsets -3)."""
        self._check_online()
        best = max(self._segments, key=lambda s: s.max_timestamp)  # first of equal maxima
        if best.max_timestamp < 0:
            return None
        batch = best.find_batch(best.offset_of_max_timestamp)
        if batch is not None:
            for record in self._records_of(best, batch):
                if record.timestamp == best.max_timestamp:
                    return record.offset, record.timestamp
        return None

    @staticmethod
    def _records_of(segment: Segment, batch: BatchInfo) -> list:
        data = segment.read(batch.position, batch.end_position)
        return decode_records(data, batch._replace(position=0))

    # ----------------------------------------------------------------------------------------
    # Log start

    def delete_records(self, before_offset: int) -> int:
        """Move the log start to ``before_offset`` (DeleteRecords); return the new log start.

        Durable at once (checkpointed); segments wholly below the new start are deleted.
        """
        self._check_online()
        if not 0 <= before_offset <= self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"cannot delete records before {before_offset}: the log ends at {self.log_end_offset}"
            )
        if before_offset > self._log_start_offset:
            self._log_start_offset = before_offset
            try:
                self._write_checkpoint(clean_shutdown=False)
                self._delete_segments_below_log_start()
                self._epochs.truncate_from_start(before_offset)
            except OSError as exc:
                raise self.went_offline(exc) from exc
        return self._log_start_offset

    def _delete_segments_below_log_start(self) -> None:
        """Remove leading segments that hold only offsets below the log start (never the active).

        Deferred while the cleaner works; ``end_cleaning`` calls this again.
        """
        count = 0
        while (
            count + 1 < len(self._segments)
            and self._segments[count + 1].base_offset <= self._log_start_offset
        ):
            count += 1
        if count and not self._cleaning:
            self._remove_segments(self._segments[:count], self.clock())

    def delete_old_segments(self, now_ms: int) -> int:
        """Retention (Kafka's deleteOldSegments, rules in ``log.retention``): returns segments removed.

        Moves the log start to the first kept segment (checkpointed before any file is touched).
        Skipped while the cleaner works on this log, and for logs that went offline.
        """
        if self._cleaning or not self.is_online:
            return 0
        facts = [SegmentFacts(s.base_offset, s.size, s.largest_timestamp) for s in self._segments]
        deletion = segments_to_delete(facts, self._log_start_offset, self.config, now_ms)
        count = deletion.count
        high_watermark = self.high_watermark
        if high_watermark < self.log_end_offset:  # keep what consumers cannot see yet, as Kafka does
            count = min(count, bisect.bisect_right(self._bases, high_watermark) - 1)
        if not count:
            return 0
        try:
            if count == len(self._segments):
                self._roll(now_ms, self.log_end_offset)
            doomed = self._segments[:count]
            self._log_start_offset = max(self._log_start_offset, self._segments[count].base_offset)
            self._write_checkpoint(clean_shutdown=False)
            self._remove_segments(doomed, now_ms)
            self._epochs.truncate_from_start(self._log_start_offset)
        except OSError as exc:
            raise self.went_offline(exc) from exc
        logger.info(
            "%s: deleted %d segment(s) (%s); log start offset is now %d",
            self.directory,
            count,
            deletion.reason,
            self._log_start_offset,
        )
        return count

    def _remove_segments(self, doomed: Sequence[Segment], now_ms: int) -> None:
        """Take segments out of the log and rename their files ``*.deleted`` for later deletion."""
        with self._lock:
            for segment in doomed:
                position = self._segments.index(segment)
                del self._segments[position]
                del self._bases[position]
        self._retire(doomed, now_ms)

    def _retire(self, segments: Sequence[Segment], now_ms: int) -> None:
        """Rename segments that left the log ``*.deleted``; their files go after the delay."""
        for segment in segments:
            segment.rename(DELETED)
            self._deleted.append((now_ms + self.config.file_delete_delay_ms, segment))
        self.purge_deleted_segments(now_ms)

    def purge_deleted_segments(self, now_ms: int) -> None:
        """Delete the files of removed segments whose ``file.delete.delay.ms`` has passed.

        They are no longer part of the log, so a failure here only leaves files behind, which
        the next start-up deletes.
        """
        due = [segment for deadline, segment in self._deleted if deadline <= now_ms]
        if due:
            self._deleted = [(d, s) for d, s in self._deleted if d > now_ms]
            for segment in due:
                try:
                    segment.delete()
                except OSError as exc:
                    logger.warning("%s: cannot delete %s: %s", self.directory, segment.log_path, exc)

    @property
    def next_purge_ms(self) -> int | None:
        """When ``purge_deleted_segments`` next has work, or None."""
        return min((deadline for deadline, _ in self._deleted), default=None)

    # ----------------------------------------------------------------------------------------
    # Leader epochs and truncation (replication)

    @property
    def leader_epochs(self) -> LeaderEpochCache:
        """The leader epoch cache (read it; the log keeps it current)."""
        return self._epochs

    def end_offset_for_epoch(
        self, requested_epoch: int, current_leader_epoch: int = UNDEFINED_EPOCH
    ) -> tuple[int, int]:
        """(epoch, end offset) of ``requested_epoch`` as OffsetForLeaderEpoch answers it
        (Kafka's LeaderEpochFileCache.endOffsetFor, ``log.leader_epochs.end_offset_for``).

        ``current_leader_epoch`` is the epoch this broker leads the partition in: Kafka assigns
        it at the log end when the broker becomes leader, so it counts as the latest epoch even
        before anything was written in it; here it is added to the answer without being stored
        (the first append in it stores it).
        """
        entries = self._epochs.epoch_entries()
        end = self.log_end_offset
        if current_leader_epoch > self._epochs.latest_epoch:
            entries.append(EpochEntry(current_leader_epoch, end))
        return end_offset_for(entries, requested_epoch, end)

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch holding an offset at or after ``offset`` (Kafka's truncateTo); True
        if anything was removed.

        A follower does this before fetching from a new leader, to where OffsetForLeaderEpoch
        says its last epoch ended.  Segments starting past ``offset`` are removed, the one
        holding it is cut at the batch holding it (a batch is never split, so the log end may end
        up below ``offset``) and its indexes trimmed; producer state is rebuilt from the newest
        snapshot at or below the new end plus replay, as recovery does; the epoch cache forgets
        the epochs starting at or after the new end.  The cut is fsynced before it returns: a
        crash leaves the old tail or none, never a mix.  Offsets at or past the log end change
        nothing; below the first segment the log restarts there (``truncate_fully_and_start_at``).
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {offset}")
        self._check_online()
        if offset >= self.log_end_offset:
            # A leader that assigned an epoch and wrote nothing in it may hold an entry at the end.
            self._truncate_epochs(self.log_end_offset)
            return False
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        logger.info("%s: truncating from offset %d to %d", self.directory, self.log_end_offset, offset)
        with self._cleaning_stopped():
            try:
                self._lower_recovery_point(offset)
                doomed = self._segments[bisect.bisect_right(self._bases, offset) :]
                if doomed:
                    self._remove_segments(doomed, self.clock())
                    sync_directory(self.directory)
                self._segments[-1].truncate_to(offset)
            except OSError as exc:
                raise self.went_offline(exc) from exc
            self._after_truncation(min(self._log_start_offset, offset))
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop the whole log and start it empty at ``offset`` (Kafka's truncateFullyAndStartAt):
        for a follower whose leader's log starts past its end, or truncating below its start.
        Producer state and the leader epoch cache start empty; the log start becomes ``offset``."""
        if offset < 0:
            raise ValueError(f"cannot start a log at a negative offset {offset}")
        self._check_online()
        logger.info("%s: emptying the log and starting it at offset %d", self.directory, offset)
        with self._cleaning_stopped():
            try:
                # The old segments go first: a crash before the checkpoint below then finds no
                # data and starts at the new segment, never the old data above an old log start.
                now_ms = self.clock()
                self._remove_segments(list(self._segments), now_ms)
                segment = Segment.create(self.directory, offset, self.config, now_ms)
                with self._lock:
                    self._segments, self._bases = [segment], [offset]
                sync_directory(self.directory)
                self._log_start_offset = offset
                self._lower_recovery_point(offset)
                remove_snapshots(self.directory)
                self._epochs.clear()
            except OSError as exc:
                raise self.went_offline(exc) from exc
            self._after_truncation(offset)

    @contextmanager
    def _cleaning_stopped(self) -> Iterator[None]:
        """Stop a running cleaning pass for a truncation: its worker finishes its current step,
        and everything it did after is discarded (``replace_segments``, ``end_cleaning``)."""
        if not self._cleaning:
            yield
            return
        self.cleaning_aborted.set()
        with self.cleaning_lock:
            yield

    def _lower_recovery_point(self, offset: int) -> None:
        """Before cutting files: recovery must re-validate from ``offset`` if we crash midway."""
        self._truncations += 1
        self._recovery_point = min(self._recovery_point, offset)
        self._data_synced_to = min(self._data_synced_to, offset)
        self._write_checkpoint(clean_shutdown=False)

    def _after_truncation(self, log_start_offset: int) -> None:
        """Make the state that follows the data agree with the new log end, then make it durable:
        the cut data first, then the epoch cache and the checkpoint."""
        end = self.log_end_offset
        self._log_start_offset = log_start_offset
        if self._last_append is not None and self._last_append.offset >= end:
            self._last_append = None
        if self._hidden is not None and self._hidden.offset >= end:
            self._hidden = None
        self._hidden_until = min(self._hidden_until, end)
        self._replicated_mark = None
        if self._replicated_hw is not None:
            self.set_replicated_high_watermark(self._replicated_hw)
        self.first_dirty_offset = min(self.first_dirty_offset, end)
        self._undecided = [txn for txn in self._undecided if txn.last_offset < end]
        try:
            self._producers = rebuild_producer_state(self.directory, self._segments, None)
            self.flush()
            self._truncate_epochs(end)
            self._write_checkpoint(clean_shutdown=False)
        except OSError as exc:
            raise self.went_offline(exc) from exc

    def _truncate_epochs(self, offset: int) -> None:
        """Forget the epochs starting at or after ``offset``, durably."""
        try:
            self._epochs.truncate_from_end(offset)
            self._epochs.sync()
        except OSError as exc:
            raise self.went_offline(exc, self._epochs.path) from exc

    # ----------------------------------------------------------------------------------------
    # Durability

    def flush(self) -> None:
        """fsync everything written so far and advance the recovery point (worker-thread safe).

        Returns at once when nothing was written since the last flush.  Concurrent appends are
        fine: whatever they add after the end offset sampled here is left for the next flush.
        """
        target, truncations = self.log_end_offset, self._truncations
        if target == self._recovery_point and not any(s.dirty for s in self._segments):
            return
        if not self._each_segment_locked(Segment.flush, self._epochs.sync):
            return
        self.fsyncs += 1
        if truncations == self._truncations:
            self._recovery_point = max(self._recovery_point, target)

    def sync_data(self) -> None:
        """fdatasync every segment's unsynced data here: appends made before this call survive a
        power cut (worker-thread safe).  The broker syncs the same way in its sync process
        (``begin_data_sync``)."""
        started = self.begin_data_sync()
        if started is None:
            return
        error: OSError | None = None
        try:
            for fd in started.descriptors:
                os.fdatasync(fd)
        except OSError as exc:
            error = exc
        finally:
            started.close()
        self.end_data_sync(started, error)

    def begin_data_sync(self) -> DataSync | None:
        """Descriptors of every segment with data not yet fdatasynced, for a sync made anywhere
        (``end_data_sync`` records it); None if the log is closed.  The ack path of
        ``flush.messages``: indexes are not synced and the recovery point does not move, so
        recovery rebuilds indexes past it; a later ``flush`` (see ``synced_past_recovery_point``)
        moves it.  A log that is offline, or cannot give its descriptors and goes offline,
        raises: an ack waiting for this sync must not succeed.
        """
        target, truncations = self.log_end_offset, self._truncations
        descriptors: list[int] = []

        def collect(segment: Segment) -> None:
            fd = segment.data_to_sync()
            if fd is not None:
                descriptors.append(fd)

        try:
            if not self._each_segment_locked(collect):
                return None
        except KafkaStorageError:
            DataSync(target, truncations, descriptors, []).close()
            raise
        return DataSync(target, truncations, descriptors, [receipt(fd) for fd in descriptors])

    def end_data_sync(self, started: DataSync, error: OSError | None) -> None:
        """The sync of ``started``'s descriptors completed, or failed with ``error`` (then the
        log goes offline and this raises ``KafkaStorageError``)."""
        if error is not None:
            raise self.went_offline(error) from error
        for synced in started.receipts:
            confirm(synced)
        self.fsyncs += 1
        if started.truncations == self._truncations:
            self._data_synced_to = max(self._data_synced_to, started.target)

    def _each_segment_locked(
        self, action: Callable[[Segment], None], then: Callable[[], None] | None = None
    ) -> bool:
        """Apply ``action`` (a sync, or taking what to sync) to every segment, then call
        ``then``, under the lock; False if the log is closed.  A log that is offline, or fails
        and goes offline, raises: an ack waiting for this sync must not succeed.

        ``flush`` also makes the leader epoch cache durable: the recovery point it moves is
        where recovery stops assigning epochs from batch headers."""
        with self._lock:
            if self._closed:
                return False
            self._check_online()
            try:
                for segment in list(self._segments):
                    action(segment)
                if then is not None:
                    then()
            except OSError as exc:
                raise self.went_offline(exc) from exc
            return True

    @property
    def synced_offset(self) -> int:
        """Every offset below this has its data fdatasynced (indexes maybe not)."""
        return max(self._data_synced_to, self._recovery_point)

    @property
    def synced_past_recovery_point(self) -> bool:
        """Data was fdatasynced beyond the recovery point: a full ``flush`` would move it."""
        return self._data_synced_to > self._recovery_point

    def checkpoint(self) -> None:
        """Persist log start and recovery point if they changed (the broker calls this periodically;
        Kafka's log.flush.offset.checkpoint.interval.ms); a later recovery then scans less."""
        if self.is_online:
            try:
                self._write_checkpoint(clean_shutdown=self._clean_on_disk)
            except OSError as exc:
                raise self.went_offline(exc) from exc

    @property
    def needs_unclean_mark(self) -> bool:
        """The checkpoint on disk still says "clean shutdown": the next append first rewrites
        it, durably (see ``mark_unclean``)."""
        return self._clean_on_disk and self._offline is None and not self._closed

    def mark_unclean(self) -> None:
        """Durably mark the checkpoint unclean now, as the next append would (worker-thread safe).

        Why: the first append to a log after its creation or a clean start costs a durable
        checkpoint write (two fsyncs), so a request to thousands of such partitions would wait
        for thousands of them one after another on the event loop; the broker does them in
        worker threads, several at once, before appending. An OSError is raised to the caller
        and changes nothing: the append then tries again and takes the log offline if it fails.
        """
        if self._clean_on_disk:
            self._write_checkpoint(clean_shutdown=False)

    def _write_checkpoint(self, clean_shutdown: bool, durable: bool = True) -> None:
        with self._checkpoint_lock:
            replicated = self._replicated_hw
            checkpoint = PartitionCheckpoint(
                self._log_start_offset,
                self._recovery_point,
                clean_shutdown,
                self.first_dirty_offset,
                -1 if replicated is None else replicated,
            )
            if checkpoint != self._checkpointed:
                checkpoint.write(self.directory, durable=durable)
                self._checkpointed = checkpoint
                self._clean_on_disk = clean_shutdown

    def in_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """Whether this producer instance has a transaction open here (Kafka's leader verifies
        a transactional write with the coordinator only when it has not)."""
        entry = self._producers.entries.get(producer_id)
        return entry is not None and entry.epoch == producer_epoch and entry.current_txn_first_offset >= 0

    def active_producers(self) -> list[ProducerEntry]:
        """The producers this partition remembers, with their open transaction's first offset
        (``current_txn_first_offset``, -1 if none) and coordinator epoch (DescribeProducers)."""
        return list(self._producers.entries.values())

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> None:
        """Forget idle idempotent producers (the broker's producer.id.expiration.ms task)."""
        self._producers.remove_expired(now_ms, expiration_ms)

    # ----------------------------------------------------------------------------------------
    # Compaction (the policy is in ``log.cleaner``; these are the log's side of it)

    def begin_cleaning(self) -> bool:
        """Claim the log for one cleaning pass; False if it is offline, closed or already claimed."""
        if self._cleaning or not self.is_online:
            return False
        self._cleaning = True
        # The cleaner's worker thread reads these: the main thread must not evict them meanwhile.
        self._pinned_for_cleaning = list(self._segments)
        for segment in self._pinned_for_cleaning:
            segment.pin()
        return True

    def last_offsets_of_producers(self) -> dict[int, int]:
        """Producer id -> last offset it wrote: batches the cleaner keeps (maybe empty) so that
        idempotent producer state can still be rebuilt from the log."""
        return {
            pid: entry.batches[-1].last_offset
            for pid, entry in self._producers.entries.items()
            if entry.batches
        }

    def replace_segments(self, old: Sequence[Segment], cleaned: Segment) -> bool:
        """Swap a fsynced ``.cleaned`` segment in for ``old`` (Kafka's replaceSegments).

        The rename to ``.swap`` is the commit point: after it a crash completes the swap at
        start-up (``log.swap``), before it the old segments stay.  Returns False (and discards
        ``cleaned``) if the log was closed meanwhile.
        """
        if not self.is_online or self.cleaning_aborted.is_set():
            cleaned.delete()
            return False
        try:
            cleaned.rename(SWAP)
            sync_directory(self.directory)
            with self._lock:
                first = self._segments.index(old[0])
                self._segments[first : first + len(old)] = [cleaned]
                self._bases[first : first + len(old)] = [cleaned.base_offset]
            self._retire(old, self.clock())
            cleaned.release()
            cleaned.rename("")
            sync_directory(self.directory)
        except OSError as exc:
            raise self.went_offline(exc) from exc
        return True

    def end_cleaning(self, first_dirty_offset: int | None) -> None:
        """Release the log after a pass; ``first_dirty_offset`` is where the next pass starts
        (None when the pass did not finish).  Removals deferred during the pass happen now."""
        self._cleaning = False
        for segment in self._pinned_for_cleaning:
            segment.unpin()
        self._pinned_for_cleaning = []
        if self.cleaning_aborted.is_set():  # a truncation ran meanwhile: the pass's end is stale
            self.cleaning_aborted.clear()
            first_dirty_offset = None
        if not self.is_online:
            return
        try:
            if first_dirty_offset is not None:
                self.first_dirty_offset = first_dirty_offset
                self._write_checkpoint(clean_shutdown=False)
            self._delete_segments_below_log_start()
        except OSError as exc:
            raise self.went_offline(exc) from exc

    # ----------------------------------------------------------------------------------------
    # Lifetime

    @property
    def is_online(self) -> bool:
        """Neither closed nor taken offline by a disk error."""
        return self._offline is None and not self._closed

    def _check_online(self) -> None:
        if self._offline is not None:
            raise KafkaStorageError(f"{self.directory} is offline after a disk error: {self._offline}")
        if self._closed:
            raise KafkaStorageError(f"{self.directory} is closed")

    def went_offline(self, exc: Exception, path: str | None = None) -> KafkaStorageError:
        """Take the partition offline after a disk error (also from the cleaner's thread): every
        later call answers KAFKA_STORAGE_ERROR until ``reopen_after_disk_error`` and
        ``adopt_recovered`` bring it back (Kafka needs a restart; a full disk is often freed).

        Logged at ERROR with the errno and the file (``path`` when the OSError names none) once
        per change of state; further errors while offline only at DEBUG.
        """
        description = describe_os_error(exc, path or self.directory)
        if self._offline is None:
            logger.error("%s: disk error, taking the partition offline: %s", self.directory, description)
        else:
            logger.debug("%s: another disk error while offline: %s", self.directory, description)
        self._offline = KafkaStorageError(f"I/O error in {self.directory}: {description}")
        return self._offline

    def reopen_after_disk_error(self) -> LoadedLog | None:
        """Worker thread: if this log is offline, check that its disk takes writes again and
        load its files exactly as at start-up (``log.loader``: a torn tail left by the failed
        write is cut off, indexes and producer state are rebuilt).  Returns the loaded state for
        ``adopt_recovered``, or None when there is nothing to do; raises OSError or LogError
        while the disk still fails.

        Holds the lock throughout so that a concurrent ``close`` or ``delete`` (which mark the
        log closed under it) cannot interleave with files being reopened.
        """
        with self._lock:
            if self._offline is None or self._closed or self._cleaning:
                return None
            probe_writable(self.directory)
            return load(self.directory, self.config, self.clock())

    def adopt_recovered(self, recovered: LoadedLog) -> bool:
        """Trio thread: take over the segments and state of ``recovered`` and come back online.

        False (and ``recovered`` discarded) if the log was closed or deleted meanwhile.  The old
        descriptors are closed; fetches already under way hold duplicates of them.
        """
        with self._lock:
            adopted = self._offline is not None and not self._closed
            if adopted:
                stale = self._segments + [segment for _, segment in self._deleted]
                self._start_from(recovered)  # the deleted ones' files went with the recovery
                self.release_descriptors()  # opened by the worker thread: hand them over
            else:
                stale = recovered.segments
        close_all(stale)
        if adopted:
            logger.warning(
                "%s: back online after a disk error, log end offset %d", self.directory, self.log_end_offset
            )
        return adopted

    def release_descriptors(self) -> None:
        """Close every descriptor of a log a worker thread opened and nobody else uses yet;
        files reopen on use (``log.open_files``)."""
        for segment in self._segments:
            segment.release()

    def _stop_cleaner(self) -> None:
        """Ask a running cleaner thread to stop and wait until it no longer reads our files."""
        self.closing.set()
        with self.cleaning_lock:
            pass

    def close(self) -> None:
        """Clean shutdown: fsync, snapshot producer state, mark the checkpoint clean, close files.

        File descriptors are closed even when the disk fails on the way; the log is then left
        marked unclean and is recovered at the next open.  A log not written since it was opened
        clean is still clean on disk and needs none of this (a broker with many idle partitions
        shuts down in seconds).
        """
        if self._closed:
            return
        self._stop_cleaner()
        try:
            if self._offline is None and self._clean_on_disk:
                # Nothing appended since a clean open, but the cleaner or retention may have
                # moved the first dirty offset or the log start: written only if they did.
                self._write_checkpoint(clean_shutdown=True)
            elif self._offline is None:
                self.flush()
                self._segments[-1].seal()
                for segment in self._segments:
                    segment.flush()
                write_snapshot(self.directory, self.log_end_offset, self._producers, durable=True)
                self._recovery_point = self.log_end_offset
                self._write_checkpoint(clean_shutdown=True)
        except OSError as exc:
            raise self.went_offline(exc) from exc
        finally:
            with self._lock:
                self._closed = True
                for segment in self._segments:
                    segment.close()
            self.purge_deleted_segments(LONG_MAX)

    def delete(self) -> None:
        """Remove the partition: close files, rename the directory to ``*-delete``, remove it.

        The rename (as Kafka does, ``log.deletion``) makes the deletion atomic from the broker's
        point of view: a crash mid-way leaves a ``-delete`` directory that ``LogManager`` removes
        at start-up.
        """
        self._stop_cleaner()
        with self._lock:
            self._closed = True
            for segment in self._segments:
                segment.close()
        for _, segment in self._deleted:
            segment.close()
        delete_partition_directory(self.directory)
