"""A partition directory's segments in offset order, and the offsets that bound them: where the
log starts, where it ends, and up to where it is known fsynced (Kafka's LocalLog with its
LogSegments).

Every other component of a ``PartitionLog`` works on the segments through this one, so that
the list of segments and the list of their base offsets (what lookups bisect) change together.
Unlike Kafka's LocalLog it also holds the leader epoch cache: the cache is a file of the same
directory that moves with the segments (truncated with them, trimmed at the log start, synced
by the same flush) and is replaced with them when an offline log is reloaded.

Removed segments are renamed ``*.deleted`` and their files deleted ``file.delete.delay.ms``
later (at once when it is 0), as Kafka does, so a reader holding a ``FileSlice`` can finish;
``purge_deleted`` does the deleting and start-up removes any leftovers (``log.swap``).

``lock`` keeps segment removal and close from closing a descriptor under an fsync running in
a worker thread (``log.flusher``); appends do not take it.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections.abc import Sequence
from typing import NamedTuple

from log.config import LogConfig
from log.leader_epochs import LeaderEpochCache
from log.segment import Segment
from log.swap import DELETED

logger = logging.getLogger(__name__)


class SyncMark(NamedTuple):
    """A batch boundary of the log: its offset, and where it is in which segment."""

    offset: int
    segment: Segment
    position: int


class LocalLog:
    """The segments of one partition directory; empty until ``start_from`` gives it a load's."""

    def __init__(self, directory: str, config: LogConfig) -> None:
        self.directory = directory
        self.config = config  # AlterConfigs replaces it (``PartitionLog.config``)
        self.lock = threading.Lock()
        self.segments: list[Segment] = []
        self.bases: list[int] = []
        self.log_start_offset = 0  # only moves forward (DeleteRecords, retention); checkpointed
        self.recovery_point = 0  # every offset below it is known to be fsynced
        self.epochs = LeaderEpochCache(directory)
        self.deleted: list[tuple[int, Segment]] = []  # (delete files at ms, segment)

    def start_from(
        self, segments: list[Segment], log_start_offset: int, recovery_point: int, epochs: LeaderEpochCache
    ) -> None:
        """Serve the segments and offsets a load left (``log.loader``); a load deletes
        ``*.deleted`` leftovers, so none are pending after it."""
        self.segments = segments
        self.bases = [s.base_offset for s in segments]
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self.epochs = epochs
        self.deleted = []

    # ----------------------------------------------------------------------------------------
    # Where offsets are

    @property
    def log_end_offset(self) -> int:
        """The next offset to assign."""
        # No segment only in an ``unopenable`` stand-in, which reports an empty log.
        return self.segments[-1].next_offset if self.segments else self.log_start_offset

    def index_for(self, offset: int) -> int:
        """Position in ``segments`` of the segment that would hold ``offset`` (the first one for
        offsets below it)."""
        return max(0, bisect.bisect_right(self.bases, offset) - 1)

    def holds(self, segment: Segment, offset: int) -> bool:
        """``segment`` is (still) the one of this log that would hold ``offset``."""
        return self.segments[self.index_for(offset)] is segment

    def mark_at(self, offset: int) -> SyncMark:
        """Where the batch holding ``offset`` starts (its segment's end if none holds it)."""
        segment = self.segments[self.index_for(offset)]
        batch = segment.find_batch(offset)
        return SyncMark(offset, segment, batch.position if batch is not None else segment.size)

    def end_mark(self) -> SyncMark:
        """The log end as a place in the files."""
        segment = self.segments[-1]
        return SyncMark(self.log_end_offset, segment, segment.size)

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self.segments)

    # ----------------------------------------------------------------------------------------
    # Changing the list

    def roll(self, now_ms: int, base_offset: int) -> Segment:
        """Seal the active segment and start a new one at ``base_offset``."""
        self.segments[-1].seal()
        segment = Segment.create(self.directory, base_offset, self.config, now_ms)
        self.segments.append(segment)
        self.bases.append(segment.base_offset)
        return segment

    def remove(self, doomed: Sequence[Segment], now_ms: int) -> None:
        """Take segments out of the log and rename their files ``*.deleted`` for later deletion."""
        with self.lock:
            for segment in doomed:
                position = self.segments.index(segment)
                del self.segments[position]
                del self.bases[position]
        self.retire(doomed, now_ms)

    def replace(self, old: Sequence[Segment], new: Segment) -> None:
        """Put ``new`` where the consecutive segments ``old`` are (their files are the caller's)."""
        with self.lock:
            first = self.segments.index(old[0])
            self.segments[first : first + len(old)] = [new]
            self.bases[first : first + len(old)] = [new.base_offset]

    def restart_at(self, offset: int, now_ms: int) -> None:
        """Remove every segment and start again with an empty one at ``offset``; the old ones
        go first, so a crash before the new one is named finds no data at all."""
        self.remove(list(self.segments), now_ms)
        segment = Segment.create(self.directory, offset, self.config, now_ms)
        with self.lock:
            self.segments, self.bases = [segment], [offset]

    def retire(self, segments: Sequence[Segment], now_ms: int) -> None:
        """Rename segments that left the log ``*.deleted``; their files go after the delay."""
        for segment in segments:
            segment.rename(DELETED)
            self.deleted.append((now_ms + self.config.file_delete_delay_ms, segment))
        self.purge_deleted(now_ms)

    def purge_deleted(self, now_ms: int) -> None:
        """Delete the files of removed segments whose ``file.delete.delay.ms`` has passed.

        They are no longer part of the log, so a failure here only leaves files behind, which
        the next start-up deletes.
        """
        due = [segment for deadline, segment in self.deleted if deadline <= now_ms]
        if due:
            self.deleted = [(d, s) for d, s in self.deleted if d > now_ms]
            for segment in due:
                try:
                    segment.delete()
                except OSError as exc:
                    logger.warning("%s: cannot delete %s: %s", self.directory, segment.log_path, exc)

    @property
    def next_purge_ms(self) -> int | None:
        """When ``purge_deleted`` next has work, or None."""
        return min((deadline for deadline, _ in self.deleted), default=None)
