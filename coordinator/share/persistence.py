"""What a share-partition persists, how it is read back, and where a new one starts.

Kafka's share-partition leader writes WriteShareGroupState to the share coordinator after each
acknowledgement, release and lock timeout, with the start offset, the state epoch and the
state batches that changed; acquisitions are never written (KIP-932: "the Acquired state is
not recorded because it's transient.  As a result, an Acquired record with a delivery count
of 1 is recorded as Available with a delivery count of 0").  The share coordinator folds the
updates into one snapshot (``PersisterStateBatchCombiner``: batches below the start offset
pruned, later batches winning where they overlap, equal neighbours joined), which
ReadShareGroupState returns when a leader loads the partition.

:func:`snapshot_batches` produces that folded snapshot directly from the in-flight state, so a
writer may persist whole snapshots (ShareSnapshot) or the per-operation changes the
operations return (ShareUpdate), as Kafka's coordinator does.  Offsets never acknowledged or
released are left out, as Kafka never writes them: on reload they are gaps, which Kafka
fetches again (its "persister read gap window") and which :func:`load_state_batches` turns
into AVAILABLE records with no deliveries.  A restart therefore redelivers exactly what was
not acknowledged, with delivery counts that miss only the acquisitions in flight at the crash.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from coordinator.share.in_flight import InFlightRecords, Run
from coordinator.share.model import RecordState, StateBatch

# DeliveryCount is an int16 on the wire.
MAX_DELIVERY_COUNT = 2**15 - 1
PERSISTED_STATES = frozenset({RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})


def auto_offset_reset_start(strategy: str, *, log_start_offset: int, high_watermark: int) -> int:
    """The start offset of a share-partition with no persisted state (``share.auto.offset.reset``).

    Kafka 4.3 takes ``earliest`` as the log start offset and ``latest`` (the default) as the
    latest offset for READ_UNCOMMITTED, the high watermark.  Its third strategy,
    ``by_duration:<ISO-8601 duration>``, needs an offset-for-timestamp lookup and is the
    caller's to resolve.
    """
    value = strategy.strip().lower()
    if value == "earliest":
        return log_start_offset
    if value == "latest":
        return high_watermark
    raise ValueError(f"share.auto.offset.reset {strategy!r} is not earliest or latest")


def load_state_batches(records: InFlightRecords, batches: Iterable[StateBatch]) -> None:
    """Fill empty ``records`` from ReadShareGroupState's batches, gaps becoming AVAILABLE.

    The checks are Kafka's initialisation checks (a batch below the start offset or with its
    last offset before its first fails the load) and those its data structures imply: batches
    in order without overlap, persisted states only, delivery counts an int16 holds.
    """
    for batch in batches:
        first, last = batch.first_offset, batch.last_offset
        if first < records.end:
            raise ValueError(f"state batch {first}-{last} starts before offset {records.end}")
        if last < first:
            raise ValueError(f"state batch {first}-{last} ends before it starts")
        state = RecordState(batch.delivery_state)
        if state not in PERSISTED_STATES:
            raise ValueError(f"state batch {first}-{last} has state {state!r}")
        if not 0 <= batch.delivery_count <= MAX_DELIVERY_COUNT:
            raise ValueError(f"state batch {first}-{last} has delivery count {batch.delivery_count}")
        if first > records.end:
            records.append(first - 1, [Run(records.end, first - 1, RecordState.AVAILABLE, 0)])
        records.append(last, [Run(first, last, state, batch.delivery_count)])


def snapshot_batches(records: InFlightRecords) -> list[StateBatch]:
    """The state batches a reload needs, as the share coordinator's snapshot would hold them."""
    batches: list[StateBatch] = []
    for run in records.runs():
        state, count = run.state, run.delivery_count
        if state is RecordState.ACQUIRED:
            state, count = RecordState.AVAILABLE, count - 1
        if state is RecordState.AVAILABLE and count == 0:
            continue
        batches.append(StateBatch(run.first, run.last, state, count))
    return merge_state_batches(batches)


def merge_state_batches(batches: list[StateBatch]) -> list[StateBatch]:
    """Join neighbouring batches (in offset order) with the same state and delivery count."""
    merged: list[StateBatch] = []
    for batch in batches:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and previous.last_offset + 1 == batch.first_offset
            and previous.delivery_state is batch.delivery_state
            and previous.delivery_count == batch.delivery_count
        ):
            merged[-1] = StateBatch(
                previous.first_offset, batch.last_offset, batch.delivery_state, batch.delivery_count
            )
        else:
            merged.append(batch)
    return merged


def overlay_state_batches(
    base: list[StateBatch], changes: list[StateBatch], start_offset: int
) -> list[StateBatch]:
    """``base`` with ``changes`` written over it, below ``start_offset`` dropped: how the share
    coordinator combines a WriteShareGroupState (which carries the batches that changed) with
    the state it holds (Kafka's ``ShareCoordinatorShard`` combining its snapshot and updates)."""
    combined = list(base)
    for change in changes:
        kept: list[StateBatch] = []
        for batch in combined:
            if batch.last_offset < change.first_offset or batch.first_offset > change.last_offset:
                kept.append(batch)
                continue
            if batch.first_offset < change.first_offset:
                kept.append(dataclasses.replace(batch, last_offset=change.first_offset - 1))
            if batch.last_offset > change.last_offset:
                kept.append(dataclasses.replace(batch, first_offset=change.last_offset + 1))
        kept.append(change)
        combined = kept
    trimmed = [
        dataclasses.replace(batch, first_offset=max(batch.first_offset, start_offset))
        for batch in sorted(combined, key=lambda batch: batch.first_offset)
        if batch.last_offset >= start_offset
    ]
    return merge_state_batches(trimmed)
