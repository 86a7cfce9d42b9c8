"""Log compaction: keep the latest record per key (Kafka's LogCleaner, LogCleanerManager, Cleaner).

A pass over one log, with Kafka's rules:

1. **What may be cleaned.**  Everything before the *first uncleanable offset*: the active
   segment's base, or earlier the first segment whose largest timestamp is younger than
   ``min.compaction.lag.ms``.  The *dirty* part starts at the log's ``first_dirty_offset``
   (where the previous pass stopped, checkpointed).  A log is cleaned when dirty bytes /
   (clean + dirty bytes) exceeds ``min.cleanable.dirty.ratio``, or when a dirty segment's first
   batch is older than ``max.compaction.lag.ms``; the filthiest log goes first.
2. **Offset map.**  key -> last offset, over whole dirty segments; no further segment is
   mapped once it holds ``max_map_keys`` keys (the rest waits for the next pass, as with
   Kafka's fixed-size map).
3. **Cleaning.**  Every segment from the log's first up to the end of the mapped part is
   rewritten, in groups that fit one segment (``segment.bytes``, ``segment.index.bytes``,
   32-bit relative offsets), into one ``.cleaned`` segment per group.  A record stays if it
   has a key and is the latest for it; a tombstone (null value) stays until its batch's
   delete horizon (``delete.retention.ms`` after the pass that first saw it) has passed.
   Batches keep their base offset, ``lastOffsetDelta``, producer fields and codec
   (``log.compacted_batch``); an untouched batch is copied byte for byte.  A batch left
   empty is dropped unless it is its producer's last (idempotence needs its sequence) or it
   ends the cleanable range (its offsets mark where the log was cleaned to).
4. **Swap.**  Each fsynced group is swapped in by ``PartitionLog.replace_segments``
   (``.cleaned`` -> ``.swap`` -> live; see ``log.swap`` for crash recovery).
5. **Transactions.**  Nothing at or past the last stable offset is cleaned (an open
   transaction's outcome is unknown).  Batches of aborted transactions (known from the
   aborted-transaction indexes) put no key in the offset map, so an aborted value never
   shadows a committed one, and are dropped like records compacted away (their header stays
   when it is the producer's last batch or ends the cleanable range).  A transaction marker
   stays while any record of its transaction does; once none does (aborted data dropped,
   committed data compacted away), it is treated as a tombstone, as Kafka's cleaner does: the
   pass that first finds it so gives it a delete horizon (``delete.retention.ms``), and the
   first pass after that drops it, with its abort's index entry (a consumer that read the data
   meanwhile has also read the marker).  Markers that stay carry their index entries over into
   each cleaned segment.

Threading: steps 2 and 3 (``build_offset_map``, ``clean_group``) only read inactive segments
and write ``.cleaned`` files, so the broker runs them in a worker thread; ``begin`` and the
swaps run on the thread that owns the log (``LogCleaner.next_job`` claims it).  ``PartitionLog.close`` stops a running step within
one batch (``closing``) and waits for it (``cleaning_lock``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from log.compacted_batch import delete_horizon, empty_batch, readable_records, rebuild
from log.config import LogConfig
from log.errors import KafkaStorageError, LogError
from log.partition_log import PartitionLog
from log.segment import Segment
from log.swap import CLEANED
from log.txn_index import AbortedTxn
from wire.bounded_decompress import decompressed_limit
from wire.primitives import INT32_MAX
from wire.record_batch import HEADER_SIZE, BatchInfo, CorruptRecordError, parse_batch_header

logger = logging.getLogger(__name__)

# Kafka's default dedupe buffer (128 MiB at 24 bytes an entry, 90% full) holds ~5M keys; a
# Python dict of bytes keys costs several times more per entry, so a pass maps fewer.
MAX_MAP_KEYS = 1_000_000
_READ_CHUNK = 1 << 20


class CleaningAborted(LogError):
    """The log is closing; the pass stops and its ``.cleaned`` files are removed."""


class Cleanable(NamedTuple):
    """Kafka's LogToClean: where a pass would start and stop, and how dirty the log is."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    needs_compaction_now: bool

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.cleanable_bytes
        return self.cleanable_bytes / total if total else 0.0

    def worth_cleaning(self, config: LogConfig) -> bool:
        if self.clean_bytes + self.cleanable_bytes == 0:
            return False
        return (self.needs_compaction_now and self.cleanable_bytes > 0) or (
            self.dirty_ratio > config.min_cleanable_dirty_ratio
        )


def _segment_ends(log: PartitionLog, segments: Sequence[Segment]) -> list[int]:
    """Each segment's end: the next segment's base offset, the log end for the active one."""
    return [s.base_offset for s in segments[1:]] + [log.log_end_offset]


def cleanable_range(log: PartitionLog, now_ms: int) -> Cleanable:
    """Kafka's LogCleanerManager.cleanableOffsets and calculateCleanableBytes."""
    config = log.config
    segments = log.segments
    ends = _segment_ends(log, segments)
    first_dirty = log.first_dirty_offset
    if not log.log_start_offset <= first_dirty <= log.log_end_offset:
        first_dirty = log.log_start_offset  # truncated or never cleaned: start over
    dirty = [s for s, end in zip(segments[:-1], ends, strict=False) if end > first_dirty]
    # Never what consumers cannot see yet (appends waiting for a sync, undecided transactions),
    # as Kafka's bound by the last stable offset (itself at most the high watermark).
    uncleanable = min(segments[-1].base_offset, log.last_stable_offset)
    if config.min_compaction_lag_ms > 0:
        too_young = (s for s in dirty if s.largest_timestamp > now_ms - config.min_compaction_lag_ms)
        uncleanable = min(uncleanable, next(too_young, segments[-1]).base_offset)
    uncleanable = max(first_dirty, uncleanable)
    # Round down to a segment boundary: only whole segments are cleaned.
    uncleanable = max((s.base_offset for s in segments if s.base_offset <= uncleanable), default=0)
    earliest = min((t for s in dirty if (t := s.first_batch_timestamp) > 0), default=None)
    return Cleanable(
        first_dirty,
        uncleanable,
        sum(s.size for s in segments if s.base_offset < first_dirty),
        sum(
            s.size
            for s, end in zip(segments, ends, strict=True)
            if s.base_offset < uncleanable and end > min(first_dirty, uncleanable)
        ),
        earliest is not None and earliest < now_ms - max(config.max_compaction_lag_ms, 0),
    )


def group_segments(
    segments: Sequence[Segment], ends: Sequence[int], config: LogConfig
) -> list[list[Segment]]:
    """Kafka's groupSegmentsBySize: runs of segments whose union fits one segment."""
    groups: list[list[Segment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        log_bytes = segments[i].size
        index_bytes = segments[i].offset_index.size_in_bytes
        time_index_bytes = segments[i].time_index.size_in_bytes
        i += 1
        while i < len(segments):
            candidate = segments[i]
            if (
                log_bytes + candidate.size > config.segment_bytes
                or index_bytes + candidate.offset_index.size_in_bytes > config.segment_index_bytes
                or time_index_bytes + candidate.time_index.size_in_bytes > config.segment_index_bytes
                or (candidate.size and ends[i] - 1 - group[0].base_offset > INT32_MAX)
            ):
                break
            group.append(candidate)
            log_bytes += candidate.size
            index_bytes += candidate.offset_index.size_in_bytes
            time_index_bytes += candidate.time_index.size_in_bytes
            i += 1
        groups.append(group)
    return groups


def _read_batches(segment: Segment, position: int = 0) -> Iterator[tuple[BatchInfo, memoryview]]:
    """Whole batches from ``position`` with the buffer holding each (``BatchInfo.position`` is
    relative to that buffer), read about a MiB at a time."""
    end = segment.size
    while position < end:
        chunk = memoryview(segment.read(position, min(end, position + _READ_CHUNK)))
        used = 0
        while len(chunk) - used >= HEADER_SIZE:
            batch = parse_batch_header(chunk, used)
            if used + batch.size > len(chunk):
                break
            yield batch, chunk
            used += batch.size
        if used == 0:  # a single batch larger than the chunk
            batch = parse_batch_header(chunk, 0)
            if position + batch.size > end:
                raise CorruptRecordError(f"{segment.log_path}: batch at byte {position} runs past the end")
            yield batch, memoryview(segment.read(position, position + batch.size))
            used = batch.size
        position += used


def _discard(cleaned: Segment) -> None:
    """Remove an unfinished ``.cleaned`` segment; start-up removes it if even that fails."""
    try:
        cleaned.delete()
    except OSError as exc:
        logger.warning("cannot remove %s: %s", cleaned.log_path, exc)


class CleaningJob:
    """One pass over one log; see the module docstring for which steps run where."""

    def __init__(self, log: PartitionLog, cleanable: Cleanable, now_ms: int, max_map_keys: int) -> None:
        self.log = log
        self.cleanable = cleanable
        self.now_ms = now_ms
        self.max_map_keys = max_map_keys
        self.producer_last_offsets = log.last_offsets_of_producers()
        # A batch that decompresses past this is kept as it is (log.compacted_batch.readable_records).
        self._decompressed_limit = decompressed_limit(log.config.max_message_bytes)
        self.offset_map: dict[bytes, int] = {}
        # Read on the log's thread: the worker only looks at these copies.
        self.aborted = log.aborted_txns(log.segments[0].base_offset, cleanable.first_uncleanable_offset)
        self._aborted_spans: dict[int, list[tuple[int, int]]] = {}
        for txn in self.aborted:
            self._aborted_spans.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
        # Per producer, whether its transaction being scanned kept a record so far (the scan goes
        # from the log's first batch, so a marker is met after all of its transaction's data).
        self._txn_kept: dict[int, bool] = {}
        self._dropped_markers: set[int] = set()
        self.end_offset = cleanable.first_dirty_offset
        self.groups: list[list[Segment]] = []
        self.bytes_before = 0
        self.bytes_after = 0

    def _check_open(self) -> None:
        if self.log.closing.is_set():
            raise CleaningAborted(f"{self.log.directory} is closing")
        if self.log.cleaning_aborted.is_set():
            raise CleaningAborted(f"{self.log.directory} is being truncated")

    def build_offset_map(self) -> None:
        """Map every key of the dirty segments to its last offset; plan the groups (worker thread)."""
        log = self.log
        with log.cleaning_lock:
            try:
                segments = log.segments
                ends = _segment_ends(log, segments)
                first_dirty, uncleanable = (
                    self.cleanable.first_dirty_offset,
                    self.cleanable.first_uncleanable_offset,
                )
                for segment, end in zip(segments, ends, strict=True):
                    if end <= first_dirty or segment.base_offset >= uncleanable:
                        continue
                    if self.offset_map and len(self.offset_map) >= self.max_map_keys:
                        break
                    for batch, data in _read_batches(
                        segment, segment.offset_index.lookup(first_dirty).position
                    ):
                        self._check_open()
                        if batch.is_control or batch.last_offset < first_dirty or self._is_aborted(batch):
                            continue
                        # Quiet: the rebuild pass meets the same batch and logs it once.
                        readable = readable_records(data, batch, self._decompressed_limit, None)
                        for record in readable[1] if readable else ():
                            if record.key is not None and record.offset >= first_dirty:
                                self.offset_map[record.key] = record.offset
                    self.end_offset = end
                cleaned = [
                    (s, end) for s, end in zip(segments, ends, strict=True) if s.base_offset < self.end_offset
                ]
                self.groups = group_segments([s for s, _ in cleaned], [end for _, end in cleaned], log.config)
            except OSError as exc:
                raise log.went_offline(exc) from exc

    def clean_group(self, group: Sequence[Segment]) -> Segment:
        """Write the group's surviving batches into one fsynced ``.cleaned`` segment (worker thread)."""
        log = self.log
        with log.cleaning_lock:
            self._check_open()
            try:
                cleaned = Segment.create(
                    log.directory, group[0].base_offset, log.config, self.now_ms, CLEANED
                )
            except OSError as exc:
                raise log.went_offline(exc) from exc
            try:
                for segment in group:
                    self.bytes_before += segment.size
                    for batch, data in _read_batches(segment):
                        self._check_open()
                        kept = self._filter(batch, data)
                        if kept is not None:
                            written = parse_batch_header(kept, 0)
                            cleaned.append(
                                memoryview(kept),
                                written.last_offset,
                                written.max_timestamp,
                                written.last_offset,
                                log.config.index_interval_bytes,
                            )
                cleaned.txn_index.write_all(self._aborts_within(group[0].base_offset, cleaned.next_offset))
                cleaned.seal()
                cleaned.flush()
                modified = os.stat(group[-1].log_path).st_mtime_ns  # Kafka keeps the last one's mtime
                os.utime(cleaned.log_path, ns=(modified, modified))
            except (OSError, KafkaStorageError) as exc:
                _discard(cleaned)
                raise log.went_offline(exc) from exc
            except BaseException:
                _discard(cleaned)
                raise
            self.bytes_after += cleaned.size
            return cleaned

    def _filter(self, batch: BatchInfo, data: memoryview) -> bytes | memoryview | None:
        """The batch as it survives cleaning, or None if it goes entirely."""
        whole = data[batch.position : batch.position + batch.size]
        if batch.is_control:
            return self._marker(batch, data, whole)
        if self._is_aborted(batch):
            return self._emptied(batch)
        kept = self._records_kept(batch, data, whole)
        if batch.is_transactional and kept is not None and parse_batch_header(kept, 0).record_count:
            self._txn_kept[batch.producer_id] = True
        return kept

    def _marker(self, batch: BatchInfo, data: memoryview, whole: memoryview) -> bytes | memoryview | None:
        """A transaction marker as it survives (module docstring, rule 5)."""
        data_kept = self._txn_kept.pop(batch.producer_id, False)
        must_stay = batch.next_offset == self.cleanable.first_uncleanable_offset or (
            self.producer_last_offsets.get(batch.producer_id) == batch.last_offset
        )
        if data_kept or must_stay:
            return whole
        horizon = delete_horizon(batch)
        if horizon is not None:
            if self.now_ms < horizon:
                return whole
            self._dropped_markers.add(batch.last_offset)
            return None
        readable = readable_records(data, batch, self._decompressed_limit, str(self.log.directory))
        if readable is None or not readable[1]:
            return whole
        payload, records = readable
        return rebuild(batch, payload, records, self.now_ms + self.log.config.delete_retention_ms)

    def _records_kept(
        self, batch: BatchInfo, data: memoryview, whole: memoryview
    ) -> bytes | memoryview | None:
        """A data batch with only the records compaction keeps, or None if it goes entirely."""
        readable = readable_records(data, batch, self._decompressed_limit, str(self.log.directory))
        if readable is None:
            return whole
        payload, records = readable
        horizon = delete_horizon(batch)
        keep_tombstones = horizon is None or self.now_ms < horizon
        kept = [
            r
            for r in records
            if r.key is not None
            and r.offset >= self.offset_map.get(r.key, -1)
            and (keep_tombstones or not r.tombstone)
        ]
        if kept:
            new_horizon = None
            if horizon is None and any(r.tombstone for r in kept):
                new_horizon = self.now_ms + self.log.config.delete_retention_ms
            if len(kept) == len(records) and new_horizon is None:
                return whole
            return rebuild(batch, payload, kept, new_horizon)
        return self._emptied(batch)

    def _emptied(self, batch: BatchInfo) -> bytes | None:
        """A batch none of whose records stay: its header alone when its offsets must survive
        (its producer's last sequence, or the end of the cleanable range), else nothing."""
        producer_last = (
            batch.has_producer_id and self.producer_last_offsets.get(batch.producer_id) == batch.last_offset
        )
        if producer_last or batch.next_offset == self.cleanable.first_uncleanable_offset:
            return empty_batch(batch)
        return None

    def _is_aborted(self, batch: BatchInfo) -> bool:
        """Whether ``batch`` belongs to an aborted transaction (its producer's abort spans it)."""
        if not batch.is_transactional:
            return False
        spans = self._aborted_spans.get(batch.producer_id, ())
        return any(first <= batch.base_offset < last for first, last in spans)

    def _aborts_within(self, start: int, end: int) -> list[AbortedTxn]:
        """The aborts whose markers are in [start, end) and stay: a cleaned segment's index entries."""
        return [
            txn
            for txn in self.aborted
            if start <= txn.last_offset < end and txn.last_offset not in self._dropped_markers
        ]

    def swap(self, group: Sequence[Segment], cleaned: Segment) -> None:
        """Put a cleaned group in place (the log's thread)."""
        self.log.replace_segments(group, cleaned)

    def finish(self) -> None:
        """Record how far the log is clean and release it (the log's thread)."""
        self.log.end_cleaning(self.end_offset)
        logger.info(
            "%s: cleaned offsets [%d, %d): %d -> %d bytes, %d keys",
            self.log.directory,
            self.cleanable.first_dirty_offset,
            self.end_offset,
            self.bytes_before,
            self.bytes_after,
            len(self.offset_map),
        )

    def abandon(self) -> None:
        """Release the log after a failed or cancelled pass; the next pass starts over."""
        self.log.end_cleaning(None)

    def run(self) -> None:
        """The whole pass in the calling thread (tests and tools; the broker spreads it out)."""
        try:
            self.build_offset_map()
            for group in self.groups:
                self.swap(group, self.clean_group(group))
        except BaseException:
            self.abandon()
            raise
        self.finish()


class LogCleaner:
    """Chooses the next log to clean; logs whose data cannot be parsed are left alone after
    one failure (Kafka's "uncleanable partitions") so the cleaner does not spin on them."""

    def __init__(self, max_map_keys: int = MAX_MAP_KEYS) -> None:
        self.max_map_keys = max_map_keys
        self._uncleanable: set[str] = set()

    def next_job(self, logs: Sequence[PartitionLog], now_ms: int) -> CleaningJob | None:
        """Claim the filthiest compacted log that is worth cleaning, as a job; None if none is."""
        best: tuple[float, PartitionLog, Cleanable] | None = None
        for log in logs:
            if not log.config.compact or not log.is_online or log.directory in self._uncleanable:
                continue
            cleanable = cleanable_range(log, now_ms)
            if cleanable.worth_cleaning(log.config) and (best is None or cleanable.dirty_ratio > best[0]):
                best = (cleanable.dirty_ratio, log, cleanable)
        if best is None or not best[1].begin_cleaning():
            return None
        try:
            return CleaningJob(best[1], best[2], now_ms, self.max_map_keys)
        except LogError:  # its aborted-transaction indexes are unreadable: it went offline
            best[1].end_cleaning(None)
            return None

    def mark_uncleanable(self, job: CleaningJob, exc: Exception) -> None:
        logger.error("%s: cannot clean (%s); leaving it uncompacted until restart", job.log.directory, exc)
        self._uncleanable.add(job.log.directory)
