"""One partition's log: an ordered list of segments, offsets, producer state and durability.

This is the live log, and the one object the broker, the cleaner and the coordinators use; it
is built from components that split it as Kafka's storage module splits UnifiedLog, each
given only the parts of the log it works on:

- ``log.local_log``: the segments in offset order, log start, log end, recovery point, rolling
  and removing segments (Kafka's LocalLog);
- ``log.high_watermark``: what consumers may read up to, and where in the files reads stop;
- ``log.appender``: appends from clients, from a leader (follower side) and transaction markers;
- ``log.reader``: fetches, read_committed fetches, offsets by timestamp;
- ``log.transaction_state``: producer state and the last stable offset;
- ``log.flusher`` and ``log.checkpoint_writer``: fsyncs, the recovery point, the checkpoint;
- ``log.log_start``: DeleteRecords and retention;
- ``log.truncation``: a follower's truncation and OffsetForLeaderEpoch's answers;
- ``log.cleaning_claim``: the log's side of compaction;
- ``log.availability``: closed, or offline after a disk error.

This module keeps the whole life of the log: opening it (``log.loader`` does the loading and
recovery, and hands it a ``LoadedLog`` to serve from), going offline after a disk error and
coming back, closing and deleting it.

Threading model: every method runs on the broker's trio thread except ``flush`` (and
``sync_data``), which the broker calls from a worker thread so fsync never blocks the event
loop, the descriptors ``begin_data_sync`` hands out, which the broker's sync process
fdatasyncs (``broker.services.storage.sync_worker``), and the cleaner's
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

Replication (Kafka's follower side, used by ``broker/services/replication/``): ``append_as_follower``
writes batches with the offsets and leader epochs their leader gave them; ``truncate_to`` and
``truncate_fully_and_start_at`` cut a divergent tail or restart the log where the leader's starts;
the leader epoch cache (``log.leader_epochs``) records where each epoch started.  A clustered
partition's high watermark is the one its leader computed (``set_replicated_high_watermark``):
consumers then read below the smaller of it and the sync limit, and followers read past it
(``read_slices(..., upto=...)``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from log.appender import AppendInfo, LogAppender
from log.availability import Availability
from log.checkpoint_writer import CheckpointWriter
from log.cleaning_claim import CleaningClaim
from log.clock import Clock, wall_clock_ms
from log.config import LONG_MAX, LogConfig
from log.deletion import delete_partition_directory
from log.errors import KafkaStorageError
from log.flusher import DataSync, Flusher
from log.high_watermark import HighWatermark
from log.leader_epochs import UNDEFINED_EPOCH, LeaderEpochCache
from log.loader import LoadedLog, close_all, load
from log.local_log import LocalLog, SyncMark
from log.log_start import LogStartMover
from log.producer_state import ProducerEntry
from log.reader import CommittedRead, FileSlice, LogReader
from log.segment import Segment
from log.storage_probe import probe_writable
from log.transaction_state import TransactionState
from log.truncation import Truncator
from log.txn_index import AbortedTxn
from wire.record_batch import BatchInfo

logger = logging.getLogger(__name__)


class PartitionLog:
    """A partition directory of segments (``<topic>-<partition>/``), opened with recovery."""

    def __init__(
        self, directory: str, config: LogConfig, loaded: LoadedLog, clock: Clock = wall_clock_ms
    ) -> None:
        """A log serving from ``loaded`` (``log.loader``): use ``open``, or ``unopenable``."""
        self.directory = directory
        self.clock = clock
        self._availability = availability = Availability(directory, logger)
        self._local = local = LocalLog(directory, config)
        self._high_watermark = high_watermark = HighWatermark(local)
        self._transactions = transactions = TransactionState(local, high_watermark, availability)
        self._checkpoint = checkpoint = CheckpointWriter(local, high_watermark)
        self._flusher = flusher = Flusher(local, availability, loaded.fsyncs)
        self._cleaning = cleaning = CleaningClaim(local, availability, clock)
        self._appender = appender = LogAppender(
            local, high_watermark, transactions, checkpoint, availability, clock
        )
        self._reader = LogReader(local, high_watermark, transactions, availability)
        self._log_start = LogStartMover(
            local, high_watermark, checkpoint, cleaning, appender.roll, availability, clock
        )
        self._truncator = Truncator(
            local, high_watermark, transactions, checkpoint, flusher, cleaning, availability, clock
        )
        # The cleaner's handshake with its worker thread (``log.cleaning_claim``).
        self.cleaning_lock = cleaning.lock
        self.closing = cleaning.closing
        self.cleaning_aborted = cleaning.aborted
        self._start_from(loaded)

    def _start_from(self, loaded: LoadedLog) -> None:
        """Take the state a load left (``log.loader``): at construction, and again when
        ``adopt_recovered`` brings the log back after a disk error, so both take all of it."""
        self._local.start_from(loaded.segments, loaded.log_start_offset, loaded.recovery_point, loaded.epochs)
        self._transactions.start_from(loaded.producers)
        self._high_watermark.replicated = loaded.replicated_high_watermark
        self._checkpoint.start_from(loaded.checkpointed, loaded.clean_on_disk, loaded.first_dirty_offset)
        self._availability.offline = None

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
        log._availability.offline = KafkaStorageError(f"cannot open {directory}: {exc}")
        return log

    # ----------------------------------------------------------------------------------------
    # Offsets and sizes

    @property
    def config(self) -> LogConfig:
        return self._local.config

    @config.setter
    def config(self, config: LogConfig) -> None:
        """AlterConfigs: the next append, roll or retention pass uses ``config``."""
        self._local.config = config

    @property
    def log_start_offset(self) -> int:
        return self._local.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._local.log_end_offset

    @property
    def high_watermark(self) -> int:
        """What consumers may read up to (``log.high_watermark``)."""
        return self._high_watermark.offset

    @property
    def replicated_high_watermark(self) -> int | None:
        return self._high_watermark.replicated

    def set_replicated_high_watermark(self, offset: int | None) -> None:
        """The high watermark replication computed, clamped to [log start, log end]; None for a
        single node.  It is checkpointed with the partition (``checkpoint``, ``close``)."""
        self._high_watermark.set_replicated(offset)

    @property
    def last_stable_offset(self) -> int:
        """What read_committed consumers may read up to (``log.transaction_state``)."""
        return self._transactions.last_stable_offset

    def hide_last_append_until_synced(self) -> None:
        """The newest append waits for a sync: keep it, and all after it, from consumers until
        ``reveal_synced`` is given a mark at or past its end."""
        self._high_watermark.hide_last_append()

    def sync_mark(self) -> SyncMark:
        """The log end as a place in the files, taken before a sync (see ``reveal_synced``)."""
        return self._local.end_mark()

    def reveal_synced(self, mark: SyncMark) -> None:
        """A ``sync_data`` that started after ``sync_mark`` returned ``mark`` has completed:
        consumers may read up to it."""
        self._high_watermark.reveal(mark)

    @property
    def recovery_point(self) -> int:
        """Every offset below this is known to be fsynced."""
        return self._local.recovery_point

    @property
    def size_in_bytes(self) -> int:
        return self._local.size_in_bytes

    @property
    def segment_base_offsets(self) -> tuple[int, ...]:
        return tuple(self._local.bases)

    @property
    def segments(self) -> tuple[Segment, ...]:
        """The segments, oldest first; the last is the active one (read-only view for the cleaner)."""
        return tuple(self._local.segments)

    @property
    def _segments(self) -> list[Segment]:
        """The live list, for tests that simulate a crash by closing its files."""
        return self._local.segments

    @property
    def _deleted(self) -> list[tuple[int, Segment]]:
        """Removed segments awaiting deletion (delete at ms, segment), for the same tests."""
        return self._local.deleted

    # ----------------------------------------------------------------------------------------
    # Append and read (``log.appender``, ``log.reader``)

    def append(
        self, record_set: memoryview, batches: list[BatchInfo], leader_epoch: int, now_ms: int
    ) -> AppendInfo:
        """Assign offsets to validated client batches and write them (``LogAppender.append``)."""
        return self._appender.append(record_set, batches, leader_epoch, now_ms)

    def append_as_follower(self, record_set: memoryview, batches: list[BatchInfo]) -> AppendInfo:
        """Write batches fetched from the leader as they are (``LogAppender.append_as_follower``)."""
        return self._appender.append_as_follower(record_set, batches)

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
        """Write the control batch that ends a transaction here (``LogAppender.append_marker``)."""
        return self._appender.append_marker(
            producer_id, producer_epoch, commit, coordinator_epoch, now_ms, leader_epoch=leader_epoch
        )

    def read(self, offset: int, max_bytes: int, upto: int | None = None) -> bytes:
        """Whole batches from the one holding ``offset`` (``LogReader.read``)."""
        return self._reader.read(offset, max_bytes, upto)

    def read_slices(self, offset: int, max_bytes: int, upto: int | None = None) -> list[FileSlice]:
        """``read`` as file ranges for ``os.sendfile`` (``LogReader.read_slices``)."""
        return self._reader.read_slices(offset, max_bytes, upto)

    def read_committed(self, offset: int, max_bytes: int) -> CommittedRead:
        """``read_slices`` below the last stable offset, with the aborted transactions
        (``LogReader.read_committed``)."""
        return self._reader.read_committed(offset, max_bytes)

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[tuple[int, int]]:
        """(producer id, first offset) of the aborted transactions with data in the range."""
        return self._reader.aborted_transactions(fetch_offset, upper_bound_offset)

    def aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted-transaction index entries overlapping the range (``LogReader.aborted_txns``)."""
        return self._reader.aborted_txns(fetch_offset, upper_bound_offset)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record at or after ``timestamp``, else None."""
        return self._reader.offset_for_timestamp(timestamp)

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with the largest timestamp (ListOffsets -3)."""
        return self._reader.max_timestamp_offset()

    # ----------------------------------------------------------------------------------------
    # Log start (``log.log_start``)

    def delete_records(self, before_offset: int) -> int:
        """Move the log start to ``before_offset`` (DeleteRecords); return the new log start."""
        return self._log_start.delete_records(before_offset)

    def delete_old_segments(self, now_ms: int) -> int:
        """Retention: remove the segments its rules give up; returns how many."""
        return self._log_start.delete_old_segments(now_ms)

    def purge_deleted_segments(self, now_ms: int) -> None:
        """Delete the files of removed segments whose ``file.delete.delay.ms`` has passed."""
        self._local.purge_deleted(now_ms)

    @property
    def next_purge_ms(self) -> int | None:
        """When ``purge_deleted_segments`` next has work, or None."""
        return self._local.next_purge_ms

    # ----------------------------------------------------------------------------------------
    # Leader epochs and truncation (``log.truncation``)

    @property
    def leader_epochs(self) -> LeaderEpochCache:
        """The leader epoch cache (read it; the log keeps it current)."""
        return self._local.epochs

    def end_offset_for_epoch(
        self, requested_epoch: int, current_leader_epoch: int = UNDEFINED_EPOCH
    ) -> tuple[int, int]:
        """(epoch, end offset) of ``requested_epoch`` as OffsetForLeaderEpoch answers it."""
        return self._truncator.end_offset_for_epoch(requested_epoch, current_leader_epoch)

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch holding an offset at or after ``offset``; True if anything was."""
        return self._truncator.truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop the whole log and start it empty at ``offset``."""
        self._truncator.truncate_fully_and_start_at(offset)

    # ----------------------------------------------------------------------------------------
    # Durability (``log.flusher``, ``log.checkpoint_writer``)

    @property
    def fsyncs(self) -> int:
        """Flushes and data syncs that found something to fsync, the open's included."""
        return self._flusher.fsyncs

    def flush(self) -> None:
        """fsync everything written so far and advance the recovery point (worker-thread safe)."""
        self._flusher.flush()

    def sync_data(self) -> None:
        """fdatasync every segment's unsynced data here (worker-thread safe)."""
        self._flusher.sync_data()

    def begin_data_sync(self) -> DataSync | None:
        """Descriptors of every segment with unsynced data, for a sync made anywhere; None if
        the log is closed (``Flusher.begin_data_sync``)."""
        return self._flusher.begin_data_sync()

    def end_data_sync(self, started: DataSync, error: OSError | None) -> None:
        """The sync of ``started``'s descriptors completed, or failed with ``error``."""
        self._flusher.end_data_sync(started, error)

    @property
    def synced_offset(self) -> int:
        """Every offset below this has its data fdatasynced (indexes maybe not)."""
        return self._flusher.synced_offset

    @property
    def synced_past_recovery_point(self) -> bool:
        """Data was fdatasynced beyond the recovery point: a full ``flush`` would move it."""
        return self._flusher.synced_past_recovery_point

    @property
    def first_dirty_offset(self) -> int:
        """Where the cleaner's next pass starts (checkpointed)."""
        return self._checkpoint.first_dirty_offset

    def checkpoint(self) -> None:
        """Persist log start and recovery point if they changed (the broker calls this periodically;
        Kafka's log.flush.offset.checkpoint.interval.ms); a later recovery then scans less."""
        if self.is_online:
            try:
                self._checkpoint.write(clean_shutdown=self._checkpoint.clean_on_disk)
            except OSError as exc:
                raise self.went_offline(exc) from exc

    @property
    def needs_unclean_mark(self) -> bool:
        """The checkpoint on disk still says "clean shutdown": the next append first rewrites
        it, durably (see ``mark_unclean``)."""
        return self._checkpoint.clean_on_disk and self._availability.is_online

    def mark_unclean(self) -> None:
        """Durably mark the checkpoint unclean now, as the next append would (worker-thread
        safe; ``CheckpointWriter.mark_unclean`` says why)."""
        self._checkpoint.mark_unclean()

    # ----------------------------------------------------------------------------------------
    # Producers (``log.transaction_state``)

    def in_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """Whether this producer instance has a transaction open here."""
        return self._transactions.in_transaction(producer_id, producer_epoch)

    def active_producers(self) -> list[ProducerEntry]:
        """The producers this partition remembers (DescribeProducers)."""
        return self._transactions.active_producers()

    def remove_expired_producers(self, now_ms: int, expiration_ms: int) -> None:
        """Forget idle idempotent producers (the broker's producer.id.expiration.ms task)."""
        self._transactions.producers.remove_expired(now_ms, expiration_ms)

    # ----------------------------------------------------------------------------------------
    # Compaction (the policy is in ``log.cleaner``; the log's side in ``log.cleaning_claim``)

    def begin_cleaning(self) -> bool:
        """Claim the log for one cleaning pass; False if it is offline, closed or already claimed."""
        return self._cleaning.begin()

    def last_offsets_of_producers(self) -> dict[int, int]:
        """Producer id -> last offset it wrote: batches the cleaner keeps."""
        return self._transactions.last_offsets_of_producers()

    def replace_segments(self, old: Sequence[Segment], cleaned: Segment) -> bool:
        """Swap a fsynced ``.cleaned`` segment in for ``old``; False if the log was closed or
        the pass stopped meanwhile (``CleaningClaim.replace_segments``)."""
        return self._cleaning.replace_segments(old, cleaned)

    def end_cleaning(self, first_dirty_offset: int | None) -> None:
        """Release the log after a pass; ``first_dirty_offset`` is where the next pass starts
        (None when the pass did not finish).  Removals deferred during the pass happen now."""
        first_dirty_offset = self._cleaning.release(first_dirty_offset)
        if not self.is_online:
            return
        try:
            if first_dirty_offset is not None:
                self._checkpoint.first_dirty_offset = first_dirty_offset
                self._checkpoint.write(clean_shutdown=False)
            self._log_start.remove_segments_below_log_start()
        except OSError as exc:
            raise self.went_offline(exc) from exc

    # ----------------------------------------------------------------------------------------
    # Lifetime

    @property
    def is_online(self) -> bool:
        """Neither closed nor taken offline by a disk error."""
        return self._availability.is_online

    def went_offline(self, exc: Exception, path: str | None = None) -> KafkaStorageError:
        """Take the partition offline after a disk error (``Availability.went_offline``)."""
        return self._availability.went_offline(exc, path)

    def reopen_after_disk_error(self) -> LoadedLog | None:
        """Worker thread: if this log is offline, check that its disk takes writes again and
        load its files exactly as at start-up (``log.loader``: a torn tail left by the failed
        write is cut off, indexes and producer state are rebuilt).  Returns the loaded state for
        ``adopt_recovered``, or None when there is nothing to do; raises OSError or LogError
        while the disk still fails.

        Holds the lock throughout so that a concurrent ``close`` or ``delete`` (which mark the
        log closed under it) cannot interleave with files being reopened.
        """
        availability = self._availability
        with self._local.lock:
            if availability.offline is None or availability.closed or self._cleaning.active:
                return None
            probe_writable(self.directory)
            return load(self.directory, self.config, self.clock())

    def adopt_recovered(self, recovered: LoadedLog) -> bool:
        """Trio thread: take over the segments and state of ``recovered`` and come back online.

        False (and ``recovered`` discarded) if the log was closed or deleted meanwhile.  The old
        descriptors are closed; fetches already under way hold duplicates of them.
        """
        local, availability = self._local, self._availability
        with local.lock:
            adopted = availability.offline is not None and not availability.closed
            if adopted:
                stale = local.segments + [segment for _, segment in local.deleted]
                replicated = self._high_watermark.replicated
                self._start_from(recovered)  # the deleted ones' files went with the recovery
                if replicated is not None and replicated > (recovered.replicated_high_watermark or 0):
                    # The checkpoint's high watermark is older than the one replication set
                    # before the disk failed: consumers must not see it go back.
                    self.set_replicated_high_watermark(replicated)
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
        for segment in self._local.segments:
            segment.release()

    def close(self) -> None:
        """Clean shutdown: fsync, snapshot producer state, mark the checkpoint clean, close files.

        File descriptors are closed even when the disk fails on the way; the log is then left
        marked unclean and is recovered at the next open.  A log not written since it was opened
        clean is still clean on disk and needs none of this (a broker with many idle partitions
        shuts down in seconds).
        """
        availability, local = self._availability, self._local
        if availability.closed:
            return
        self._cleaning.stop_worker()
        try:
            if availability.offline is None and self._checkpoint.clean_on_disk:
                # Nothing appended since a clean open, but the cleaner or retention may have
                # moved the first dirty offset or the log start: written only if they did.
                self._checkpoint.write(clean_shutdown=True)
            elif availability.offline is None:
                self.flush()
                local.segments[-1].seal()
                for segment in local.segments:
                    segment.flush()
                self._transactions.snapshot(durable=True)
                local.recovery_point = local.log_end_offset
                self._checkpoint.write(clean_shutdown=True)
        except OSError as exc:
            raise self.went_offline(exc) from exc
        finally:
            self._close_files()
            local.purge_deleted(LONG_MAX)

    def delete(self) -> None:
        """Remove the partition: close files, rename the directory to ``*-delete``, remove it.

        The rename (as Kafka does, ``log.deletion``) makes the deletion atomic from the broker's
        point of view: a crash mid-way leaves a ``-delete`` directory that ``LogManager`` removes
        at start-up.
        """
        self._cleaning.stop_worker()
        self._close_files()
        for _, segment in self._local.deleted:
            segment.close()
        delete_partition_directory(self.directory)

    def _close_files(self) -> None:
        """Mark the log closed and close its segments, under the lock a running fsync holds."""
        with self._local.lock:
            self._availability.closed = True
            for segment in self._local.segments:
                segment.close()
