"""Bringing a partition's files back to a consistent state before its log opens (Kafka's
LogLoader).

Kept apart from ``log.partition_log`` so that the live log holds only what runs while it
serves: this module runs once per partition at start-up (and when an offline partition is
reopened) and deals with whatever a crash left behind: temporary files, half-done segment
replacements (``log.swap``), index files without their segment, and segments written past the
last fsync, which are validated batch by batch from the one holding the checkpointed recovery
point; the first invalid batch and everything after it are cut off, and indexes are rebuilt.

What it returns are open segments and the checkpoint that describes them; ``PartitionLog``
builds its state (producers, recovery point, checkpoint) on top, and rebuilds the
aborted-transaction indexes of the segments recovered here while it replays producer state
(only that replay knows which transactions were open).
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
from log.segment import Segment
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


def close_all(segments: Sequence[Segment]) -> None:
    for segment in segments:
        segment.close()


def segment_name_offset(name: str, suffix: str) -> int | None:
    """The offset a segment-style file name (``00000000000000000042.log``) stands for."""
    stem = name[: -len(suffix)]
    if name.endswith(suffix) and len(stem) == 20 and stem.isdigit():
        return int(stem)
    return None


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
