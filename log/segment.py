"""One log segment: ``<base offset>.log`` (concatenated v2 batches) with its two sparse indexes
and, once a transaction aborts in it, its aborted-transaction index (``log.txn_index``).

A segment only ever holds whole batches, so any byte range ending on a batch boundary can be
handed to a client unchanged.  Everything here works from batch *headers*: finding the batch
that holds an offset is an index binary search plus a short walk over at most about
``index.interval.bytes`` of headers, read in small chunks -- never a scan of the whole file.
The one exception is ``recover``, which validates every batch (header + CRC) because that is
its job after an unclean shutdown.

Descriptors: the three files are ``LazyFile``s of the broker-wide LRU (``log.open_files``), so a
segment holds no descriptor while unused and loading a clean, empty segment opens nothing.
Worker threads pin the files they use (``flush`` does it itself; the cleaner pins through
``PartitionLog.begin_cleaning``).
"""

from __future__ import annotations

import logging
import mmap
import os
from collections.abc import Iterator

from log.config import LogConfig
from log.errors import KafkaStorageError
from log.index import CorruptIndexError, OffsetIndex, TimeIndex
from log.open_files import LazyFile
from log.recent_appends import RecentAppends
from log.sync_ledger import remove, replace, sync
from log.txn_index import TxnIndex
from wire.primitives import INT32_MAX
from wire.record_batch import (
    HEADER_SIZE,
    BatchInfo,
    CorruptRecordError,
    RecordBatchError,
    parse_batch_header,
    read_batch_header,
    verify_crc,
)

logger = logging.getLogger(__name__)

# Header walks read this much at a time: a few small batches per syscall, little waste when
# batches are large (then each header costs one read anyway).
_WALK_CHUNK = 16 * 1024
_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


def segment_stem(directory: str, base_offset: int) -> str:
    """Kafka's naming: the base offset as 20 zero-padded digits."""
    return os.path.join(directory, f"{base_offset:020d}")


def segment_name_offset(name: str, suffix: str) -> int | None:
    """The offset a segment-style file name (``00000000000000000042.log``) stands for."""
    stem = name[: -len(suffix)]
    if name.endswith(suffix) and len(stem) == 20 and stem.isdigit():
        return int(stem)
    return None


class Segment:
    """A segment's files and the in-memory facts derived from them (size, end offset, max time).

    ``suffix`` names the transient states of Kafka's file protocol (see ``log.swap``): a
    segment being written by the cleaner lives in ``<base>.log.cleaned`` and its indexes in
    ``<base>.index.cleaned``/``<base>.timeindex.cleaned`` until it is renamed into place.
    """

    def __init__(
        self, directory: str, base_offset: int, config: LogConfig, now_ms: int, suffix: str = ""
    ) -> None:
        stem = segment_stem(directory, base_offset)
        self._indexes_existed = os.path.exists(stem + ".index" + suffix) and os.path.exists(
            stem + ".timeindex" + suffix
        )
        self.base_offset = base_offset
        self.suffix = suffix
        self._log = LazyFile(stem + ".log" + suffix)
        self.offset_index = OffsetIndex(stem + ".index" + suffix, base_offset, config.segment_index_bytes)
        self.time_index = TimeIndex(stem + ".timeindex" + suffix, base_offset, config.segment_index_bytes)
        self.txn_index = TxnIndex(stem + ".txnindex" + suffix)
        # Index files are created with the first append (an empty segment needs none, which
        # makes creating a partition two file creations cheaper) or by a rebuild.
        try:
            self.size = os.stat(self.log_path).st_size
        except FileNotFoundError:
            self._log.create()
            self.size = 0
        self.next_offset = base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        # Kafka bases time-based rolling on the first batch's timestamp, else on creation time.
        self.created_ms = now_ms
        self.roll_jitter_ms = config.random_segment_jitter()
        self._first_batch_timestamp: int | None = None
        self._bytes_since_index_entry = 0
        self._recent = RecentAppends()  # where the latest appends start: reads at the tail
        self.dirty = False  # written since the last full flush (data and indexes)
        self.unsynced_data = False  # ``.log`` bytes written since the last fdatasync or flush
        # Validated by ``recover``: its aborted-transaction index was dropped, and the log's
        # replay of producer state (which alone knows the transactions) rebuilds it.
        self.recovered = False

    @classmethod
    def create(
        cls, directory: str, base_offset: int, config: LogConfig, now_ms: int, suffix: str = ""
    ) -> Segment:
        """A new, empty segment; stale files of the same name (left by a crash) are discarded."""
        stem = segment_stem(directory, base_offset)
        for kind in _SUFFIXES:
            if os.path.exists(stem + kind + suffix):
                remove(stem + kind + suffix)
        segment = cls(directory, base_offset, config, now_ms, suffix)
        segment._first_batch_timestamp = -1
        return segment

    @property
    def log_path(self) -> str:
        return self._log.path

    @property
    def fd(self) -> int:
        """The ``.log`` descriptor, opened if it was evicted; valid until this thread opens
        another segment file (so fetch it right before each use, never keep it)."""
        return self._log.fd

    @property
    def log_file(self) -> LazyFile:
        """The ``.log`` file itself, for readers that use it later (Fetch's ``FileSlice``)."""
        return self._log

    # ----------------------------------------------------------------------------------------
    # Loading and recovery

    def load(self, index_interval_bytes: int) -> None:
        """Open a segment that was shut down cleanly: trust the data, check the indexes.

        Only the tail after the last index entry is walked to learn the end offset and max
        timestamp.  Missing index files or ones failing Kafka's sanity checks (size, last entry)
        fall back to a full ``recover``; deleting an index is thus a way to force a rebuild.
        """
        try:
            if self.size and not self._indexes_existed:
                raise CorruptIndexError("index files are missing")
            self.offset_index.sanity_check(self.size)
            self.time_index.sanity_check()
            self._walk_tail()
        except (CorruptIndexError, RecordBatchError) as exc:
            logger.warning("rebuilding indexes of %s: %s", self.log_path, str(exc))
            self.recover(index_interval_bytes)

    def _walk_tail(self) -> None:
        """End offset and max timestamp from the last index entries and the batches after them."""
        last_indexed = self.offset_index.last_entry()
        time_entry = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = time_entry.timestamp, time_entry.offset
        self.next_offset = self.base_offset
        for batch in self.walk(last_indexed.position):
            self._track_max_timestamp(batch)
            self.next_offset = batch.next_offset
        self._bytes_since_index_entry = self.size - last_indexed.position

    def truncate_to(self, offset: int) -> None:
        """Cut the batch holding ``offset`` (or the first after it) and everything after it,
        and the index entries pointing there (Kafka's LogSegment.truncateTo).

        Only the tail after the last index entry left is walked again; the cut is fsynced by
        the next ``flush`` (``dirty``).
        """
        batch = self.find_batch(offset)
        if batch is None:
            return
        self._recent.clear()
        os.ftruncate(self.fd, batch.position)
        self.size = batch.position
        self.offset_index.truncate_to(batch.base_offset, batch.position)
        self.time_index.truncate_to(batch.base_offset)
        self.txn_index.truncate_to(batch.base_offset)
        if self.size == 0:
            self._first_batch_timestamp = -1
        self.dirty = self.unsynced_data = True
        self._walk_tail()

    def recover(self, index_interval_bytes: int) -> int:
        """Validate every batch (header + CRC), cut a torn or corrupt tail, rebuild both indexes.

        Returns the number of bytes truncated.  Indexes are rebuilt per batch, exactly as
        one-batch appends (all client produces) built them, so lookups behave the same.  The
        aborted-transaction index is dropped for the log to rebuild (see ``recovered``).
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        self._recent.clear()
        self.recovered = True
        self.max_timestamp, self.offset_of_max_timestamp = -1, self.base_offset
        self.next_offset = self.base_offset
        self._first_batch_timestamp = -1
        valid = 0
        last_index_at = 0
        if self.size:
            with mmap.mmap(self.fd, self.size, prot=mmap.PROT_READ) as mapped:
                view = memoryview(mapped)
                try:
                    while valid < self.size:
                        batch = read_batch_header(view, valid)
                        verify_crc(view, batch)
                        self._check_offsets(batch)
                        if valid == 0:
                            self._first_batch_timestamp = batch.max_timestamp
                        self._track_max_timestamp(batch)
                        if valid - last_index_at > index_interval_bytes:
                            self.offset_index.append(batch.last_offset, valid)
                            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
                            last_index_at = valid
                        valid += batch.size
                        self.next_offset = batch.next_offset
                except RecordBatchError as exc:
                    # str(): a logged exception object would pin the mapping via its traceback.
                    logger.warning("%s: invalid batch at byte %d: %s", self.log_path, valid, str(exc))
                finally:
                    view.release()
        truncated = self.size - valid
        if truncated:
            logger.warning("%s: truncating %d bytes after the last valid batch", self.log_path, truncated)
            os.ftruncate(self.fd, valid)
            self.size = valid
            self.dirty = True
        self._bytes_since_index_entry = valid - last_index_at
        return truncated

    def _check_offsets(self, batch: BatchInfo) -> None:
        if batch.base_offset < self.next_offset or batch.last_offset - self.base_offset > INT32_MAX:
            raise CorruptRecordError(
                f"batch offsets [{batch.base_offset}, {batch.last_offset}] "
                f"do not follow {self.next_offset - 1}"
            )

    def _track_max_timestamp(self, batch: BatchInfo) -> None:
        if batch.max_timestamp > self.max_timestamp:
            self.max_timestamp = batch.max_timestamp
            self.offset_of_max_timestamp = batch.last_offset

    # ----------------------------------------------------------------------------------------
    # Appending

    @property
    def first_batch_timestamp(self) -> int:
        """Max timestamp of the first batch (-1 when empty), read lazily from the file."""
        if self._first_batch_timestamp is None:
            self._first_batch_timestamp = -1
            if self.size >= HEADER_SIZE:
                header = os.pread(self.fd, HEADER_SIZE, 0)
                self._first_batch_timestamp = parse_batch_header(header, 0).max_timestamp
        return self._first_batch_timestamp

    def should_roll(
        self, config: LogConfig, now_ms: int, messages_size: int, max_timestamp: int, last_offset: int
    ) -> bool:
        """Kafka's LogSegment.shouldRoll: full by bytes, old by time (with jitter), full indexes,
        or an offset that no longer fits a 32-bit relative offset."""
        if self.size == 0:
            # Rolling an empty segment would only recreate it, unless a replicated batch lands
            # past a gap too large for relative offsets (Kafka rolls at the batch's offset).
            return last_offset - self.base_offset > INT32_MAX
        first = self.first_batch_timestamp
        waited = max_timestamp - first if first >= 0 else now_ms - self.created_ms
        return (
            self.size > config.segment_bytes - messages_size
            or waited > config.segment_ms - self.roll_jitter_ms
            or self.offset_index.is_full
            or self.time_index.is_full
            or last_offset - self.base_offset > INT32_MAX
        )

    def append(
        self,
        data: memoryview,
        last_offset: int,
        max_timestamp: int,
        offset_of_max_timestamp: int,
        index_interval_bytes: int,
    ) -> int:
        """Write ``data`` (whole batches, offsets assigned) at the end; return its position.

        One ``pwrite`` in the normal case.  If the disk fails part-way, the partial write is cut
        off again so the file keeps ending on a batch boundary, and ``KafkaStorageError`` is
        raised.
        """
        position = self.size
        try:
            written = 0
            while written < len(data):
                written += os.pwrite(self.fd, data[written:], position + written)
        except OSError as exc:
            try:
                os.ftruncate(self.fd, position)
            except OSError:
                logger.exception("%s: cannot cut off a partial write", self.log_path)
            raise KafkaStorageError(f"write to {self.log_path} failed: {exc}") from exc
        if position == 0:
            self._first_batch_timestamp = max_timestamp
            self.offset_index.create()  # a segment with data always has index files
            self.time_index.create()
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = offset_of_max_timestamp
        if self._bytes_since_index_entry > index_interval_bytes:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index_entry = 0
        self._bytes_since_index_entry += len(data)
        self._recent.note(last_offset, position, position + len(data))
        self.size = position + len(data)
        self.next_offset = last_offset + 1
        self.dirty = self.unsynced_data = True
        return position

    @property
    def largest_timestamp(self) -> int:
        """Kafka's LogSegment.largestTimestamp: the max record timestamp, or the file's
        modification time when no record carries one (what time-based retention compares)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return self._log.stat().st_mtime_ns // 1_000_000

    def seal(self) -> None:
        """On roll: record the final max timestamp so inactive segments know it from the index."""
        self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)

    # ----------------------------------------------------------------------------------------
    # Reading

    def walk(self, position: int, end: int | None = None) -> Iterator[BatchInfo]:
        """Headers of the batches from ``position`` (a batch boundary) up to ``end``.

        Positions in the yielded ``BatchInfo`` are file positions.  Reads ``_WALK_CHUNK`` bytes
        at a time and re-reads only when a header falls outside the current chunk.
        """
        end = self.size if end is None else end
        chunk = b""
        chunk_start = 0
        while position < end:
            relative = position - chunk_start
            if relative + HEADER_SIZE > len(chunk):
                chunk = os.pread(self.fd, min(_WALK_CHUNK, end - position), position)
                chunk_start, relative = position, 0
            batch = parse_batch_header(chunk, relative)
            if position + batch.size > end:
                raise CorruptRecordError(
                    f"{self.log_path}: batch at byte {position} runs past the segment end"
                )
            yield batch._replace(position=position)
            position += batch.size

    def find_batch(self, offset: int) -> BatchInfo | None:
        """The first batch whose last offset is >= ``offset``: at the tail from the latest
        appends' positions, elsewhere an index lookup, then a short walk."""
        start = self._recent.walk_start(offset)
        if start is None:
            start = self.offset_index.lookup(offset).position
        for batch in self.walk(start):
            if batch.last_offset >= offset:
                return batch
        return None

    def batches_end(self, start: int, max_bytes: int) -> int:
        """End of the longest run of whole batches from ``start`` within ``max_bytes``.

        At least the first batch is included even if it alone exceeds ``max_bytes`` (KIP-74).
        The index narrows the walk to the last indexed append before the limit.
        """
        limit = start + max_bytes
        if limit >= self.size:
            return self.size
        hint = max(start, self.offset_index.lookup_position(limit).position)
        end = hint
        for batch in self.walk(hint):
            if batch.end_position > limit:
                break
            end = batch.end_position
        if end == start:
            end = start + next(self.walk(start)).size
        return end

    def offset_at(self, position: int) -> int:
        """The base offset of the batch starting at ``position`` (a batch boundary); the
        segment's next offset at its end."""
        if position >= self.size:
            return self.next_offset
        return parse_batch_header(os.pread(self.fd, HEADER_SIZE, position), 0).base_offset

    def read(self, start: int, end: int) -> bytes:
        """The bytes of ``[start, end)``; a short read means the file shrank under us."""
        return self._log.read(start, end)

    # ----------------------------------------------------------------------------------------
    # Durability and lifetime

    def flush(self) -> None:
        """fsync data then indexes (indexes can always be rebuilt from data, never the reverse)."""
        if self.dirty:
            self.dirty = self.unsynced_data = False
            with self._log.pinned() as fd:
                sync(fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def data_to_sync(self) -> int | None:
        """A duplicate of the ``.log`` descriptor to fdatasync (the caller closes it), if data
        was written since the last sync: what an acknowledgement needs to be durable.

        Indexes are left to ``flush`` (at roll and checkpoint time): recovery rebuilds them for
        everything past the recovery point, which a data sync does not move.  The flag is
        cleared first, so a write that lands before the sync leaves it set for the next one.
        A duplicate, so the sync may run anywhere (another process) while the log closes or
        evicts its own descriptor.
        """
        if not self.unsynced_data:
            return None
        self.unsynced_data = False
        with self._log.pinned() as fd:
            return os.dup(fd)

    def _files(self) -> tuple[LazyFile, LazyFile, LazyFile]:
        return self._log, self.offset_index.file, self.time_index.file

    def pin(self) -> None:
        """Keep the descriptors open once opened, for a worker thread (see ``log.open_files``)."""
        for file in self._files():
            file.pin()

    def unpin(self) -> None:
        for file in self._files():
            file.unpin()

    def release(self) -> None:
        """Close the descriptors now (they reopen on use): a worker thread that built this
        segment hands it over this way, holding nothing (see ``log.open_files``)."""
        for file in self._files():
            file.release()

    def close(self) -> None:
        for file in self._files():
            file.close()

    def _paths(self) -> tuple[str, str, str, str]:
        return self.log_path, self.offset_index.path, self.time_index.path, self.txn_index.path

    def rename(self, suffix: str) -> None:
        """Move the files to ``suffix`` (``""`` = live); open descriptors stay valid.

        The ``.log`` file moves last into a live name and first out of it, so that whenever
        ``<base>.log`` exists under a name, its indexes do too or are merely rebuilt.
        """
        stem = segment_stem(os.path.dirname(self.log_path), self.base_offset)
        targets = tuple(stem + kind + suffix for kind in _SUFFIXES)
        moves = list(zip(self._paths(), targets, strict=True))
        for source, target in moves[1:] + moves[:1] if suffix == "" else moves:
            if source != self.log_path and not os.path.exists(source):
                continue  # an empty segment's index files may not exist yet, a txn index never
            replace(source, target)
        (self._log.path, self.offset_index.file.path, self.time_index.file.path, self.txn_index.path) = (
            targets
        )
        self.suffix = suffix

    def delete(self) -> None:
        self.close()
        for path in self._paths():
            if os.path.exists(path):
                remove(path)
