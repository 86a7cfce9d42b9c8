"""Reading a partition log: fetches as file ranges for ``os.sendfile``, read_committed fetches
with the aborted transactions they overlap, and offset lookups by timestamp (Kafka's
LocalLog.read, UnifiedLog.collectAbortedTransactions and fetchOffsetByTimestamp).

A read returns whole batches from the one holding the requested offset, within one segment as
Kafka's do (the client simply fetches again), and stops at a limit the high watermark gives
(``log.high_watermark``): consumers never see what they could lose.
"""

from __future__ import annotations

from typing import NamedTuple

from log.availability import Availability
from log.errors import OffsetOutOfRangeError
from log.high_watermark import HighWatermark
from log.local_log import LocalLog, SyncMark
from log.open_files import LazyFile
from log.segment import Segment
from log.transaction_state import TransactionState
from log.txn_index import AbortedTxn
from wire.record_batch import BatchInfo, Record, decode_records


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


class CommittedRead(NamedTuple):
    """What a read_committed fetch gets: ``read_slices`` below the last stable offset, and
    (producer id, first offset) of every aborted transaction overlapping them."""

    slices: list[FileSlice]
    aborted: list[tuple[int, int]]


class LogReader:
    """The reads of one log."""

    def __init__(
        self,
        local: LocalLog,
        high_watermark: HighWatermark,
        transactions: TransactionState,
        availability: Availability,
    ) -> None:
        self._local = local
        self._high_watermark = high_watermark
        self._transactions = transactions
        self._availability = availability

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
            raise self._availability.went_offline(exc) from exc

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
        stable = self._transactions.last_stable_offset
        high_watermark = self._high_watermark
        try:
            limit = (
                high_watermark.visible_limit()
                if stable == high_watermark.offset
                else self._local.mark_at(stable)
            )
            located = self._locate(offset, max_bytes, limit)
            if located is None:
                return CommittedRead([], [])
            segment, start, end = located
            slices = [FileSlice(segment.log_file, start, end - start)]
            segments = self._local.segments
            first = segments.index(segment)
            if not any(s.txn_index.entries for s in segments[first:]):
                return CommittedRead(slices, [])  # no abort since: skip reading a header
            return CommittedRead(slices, self.aborted_transactions(offset, segment.offset_at(end)))
        except OSError as exc:
            raise self._availability.went_offline(exc) from exc

    def _read_limit(self, upto: int | None) -> SyncMark | None:
        """Where a read stops: the high watermark, or ``upto`` (see ``read_slices``)."""
        high_watermark = self._high_watermark
        try:
            return high_watermark.visible_limit() if upto is None else high_watermark.limit_at(upto)
        except OSError as exc:
            raise self._availability.went_offline(exc) from exc

    def _locate(self, offset: int, max_bytes: int, limit: SyncMark | None) -> tuple[Segment, int, int] | None:
        """Where the batches to read from ``offset`` are: nothing at or past ``limit`` (the
        log end when None)."""
        self._availability.check_online()
        local = self._local
        end_offset = local.log_end_offset
        if not local.log_start_offset <= offset <= end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{local.log_start_offset}, {end_offset}] in {local.directory}"
            )
        if offset >= (end_offset if limit is None else limit.offset):
            return None
        try:
            for segment in local.segments[local.index_for(offset) :]:
                batch = segment.find_batch(offset)
                if batch is not None:
                    end = segment.batches_end(batch.position, max_bytes)
                    if limit is not None and limit.segment is segment:
                        end = min(end, limit.position)
                    return (segment, batch.position, end) if end > batch.position else None
        except OSError as exc:
            raise self._availability.went_offline(exc) from exc
        return None

    # ----------------------------------------------------------------------------------------
    # Aborted transactions

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
        local = self._local
        try:
            for segment in local.segments[local.index_for(fetch_offset) :]:
                txns, complete = segment.txn_index.collect(fetch_offset, upper_bound_offset)
                found += txns
                if complete:
                    break
        except OSError as exc:
            raise self._availability.went_offline(exc) from exc
        return found

    # ----------------------------------------------------------------------------------------
    # Timestamps

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record at or after ``timestamp``, else None.

        The first segment whose max timestamp reaches the target is searched with its time
        index, then its batches' max timestamps, then the records of one batch -- correct with
        out-of-order timestamps because every structure holds running maxima.
        """
        self._availability.check_online()
        start = self._local.log_start_offset
        for segment in list(self._local.segments):
            if segment.max_timestamp < timestamp or segment.next_offset <= start:
                continue
            hint = max(segment.time_index.lookup(timestamp).offset, start, segment.base_offset)
            first = segment.find_batch(hint)
            if first is None:
                continue
            for batch in segment.walk(first.position):
                if batch.max_timestamp >= timestamp and batch.last_offset >= start:
                    for record in _records_of(segment, batch):
                        if record.timestamp >= timestamp and record.offset >= start:
                            return record.offset, record.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with the largest timestamp (ListOffsets -3)."""
        self._availability.check_online()
        best = max(self._local.segments, key=lambda s: s.max_timestamp)  # first of equal maxima
        if best.max_timestamp < 0:
            return None
        batch = best.find_batch(best.offset_of_max_timestamp)
        if batch is not None:
            for record in _records_of(best, batch):
                if record.timestamp == best.max_timestamp:
                    return record.offset, record.timestamp
        return None


def _records_of(segment: Segment, batch: BatchInfo) -> list[Record]:
    data = segment.read(batch.position, batch.end_position)
    return decode_records(data, batch._replace(position=0))
