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
import re
from collections.abc import Callable, Iterable

from coordinator.share.in_flight import InFlightRecords, Run
from coordinator.share.model import RecordState, StateBatch

# DeliveryCount is an int16 on the wire.
MAX_DELIVERY_COUNT = 2**15 - 1
PERSISTED_STATES = frozenset({RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})


BY_DURATION = "by_duration:"
_DURATION = re.compile(
    r"^P(?:(?P<days>\d+)D)?(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d{1,9})?)S)?)?$"
)


def parse_duration_ms(text: str) -> int:
    """A Java ``Duration`` text (``PnDTnHnMn.nS``, as Kafka's ``by_duration`` takes it) in ms;
    ValueError for anything else, a negative or an empty duration included."""
    match = _DURATION.match(text.strip().upper())
    if match is None or text.strip().upper() in ("P", "PT") or text.strip().upper().endswith("T"):
        raise ValueError(f"{text!r} is not an ISO-8601 duration such as PT1H or P1DT2H30M")
    parts = {name: float(value) if value else 0.0 for name, value in match.groupdict().items()}
    seconds = parts["days"] * 86_400 + parts["hours"] * 3600 + parts["minutes"] * 60 + parts["seconds"]
    return int(seconds * 1000)


def check_auto_offset_reset(value: str) -> None:
    """Refuse a ``share.auto.offset.reset`` Kafka refuses (ValueError)."""
    strategy = value.strip().lower()
    if strategy in ("earliest", "latest"):
        return
    if strategy.startswith(BY_DURATION):
        parse_duration_ms(strategy[len(BY_DURATION) :])
        return
    raise ValueError(f"share.auto.offset.reset {value!r} is not earliest, latest or by_duration:<duration>")


def auto_offset_reset_start(
    strategy: str,
    *,
    log_start_offset: int,
    high_watermark: int,
    now_ms: int = 0,
    offset_for_timestamp: Callable[[int], int | None] | None = None,
) -> int:
    """The start offset of a share-partition with no persisted state (``share.auto.offset.reset``).

    Kafka 4.3 takes ``earliest`` as the log start offset, ``latest`` (the default) as the high
    watermark, and ``by_duration:<ISO-8601 duration>`` as the first record written no earlier
    than that long ago (``offset_for_timestamp``), or the high watermark when there is none.
    """
    value = strategy.strip().lower()
    if value == "earliest":
        return log_start_offset
    if value == "latest":
        return high_watermark
    if value.startswith(BY_DURATION) and offset_for_timestamp is not None:
        found = offset_for_timestamp(now_ms - parse_duration_ms(value[len(BY_DURATION) :]))
        return high_watermark if found is None else min(max(found, log_start_offset), high_watermark)
    raise ValueError(
        f"share.auto.offset.reset {strategy!r} is not earliest, latest or by_duration:<duration>"
    )


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
