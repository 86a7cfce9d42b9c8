"""Opening a partition's log: its files made consistent, then the state it starts serving
from (Kafka's LogLoader).

Kept apart from ``log.partition_log`` so that the live log holds only what runs while it
serves: this module runs once per partition at start-up (and when an offline partition is
reopened, ``PartitionLog.reopen_after_disk_error``).  First ``load_files`` deals with whatever
a crash left behind: temporary files, half-done segment replacements (``log.swap``), index
files without their segment, and segments written past the last fsync, which are validated
batch by batch from the one holding the checkpointed recovery point; the first invalid batch
and everything after it are cut off, and indexes are rebuilt.  Then ``load`` rebuilds what
follows from the data: producer state (snapshot plus replay, ``log.producer_snapshots``, which
also rebuilds the aborted-transaction indexes of the re-validated segments: only that replay
knows which transactions were open), the leader epoch cache, and the replicated high
watermark clamped to the recovered log; makes recovered data durable and writes the
checkpoint.  What it returns, a ``LoadedLog``, is all a ``PartitionLog`` takes from a load,
whether it is being constructed or adopts a reopened log after a disk error.
"""

from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from log.checkpoint import PartitionCheckpoint
from log.config import LogConfig
from log.leader_epochs import LeaderEpochCache
from log.producer_snapshots import rebuild_producer_state
from log.producer_state import ProducerStateManager
from log.segment import Segment, segment_name_offset
from log.swap import finish_interrupted_replacements
from log.sync_ledger import remove

logger = logging.getLogger(__name__)

Found = Literal["new", "clean", "unclean"]


@dataclass
class LoadedFiles:
    """A partition directory made consistent: its open segments, in offset order (never empty),
    the log start offset, the checkpoint read, and what was found there."""

    segments: list[Segment]
    log_start_offset: int
    checkpoint: PartitionCheckpoint | None
    found: Found

    @property
    def recovered_from(self) -> int | None:
        """Base offset of the first segment validated batch by batch, None if all were trusted."""
        return next((s.base_offset for s in self.segments if s.recovered), None)


@dataclass
class LoadedLog:
    """What a log starts serving from after a load: recovered, durable and checkpointed.

    ``PartitionLog`` takes its state from it in one place (``PartitionLog._start_from``),
    whether it is being constructed or adopts a log reopened after a disk error, so a field
    added here cannot be forgotten by either.  ``found`` is only for ``PartitionLog.open``'s
    report, ``fsyncs`` only for a new ``PartitionLog``'s counter.
    """

    segments: list[Segment]
    log_start_offset: int
    recovery_point: int
    producers: ProducerStateManager
    epochs: LeaderEpochCache
    replicated_high_watermark: int | None
    first_dirty_offset: int
    checkpointed: PartitionCheckpoint | None  # what the checkpoint on disk says now
    clean_on_disk: bool  # it says "clean shutdown": the first append must mark it unclean first
    found: Found
    fsyncs: int  # 1 if making recovered data durable took a flush (``PartitionLog.fsyncs``)

    @classmethod
    def nothing(cls, directory: str) -> LoadedLog:
        """No segment and no state: what a log whose files could not be opened stands on
        (``PartitionLog.unopenable``; it is offline, so ``found`` is never reported)."""
        return cls(
            segments=[],
            log_start_offset=0,
            recovery_point=0,
            producers=ProducerStateManager(),
            epochs=LeaderEpochCache(directory),
            replicated_high_watermark=None,
            first_dirty_offset=0,
            checkpointed=None,
            clean_on_disk=False,
            found="new",
            fsyncs=0,
        )


def close_all(segments: Sequence[Segment]) -> None:
    for segment in segments:
        segment.close()


def load(directory: str, config: LogConfig, now_ms: int) -> LoadedLog:
    """Open (or create) the log in ``directory``: its files made consistent (``load_files``),
    then the state that follows from them; the recovered data is fsynced before the recovery
    point claims it.  The caller owns the segments; a failure closes them and raises."""
    files = load_files(directory, config, now_ms)
    segments, checkpoint, log_start = files.segments, files.checkpoint, files.log_start_offset
    try:
        producers = rebuild_producer_state(directory, segments, files.recovered_from)
        epochs = _load_leader_epochs(directory, segments, log_start, files.recovered_from)
        for segment in segments:
            segment.recovered = False  # their aborted-transaction indexes were rebuilt just now
        end = segments[-1].next_offset
        replicated: int | None = None
        if checkpoint is not None and checkpoint.high_watermark >= 0:
            # Clamped to [log start, log end], as ``PartitionLog.set_replicated_high_watermark``.
            replicated = min(max(checkpoint.high_watermark, log_start), end)
        # Recovered data becomes durable before the recovery point (the log end) claims it,
        # as ``PartitionLog.flush`` from a recovery point of 0 would make it: nothing to do
        # for an empty log nobody wrote to, else every segment and then the epoch cache.
        fsyncs = 0
        if end != 0 or any(segment.dirty for segment in segments):
            for segment in segments:
                segment.flush()
            epochs.sync()
            fsyncs = 1
        first_dirty = checkpoint.first_dirty_offset if checkpoint else 0
        if files.found == "clean":
            # Nothing changed since the clean shutdown: no rewrite now (one durable write per
            # partition made starting many partitions take minutes); ``PartitionLog.append``
            # marks the log unclean before its first write.
            checkpointed = checkpoint
        else:
            # A new, empty log is consistent as it is: if this write is lost in a crash, the
            # next start merely recovers an empty segment.  A recovered one is durably unclean.
            new = files.found == "new"
            hw = -1 if replicated is None else replicated
            checkpointed = PartitionCheckpoint(log_start, end, new, first_dirty, hw)
            checkpointed.write(directory, durable=not new)
    except BaseException:
        close_all(segments)  # a failed (re)open must not leak descriptors
        raise
    return LoadedLog(
        segments=segments,
        log_start_offset=log_start,
        recovery_point=end,
        producers=producers,
        epochs=epochs,
        replicated_high_watermark=replicated,
        first_dirty_offset=first_dirty,
        checkpointed=checkpointed,
        clean_on_disk=files.found != "unclean",
        found=files.found,
        fsyncs=fsyncs,
    )


def _load_leader_epochs(
    directory: str, segments: Sequence[Segment], log_start: int, recovered_from: int | None
) -> LeaderEpochCache:
    """The leader epoch cache as stored, less epochs past the recovered end, plus the epochs
    of the batches recovery re-validated (Kafka's LogSegment.recover assigns them); rebuilt
    from every batch header when the file is missing or corrupt."""
    cache = LeaderEpochCache.read(directory)
    if cache is None:
        cache, recovered_from = LeaderEpochCache(directory), segments[0].base_offset
    else:
        cache.truncate_from_end(segments[-1].next_offset)
    if recovered_from is not None:
        for segment in segments:
            if segment.base_offset >= recovered_from:
                for batch in segment.walk(0):
                    cache.assign_if_newer(batch.partition_leader_epoch, batch.base_offset)
    cache.truncate_from_start(log_start)
    return cache


def load_files(directory: str, config: LogConfig, now_ms: int) -> LoadedFiles:
    """Clean up and recover ``directory`` (created if missing); the caller owns the segments."""
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        if name.endswith(".tmp"):
            remove(os.path.join(directory, name))
    finish_interrupted_replacements(directory, config, now_ms)
    names = os.listdir(directory)
    checkpoint = PartitionCheckpoint.read(directory)
    clean = checkpoint is not None and checkpoint.clean_shutdown
    log_start = checkpoint.log_start_offset if checkpoint else 0
    bases = sorted(b for b in (segment_name_offset(n, ".log") for n in names) if b is not None)
    _remove_orphan_indexes(directory, names, set(bases))
    bases = _drop_segments_below(directory, config, bases, log_start, now_ms)
    segments = _open_segments(directory, config, bases, checkpoint, clean, now_ms)
    try:
        if not segments:
            segments = [Segment.create(directory, log_start, config, now_ms)]
        if log_start > segments[-1].next_offset:
            logger.warning(
                "%s: log start %d is past the recovered end; restarting there", directory, log_start
            )
            doomed, segments = segments, []  # closed by delete: not to be closed again
            for segment in doomed:
                segment.delete()
            segments = [Segment.create(directory, log_start, config, now_ms)]
    except BaseException:
        close_all(segments)  # a failed (re)open must not leak descriptors
        raise
    found: Found = "new" if checkpoint is None and not bases else "clean" if clean else "unclean"
    return LoadedFiles(segments, max(log_start, segments[0].base_offset), checkpoint, found)


def _drop_segments_below(
    directory: str, config: LogConfig, bases: list[int], log_start: int, now_ms: int
) -> list[int]:
    """Delete the segments wholly below the (durably checkpointed) log start; return the rest.

    They are back only because a power cut undid their rename to ``.deleted`` (retention,
    DeleteRecords): nothing in them is readable, and recovering one with a torn tail would
    cut off every later segment, acknowledged data included.
    """
    while len(bases) > 1 and bases[1] <= log_start:
        logger.info("%s: deleting segment %d, below the log start %d", directory, bases[0], log_start)
        Segment(directory, bases.pop(0), config, now_ms).delete()
    return bases


def _remove_orphan_indexes(directory: str, names: Sequence[str], bases: set[int]) -> None:
    for name in names:
        for suffix in (".index", ".timeindex", ".txnindex"):
            base = segment_name_offset(name, suffix)
            if base is not None and base not in bases:
                remove(os.path.join(directory, name))


def _open_segments(
    directory: str,
    config: LogConfig,
    bases: list[int],
    checkpoint: PartitionCheckpoint | None,
    clean: bool,
    now_ms: int,
) -> list[Segment]:
    recovery_point = checkpoint.recovery_point if checkpoint else 0
    # Recover from the segment holding the recovery point (everything before it was fsynced).
    recover_from = bases[max(0, bisect.bisect_right(bases, recovery_point) - 1)] if bases else 0
    segments: list[Segment] = []
    try:
        for i, base in enumerate(bases):
            segment = Segment(directory, base, config, now_ms)
            segments.append(segment)
            if clean or base < recover_from:
                segment.load(config.index_interval_bytes)
                continue
            truncated = segment.recover(config.index_interval_bytes)
            segment.dirty = True  # validated but maybe never fsynced: flush before trusting it
            if truncated and i + 1 < len(bases):
                break
        else:
            return segments
    except BaseException:
        close_all(segments)
        raise
    # A segment was cut short: anything after it is unreachable and must go.
    for base in bases[len(segments) :]:
        logger.warning("%s: deleting segment %d after a truncated segment", directory, base)
        Segment(directory, base, config, now_ms).delete()
    return segments
