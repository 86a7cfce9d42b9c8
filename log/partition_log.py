"""One partition's log: an ordered list of segments, offsets, producer state and durability.

Threading model: every method runs on the broker's trio thread except ``flush`` and
``sync_data``, which the broker calls from a worker thread so fsync never blocks the event loop, and the cleaner's
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
segment the abort marker lands in).  Recovery rebuilds those entries for the segments it
re-validates while it replays producer state, which alone knows the open transactions.

Not done yet: truncation (replication).
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
from collections.abc import Callable, Sequence
from typing import NamedTuple

from log.checkpoint import PartitionCheckpoint, write_atomically
from log.clock import Clock, wall_clock_ms
from log.config import LONG_MAX, LogConfig
from log.deletion import delete_partition_directory
from log.disk_error_report import describe_os_error
from log.errors import KafkaStorageError, MessageTooLargeError, OffsetOutOfRangeError
from log.loader import Found, close_all, load_files, segment_name_offset
from log.open_files import LazyFile
from log.producer_state import CompletedTxn, PlacedBatch, ProducerEntry, ProducerStateManager
from log.retention import SegmentFacts, segments_to_delete
from log.segment import Segment
from log.storage_probe import probe_writable
from log.swap import DELETED, SWAP
from log.sync_ledger import remove, sync_directory
from log.txn_index import AbortedTxn
from wire.control_batch import ControlType, EndTxnMarker, encode_end_txn_marker, read_end_txn_marker
from wire.record_batch import (
    BatchInfo,
    InvalidRecordError,
    RecordBatchError,
    decode_records,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)

logger = logging.getLogger(__name__)

_SNAPSHOT_SUFFIX = ".snapshot"
_SNAPSHOTS_KEPT = 2


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
        self,
        directory: str,
        config: LogConfig,
        segments: list[Segment],
        log_start_offset: int,
        clock: Clock = wall_clock_ms,
    ) -> None:
        self.directory = directory
        self.config = config
        self.clock = clock
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._log_start_offset = log_start_offset
        self._recovery_point = 0
        self._data_synced_to = 0  # offsets below this are fdatasynced (``sync_data``)
        self._last_append: SyncMark | None = None  # where the newest append starts
        # Appends whose acknowledgement waits for a sync stay invisible to consumers until it is
        # done (the high watermark stops at the first of them), as Kafka moves its high watermark
        # only after the flush an append triggered: nothing read can vanish in a power cut.
        self._hidden: SyncMark | None = None
        self._hidden_until = 0
        self._producers = ProducerStateManager()
        # Transactions a marker ended that the high watermark has not passed yet: still
        # undecided for consumers (Kafka's unreplicated transactions), see ``last_stable_offset``.
        self._undecided: list[CompletedTxn] = []
        self._lock = threading.Lock()
        self._offline: KafkaStorageError | None = None
        self._closed = False
        self._checkpointed: PartitionCheckpoint | None = None
        # The event loop and ``mark_unclean``'s worker threads both write the checkpoint.
        self._checkpoint_lock = threading.Lock()
        self._clean_on_disk = False  # the checkpoint on disk says clean: appends must say otherwise
        self._deleted: list[tuple[int, Segment]] = []  # (delete files at ms, segment)
        self._cleaning = False
        self._pinned_for_cleaning: list[Segment] = []
        # Held by the cleaner's worker thread while it reads segments; ``closing`` asks it to stop.
        self.cleaning_lock = threading.Lock()
        self.closing = threading.Event()
        self.first_dirty_offset = 0
        self.fsyncs = 0  # flushes that found something to fsync (group commit makes this small)

    # ----------------------------------------------------------------------------------------
    # Opening and recovery

    @classmethod
    def open(cls, directory: str, config: LogConfig, clock: Clock = wall_clock_ms) -> PartitionLog:
        """Open (or create) the log in ``directory``, recovering it if it was not closed cleanly
        (``log.loader``: after an unclean shutdown every segment from the one holding the
        checkpointed recovery point onwards is validated batch by batch and cut at the first
        invalid batch); the recovered data is fsynced before the log serves."""
        log, found = cls._load(directory, config, clock)
        if found == "new":
            # DEBUG: one CreateTopics may make 10,000 of these; the request itself is the news.
            logger.debug("%s: created a new log", log.directory)
        elif found == "unclean":
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
        log = cls(directory, config, [], 0, clock)
        log._offline = KafkaStorageError(f"cannot open {directory}: {exc}")
        return log

    @classmethod
    def _load(cls, directory: str, config: LogConfig, clock: Clock) -> tuple[PartitionLog, Found]:
        """``open`` without its report; also says what was found: no log yet, or how it was shut.

        The files are made consistent first (``log.loader``); this builds the log's state on
        them: producers, the flush that makes recovered data durable, the checkpoint.
        """
        directory = os.fspath(directory)
        files = load_files(directory, config, clock())
        checkpoint = files.checkpoint
        try:
            log = cls(directory, config, files.segments, files.log_start_offset, clock)
            log.first_dirty_offset = checkpoint.first_dirty_offset if checkpoint else 0
            log._load_producer_state(files.recovered_from)
            log.flush()  # recovered data becomes durable before the recovery point claims it
            if files.found == "clean":
                # Nothing changed since the clean shutdown: no rewrite now (one durable write per
                # partition made starting many partitions take minutes); ``append`` marks the log
                # unclean before its first write.
                log._checkpointed, log._clean_on_disk = checkpoint, True
            elif files.found == "new":
                # A new, empty log is consistent as it is; if this write is lost in a crash, the
                # next start merely recovers an empty segment.
                log._write_checkpoint(clean_shutdown=True, durable=False)
            else:
                log._write_checkpoint(clean_shutdown=False)
        except BaseException:
            close_all(files.segments)  # a failed (re)open must not leak descriptors
            raise
        return log, files.found

    def _load_producer_state(self, recovered_from: int | None) -> None:
        """Newest intact snapshot at or below the log end, then replay of the later batches.

        The snapshot must also be at or below the first segment recovery re-validated
        (``recovered_from``), as Kafka's loader rebuilds producer state from each recovered
        segment's start: replaying those segments is what rebuilds their aborted-transaction
        indexes.
        """
        end = self.log_end_offset
        usable = end if recovered_from is None else min(end, recovered_from)
        replay_from = self._segments[0].base_offset
        for offset in reversed(self._snapshot_offsets()):
            path = self._snapshot_path(offset)
            if offset > end:
                remove(path)
                continue
            if offset > usable:
                continue
            try:
                with open(path, "rb") as file:
                    self._producers = ProducerStateManager.from_snapshot(file.read())
            except (OSError, ValueError) as exc:
                logger.warning("%s: ignoring producer state snapshot %s: %s", self.directory, path, exc)
                continue
            replay_from = max(offset, replay_from)
            break
        self._replay(replay_from)

    def _replay(self, offset: int) -> None:
        """Apply every batch from ``offset`` on to producer state: data batches from their
        headers, markers from their record; aborts land in recovered segments' indexes."""
        first = max(0, bisect.bisect_right(self._bases, offset) - 1)
        for segment in self._segments[first:]:
            start = segment.find_batch(offset)
            if start is None:
                continue
            for batch in segment.walk(start.position):
                placed = PlacedBatch(batch, batch.base_offset, batch.last_offset, batch.max_timestamp)
                if not batch.is_control:
                    self._producers.replay(placed)
                    continue
                completed = self._producers.replay(placed, self._marker_of(segment, batch))
                if completed is not None and completed.aborted and segment.recovered:
                    segment.txn_index.append(self._aborted_entry(completed))

    def _marker_of(self, segment: Segment, batch: BatchInfo) -> EndTxnMarker | None:
        """The transaction marker in a stored control batch; None (logged) if it is unreadable,
        which leaves producer state as it was rather than the partition unopenable."""
        data = segment.read(batch.position, batch.end_position)
        try:
            return read_end_txn_marker(data, batch._replace(position=0))
        except RecordBatchError as exc:
            logger.warning(
                "%s: ignoring the control batch at offset %d: %s", self.directory, batch.base_offset, exc
            )
            return None

    def _aborted_entry(self, completed: CompletedTxn) -> AbortedTxn:
        """The index entry of an abort: its stable offset is the first offset of another
        producer's open transaction, else the one after the marker (Kafka's
        lastStableOffset(completedTxn))."""
        first_open = self._producers.first_open_offset(excluding=completed.producer_id)
        stable = first_open if first_open >= 0 else completed.last_offset + 1
        return AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset, stable)

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
        their acknowledgement needs (``hide_last_append_until_synced``)."""
        return self._hidden.offset if self._hidden is not None else self.log_end_offset

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
        self._write(data, placed[0].first_offset, last_offset, max_timestamp, offset_of_max_timestamp, now_ms)
        self._producers.apply(updated_producers)
        return AppendInfo(placed[0].first_offset, last_offset, log_append_time, self._log_start_offset)

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
                segment = self._roll(now_ms)
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
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
            timestamp=now_ms,
            base_offset=offset,
            partition_leader_epoch=leader_epoch,
        )
        segment = self._write(memoryview(batch), offset, offset, now_ms, offset, now_ms)
        if completed is not None:
            if completed.aborted:
                try:
                    segment.txn_index.append(self._aborted_entry(completed))
                except OSError as exc:
                    raise self.went_offline(exc, segment.txn_index.path) from exc
            self._undecided.append(completed)
        self._producers.apply(updated)
        return AppendInfo(offset, offset, -1, self._log_start_offset)

    def _roll(self, now_ms: int) -> Segment:
        """Start a new segment at the log end; snapshot producer state there, as Kafka does."""
        self._segments[-1].seal()
        segment = Segment.create(self.directory, self.log_end_offset, self.config, now_ms)
        self._segments.append(segment)
        self._bases.append(segment.base_offset)
        self._write_snapshot(durable=False)
        return segment

    # ----------------------------------------------------------------------------------------
    # Read

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one holding ``offset``, up to ``max_bytes`` but at least one.

        Reads stay within one segment, as Kafka's do; the client simply fetches again, and stop
        at the high watermark.  An offset at or past it (up to the log end) gives ``b""``; outside
        [log start, log end] raises ``OffsetOutOfRangeError``.
        """
        located = self._locate(offset, max_bytes, self._hidden)
        if located is None:
            return b""
        segment, start, end = located
        try:
            return segment.read(start, end)
        except OSError as exc:
            raise self.went_offline(exc) from exc

    def read_slices(self, offset: int, max_bytes: int) -> list[FileSlice]:
        """``read`` as file ranges for ``os.sendfile``; use before yielding to other tasks."""
        located = self._locate(offset, max_bytes, self._hidden)
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
            limit = self._hidden if stable == self.high_watermark else self._mark_at(stable)
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
        if self._hidden is not None:  # keep what consumers cannot see yet, as Kafka's high watermark bound
            count = min(count, bisect.bisect_right(self._bases, self._hidden.offset) - 1)
        if not count:
            return 0
        try:
            if count == len(self._segments):
                self._roll(now_ms)
            doomed = self._segments[:count]
            self._log_start_offset = max(self._log_start_offset, self._segments[count].base_offset)
            self._write_checkpoint(clean_shutdown=False)
            self._remove_segments(doomed, now_ms)
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
    # Durability

    def flush(self) -> None:
        """fsync everything written so far and advance the recovery point (worker-thread safe).

        Returns at once when nothing was written since the last flush.  Concurrent appends are
        fine: whatever they add after the end offset sampled here is left for the next flush.
        """
        target = self.log_end_offset
        if target == self._recovery_point and not any(s.dirty for s in self._segments):
            return
        if self._sync_segments(Segment.flush):
            self._recovery_point = max(self._recovery_point, target)

    def sync_data(self) -> None:
        """fdatasync every segment's unsynced data: appends made before this call survive a power
        cut (worker-thread safe).  The ack path of ``flush.messages``: indexes are not synced and
        the recovery point does not move, so recovery rebuilds indexes past it; a later
        ``flush`` (see ``synced_past_recovery_point``) moves it.
        """
        target = self.log_end_offset
        if self._sync_segments(Segment.sync_data):
            self._data_synced_to = max(self._data_synced_to, target)

    def _sync_segments(self, sync: Callable[[Segment], None]) -> bool:
        """Apply ``sync`` to every segment under the lock; False if the log is closed.  A log
        that is offline, or fails the sync and goes offline, raises: an ack waiting for this
        sync must not succeed."""
        with self._lock:
            if self._closed:
                return False
            self._check_online()
            try:
                for segment in list(self._segments):
                    sync(segment)
            except OSError as exc:
                raise self.went_offline(exc) from exc
            self.fsyncs += 1
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
            checkpoint = PartitionCheckpoint(
                self._log_start_offset, self._recovery_point, clean_shutdown, self.first_dirty_offset
            )
            if checkpoint != self._checkpointed:
                checkpoint.write(self.directory, durable=durable)
                self._checkpointed = checkpoint
                self._clean_on_disk = clean_shutdown

    def active_producers(self) -> list[ProducerEntry]:
        """The producers this partition remembers, with their open transaction's first offset
        (``current_txn_first_offset``, -1 if none) and coordinator epoch (DescribeProducers)."""
        return list(self._producers.entries.values())

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> None:
        """Forget idle idempotent producers (the broker's producer.id.expiration.ms task)."""
        self._producers.remove_expired(now_ms, expiration_ms)

    # ----------------------------------------------------------------------------------------
    # Producer state snapshots

    def _snapshot_path(self, offset: int) -> str:
        return os.path.join(self.directory, f"{offset:020d}{_SNAPSHOT_SUFFIX}")

    def _snapshot_offsets(self) -> list[int]:
        offsets = (segment_name_offset(n, _SNAPSHOT_SUFFIX) for n in os.listdir(self.directory))
        return sorted(o for o in offsets if o is not None)

    def _write_snapshot(self, durable: bool) -> None:
        """Snapshot producer state at the log end and keep only the newest few snapshots."""
        write_atomically(
            self._snapshot_path(self.log_end_offset), self._producers.to_snapshot(), durable=durable
        )
        for offset in self._snapshot_offsets()[:-_SNAPSHOTS_KEPT]:
            remove(self._snapshot_path(offset))

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
        if not self.is_online:
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

    def reopen_after_disk_error(self) -> PartitionLog | None:
        """Worker thread: if this log is offline, check that its disk takes writes again and
        recover its files exactly as at start-up (a torn tail left by the failed write is cut
        off, indexes and producer state are rebuilt).  Returns the recovered log for
        ``adopt_recovered``, or None when there is nothing to do; raises OSError or LogError
        while the disk still fails.

        Holds the lock throughout so that a concurrent ``close`` or ``delete`` (which mark the
        log closed under it) cannot interleave with files being reopened.
        """
        with self._lock:
            if self._offline is None or self._closed or self._cleaning:
                return None
            probe_writable(self.directory)
            recovered, _ = PartitionLog._load(self.directory, self.config, self.clock)
            return recovered

    def adopt_recovered(self, recovered: PartitionLog) -> bool:
        """Trio thread: take over the segments and state of ``recovered`` and come back online.

        False (and ``recovered`` discarded) if the log was closed or deleted meanwhile.  The old
        descriptors are closed; fetches already under way hold duplicates of them.
        """
        with self._lock:
            adopted = self._offline is not None and not self._closed
            if adopted:
                stale = self._segments + [segment for _, segment in self._deleted]
                self._segments, self._bases = recovered._segments, recovered._bases
                self._log_start_offset = recovered._log_start_offset
                self._recovery_point = recovered._recovery_point
                self._producers = recovered._producers
                self._undecided = recovered._undecided
                self._checkpointed = recovered._checkpointed
                self._clean_on_disk = recovered._clean_on_disk
                self.first_dirty_offset = recovered.first_dirty_offset
                self._deleted = []  # their files went with the recovery (``log.swap``)
                self._offline = None
                self.release_descriptors()  # opened by the worker thread: hand them over
            else:
                stale = recovered._segments
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
                self._write_snapshot(durable=True)
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
