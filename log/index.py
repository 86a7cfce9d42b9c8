"""Sparse per-segment indexes in Kafka's file formats: ``.index`` and ``.timeindex``.

``.index`` entries are 8 bytes: relative offset int32, file position int32.  An entry maps the
*last* offset of an append to the byte position where that append starts, so "largest entry
with offset <= target" always lands on or before the batch holding the target.

``.timeindex`` entries are 12 bytes: timestamp int64, relative offset int32.  An entry records
the largest timestamp seen so far in the segment and the offset of the batch that first reached
it; entries are only added when the timestamp grows, so the file stays sorted even when
producers send out-of-order timestamps.

Both are big-endian, as Kafka writes them.  Why not preallocate and mmap as Kafka does: a
sparse index is tiny (one entry per ``index.interval.bytes``), so files are simply appended
(one small ``os.write`` per entry) and mirrored in a ``bytearray`` that is loaded lazily on
first use.  Files therefore never carry zero padding and need no trimming on roll or close;
``segment.index.bytes`` still bounds the entry count and triggers a segment roll when reached.
Lookups are binary searches with ``struct.unpack_from`` over the mirror: O(log n) probes.
The file is a ``LazyFile`` (``log.open_files``): looking at an empty or unloaded index costs a
``stat``, not a descriptor.
"""

from __future__ import annotations

import os
import struct
from typing import NamedTuple

from log.errors import LogError
from log.open_files import LazyFile
from log.sync_ledger import sync

OFFSET_ENTRY = struct.Struct(">ii")  # relative offset, file position
TIME_ENTRY = struct.Struct(">qi")  # timestamp, relative offset


class CorruptIndexError(LogError):
    """An index file does not fit its segment; the segment rebuilds it from the log."""


class _SparseIndex:
    """An append-only file of fixed-size entries plus an in-memory mirror for lookups."""

    _entry: struct.Struct

    def __init__(self, path: str, base_offset: int, max_index_bytes: int) -> None:
        self.file = LazyFile(path)
        self.base_offset = base_offset
        self.max_entries = max(1, max_index_bytes // self._entry.size)
        self._data: bytearray | None = None
        self._dirty = False

    @property
    def path(self) -> str:
        return self.file.path

    def create(self) -> None:
        """Create the (empty) file if it is missing."""
        self.file.create()

    def _stat_size(self) -> int:
        try:
            return self.file.stat().st_size
        except FileNotFoundError:
            return 0  # not created yet: the segment is still empty (see ``Segment.append``)

    def _file_size(self) -> int:
        size = self._stat_size()
        if size % self._entry.size:
            raise CorruptIndexError(f"{self.path}: size {size} is not a multiple of {self._entry.size}")
        return size

    def _mirror(self) -> bytearray:
        """Load the file on first use: most inactive segments are never looked up again."""
        if self._data is None:
            size = self._file_size()
            self._data = bytearray(os.pread(self.file.fd, size, 0)) if size else bytearray()
        return self._data

    @property
    def entries(self) -> int:
        return len(self._mirror()) // self._entry.size

    @property
    def size_in_bytes(self) -> int:
        """File size, without loading the mirror (the cleaner sums it over many segments)."""
        return len(self._data) if self._data is not None else self._stat_size()

    @property
    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def _entry_at(self, n: int) -> tuple[int, int]:
        return self._entry.unpack_from(self._mirror(), n * self._entry.size)

    def _last(self) -> tuple[int, int] | None:
        """The last entry, read with one small pread when the mirror is not loaded yet.

        Opening a log asks every segment for its last entries; reading just those keeps start-up
        cost independent of index sizes.
        """
        if self._data is not None:
            return self._entry_at(self.entries - 1) if self._data else None
        size = self._file_size()
        if not size:
            return None
        return self._entry.unpack(os.pread(self.file.fd, self._entry.size, size - self._entry.size))

    def _append(self, *fields: int) -> None:
        data = self._mirror()
        entry = self._entry.pack(*fields)
        os.pwrite(self.file.create(), entry, len(data))
        data += entry
        self._dirty = True

    def _count_at_most(self, target: int, field: int) -> int:
        """Number of leading entries whose ``field`` is <= target (entries are sorted by it)."""
        low, high = 0, self.entries
        unpack, size, data = self._entry.unpack_from, self._entry.size, self._mirror()
        while low < high:
            middle = (low + high) // 2
            if unpack(data, middle * size)[field] <= target:
                low = middle + 1
            else:
                high = middle
        return low

    def _keep(self, count: int) -> None:
        """Keep only the first ``count`` entries (the log was truncated)."""
        data = self._mirror()
        size = count * self._entry.size
        if size < len(data):
            os.ftruncate(self.file.fd, size)
            del data[size:]
            self._dirty = True

    def reset(self) -> None:
        """Drop every entry (before a rebuild from the log)."""
        os.ftruncate(self.file.create(), 0)
        self._data = bytearray()
        self._dirty = True

    def flush(self) -> None:
        if self._dirty:
            self._dirty = False
            with self.file.pinned() as fd:
                sync(fd)

    def close(self) -> None:
        self.file.close()


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(_SparseIndex):
    """``.index``: absolute offset -> byte position of the append holding it."""

    _entry = OFFSET_ENTRY

    def append(self, offset: int, position: int) -> None:
        self._append(offset - self.base_offset, position)

    def last_entry(self) -> OffsetPosition:
        last = self._last()
        if last is None:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(self.base_offset + last[0], last[1])

    def lookup(self, offset: int) -> OffsetPosition:
        """The largest entry with offset <= ``offset``; the segment start if there is none."""
        n = self._count_at_most(offset - self.base_offset, 0)
        if n == 0:
            return OffsetPosition(self.base_offset, 0)
        relative, position = self._entry_at(n - 1)
        return OffsetPosition(self.base_offset + relative, position)

    def truncate_to(self, offset: int, position: int) -> None:
        """Drop the entries of appends at or after byte ``position`` and any naming ``offset``
        or later (an append the cut went through): offsets must keep growing."""
        by_offset = self._count_at_most(offset - 1 - self.base_offset, 0)
        self._keep(min(by_offset, self._count_at_most(position - 1, 1)))

    def lookup_position(self, position: int) -> OffsetPosition:
        """The largest entry with position <= ``position`` (positions grow with offsets)."""
        n = self._count_at_most(position, 1)
        if n == 0:
            return OffsetPosition(self.base_offset, 0)
        relative, found = self._entry_at(n - 1)
        return OffsetPosition(self.base_offset + relative, found)

    def sanity_check(self, segment_size: int) -> None:
        """Kafka's cheap check: the last entry must point inside the segment at a sane offset."""
        last = self._last()
        if last is not None:
            relative, position = last
            if relative < 0 or not 0 <= position < segment_size:
                raise CorruptIndexError(
                    f"{self.path}: last entry ({relative}, {position}) is outside the segment"
                )


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(_SparseIndex):
    """``.timeindex``: running max timestamp -> offset of the batch that first reached it."""

    _entry = TIME_ENTRY

    def last_entry(self) -> TimestampOffset:
        last = self._last()
        if last is None:
            return TimestampOffset(-1, self.base_offset)
        return TimestampOffset(last[0], self.base_offset + last[1])

    def truncate_to(self, offset: int) -> None:
        """Drop the entries of batches at ``offset`` or later (their offsets grow too)."""
        self._keep(self._count_at_most(offset - 1 - self.base_offset, 1))

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add an entry only if ``timestamp`` is a new maximum, which keeps the file sorted."""
        if timestamp > self.last_entry().timestamp:
            self._append(timestamp, offset - self.base_offset)

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The largest entry with timestamp <= ``timestamp``; the segment start if none.

        Every batch before the returned offset has a max timestamp below ``timestamp`` (or
        equal, only when the entry itself is equal and then that batch is the first one), so a
        forward walk from there finds the first batch reaching ``timestamp``.
        """
        n = self._count_at_most(timestamp, 0)
        if n == 0:
            return TimestampOffset(-1, self.base_offset)
        found, relative = self._entry_at(n - 1)
        return TimestampOffset(found, self.base_offset + relative)

    def sanity_check(self) -> None:
        last = self._last()
        if last is not None:
            _, relative = last
            if relative < 0:
                raise CorruptIndexError(f"{self.path}: last entry has a negative relative offset")
