"""Producer state on disk: the snapshot files ``<offset>.snapshot``, and the state rebuilt from
the newest usable one plus the batches after it (Kafka's ProducerStateManager snapshot files
and UnifiedLog.rebuildProducerState).

Kept apart from ``log.partition_log`` because two moments rebuild producer state: opening a log
(``log.loader``) and truncating one (``PartitionLog.truncate_to``), as both of Kafka's do.  The
live log only writes snapshots (at each roll and at a clean close) and replays what a follower
appends, reading markers and indexing aborts as the rebuild does (``read_marker``,
``aborted_entry``), so that a follower that takes over as leader still detects retries.
"""

from __future__ import annotations

import bisect
import logging
import os
from collections.abc import Sequence

from log.checkpoint import write_atomically
from log.producer_state import CompletedTxn, PlacedBatch, ProducerStateManager
from log.segment import Segment, segment_name_offset
from log.sync_ledger import remove
from log.txn_index import AbortedTxn
from wire.control_batch import EndTxnMarker, read_end_txn_marker
from wire.record_batch import BatchInfo, RecordBatchError

logger = logging.getLogger(__name__)

_SNAPSHOT_SUFFIX = ".snapshot"
_SNAPSHOTS_KEPT = 2


def _snapshot_path(directory: str, offset: int) -> str:
    return os.path.join(directory, f"{offset:020d}{_SNAPSHOT_SUFFIX}")


def _snapshot_offsets(directory: str) -> list[int]:
    offsets = (segment_name_offset(n, _SNAPSHOT_SUFFIX) for n in os.listdir(directory))
    return sorted(o for o in offsets if o is not None)


def write_snapshot(directory: str, offset: int, producers: ProducerStateManager, *, durable: bool) -> None:
    """Snapshot ``producers`` as the state below ``offset`` (the log end) and keep only the
    newest few snapshots: a rebuild never needs an older one while these are intact."""
    write_atomically(_snapshot_path(directory, offset), producers.to_snapshot(), durable=durable)
    for old in _snapshot_offsets(directory)[:-_SNAPSHOTS_KEPT]:
        remove(_snapshot_path(directory, old))


def remove_snapshots(directory: str) -> None:
    """Remove every snapshot: the log was emptied, and none describes its new start."""
    for offset in _snapshot_offsets(directory):
        remove(_snapshot_path(directory, offset))


def rebuild_producer_state(
    directory: str, segments: Sequence[Segment], recovered_from: int | None
) -> ProducerStateManager:
    """Newest intact snapshot at or below the log end, then replay of the later batches.

    The snapshot must also be at or below the first segment recovery re-validated
    (``recovered_from``), as Kafka's loader rebuilds producer state from each recovered
    segment's start: replaying those segments is what rebuilds their aborted-transaction
    indexes.  Snapshots past the log end describe data that is gone and are removed.
    """
    end = segments[-1].next_offset
    usable = end if recovered_from is None else min(end, recovered_from)
    producers = ProducerStateManager()
    replay_from = segments[0].base_offset
    for offset in reversed(_snapshot_offsets(directory)):
        path = _snapshot_path(directory, offset)
        if offset > end:
            remove(path)
            continue
        if offset > usable:
            continue
        try:
            with open(path, "rb") as file:
                producers = ProducerStateManager.from_snapshot(file.read())
        except (OSError, ValueError) as exc:
            logger.warning("%s: ignoring producer state snapshot %s: %s", directory, path, exc)
            continue
        replay_from = max(offset, replay_from)
        break
    _replay(directory, segments, producers, replay_from)
    return producers


def _replay(
    directory: str, segments: Sequence[Segment], producers: ProducerStateManager, offset: int
) -> None:
    """Apply every batch from ``offset`` on to ``producers``: data batches from their headers,
    markers from their record; aborts land in recovered segments' indexes."""
    bases = [segment.base_offset for segment in segments]
    first = max(0, bisect.bisect_right(bases, offset) - 1)
    for segment in segments[first:]:
        start = segment.find_batch(offset)
        if start is None:
            continue
        for batch in segment.walk(start.position):
            placed = PlacedBatch(batch, batch.base_offset, batch.last_offset, batch.max_timestamp)
            if not batch.is_control:
                producers.replay(placed)
                continue
            data = segment.read(batch.position, batch.end_position)
            completed = producers.replay(placed, read_marker(directory, data, batch._replace(position=0)))
            if completed is not None and completed.aborted and segment.recovered:
                segment.txn_index.append(aborted_entry(producers, completed))


def read_marker(directory: str, data: bytes | memoryview, batch: BatchInfo) -> EndTxnMarker | None:
    """The transaction marker of the control batch ``batch`` in ``data``; None (logged) if it is
    unreadable, which leaves producer state as it was rather than the partition unopenable."""
    try:
        return read_end_txn_marker(data, batch)
    except RecordBatchError as exc:
        logger.warning("%s: ignoring the control batch at offset %d: %s", directory, batch.base_offset, exc)
        return None


def aborted_entry(producers: ProducerStateManager, completed: CompletedTxn) -> AbortedTxn:
    """The index entry of an abort: its stable offset is the first offset of another
    producer's open transaction, else the one after the marker (Kafka's
    lastStableOffset(completedTxn))."""
    first_open = producers.first_open_offset(excluding=completed.producer_id)
    stable = first_open if first_open >= 0 else completed.last_offset + 1
    return AbortedTxn(completed.producer_id, completed.first_offset, completed.last_offset, stable)
