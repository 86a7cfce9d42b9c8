"""Acquiring fetched records for one member: which offsets a ShareFetch hands out.

The rules are those of Kafka 4.2/4.3's ``SharePartition.acquire``:

* The broker reads the log from :meth:`SharePartition.next_fetch_offset` and passes the first
  and last offsets of the record batches it read.  Records already in flight are acquired
  where AVAILABLE (a redelivery); records past the end offset are new and acquired whole log
  batch by whole log batch, so ``max_records`` is a soft limit ("can be exceeded for
  alignment of batch boundaries", ShareFetchRequest.json), unless the client asked for
  ``ShareAcquireMode`` RECORD_LIMIT (KIP-1206), which acquires exactly ``max_records`` and
  leaves the rest of the log batch AVAILABLE.
* New records are cut into in-flight batches at log-batch boundaries once a batch holds
  ``batch_size`` records (the ShareFetch ``BatchSize``), which is also the unit clients
  acknowledge in.
* No more records enter flight than ``max_in_flight_records`` allows
  (``group.share.partition.max.record.locks``); at the limit only redeliveries inside the
  in-flight range are acquired.
* A redelivered batch whose records were delivered ``ceil(limit / 2)`` times or more (at least
  2) is throttled (KAFKA-17541, Kafka 4.2): it is acquired alone, and only
  ``size >> (count - threshold + 1)`` of its records at a time, so a poison record ends up
  delivered on its own instead of dragging a whole batch to the delivery limit.  A record on
  its last delivery attempt (limit above 2) is always delivered alone.
* Log batches the fetch skipped over (a compacted log: the fetch started at ``fetch_offset``
  but returned a later first batch) no longer exist, so AVAILABLE records there are archived,
  which lets the start offset move past them.

One divergence: a record that is AVAILABLE with a delivery count already at the limit (read
back from persisted state after the group's ``share.delivery.count.limit`` was lowered) is
archived instead of acquired; Kafka would deliver it once more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from coordinator.share.in_flight import InFlightBatch, InFlightRecords, Run
from coordinator.share.model import AcquiredRecords, RecordState

# Kafka's MINIMUM_THROTTLE_RECORDS_DELIVERY_LIMIT.
MIN_THROTTLE_DELIVERY_COUNT = 2


@dataclass(slots=True)
class Acquisition:
    """One acquire call in progress: who acquires, how many records still fit, what was taken."""

    member_id: str
    deadline_ms: int
    limit: int
    record_limit: bool
    delivery_count_limit: int
    count: int = 0
    # Set once a throttled batch was acquired: nothing more is acquired in this call.
    stopped: bool = False
    acquired: list[AcquiredRecords] = field(default_factory=list)

    @property
    def full(self) -> bool:
        return self.stopped or self.count >= self.limit


def throttle_delivery_count(delivery_count_limit: int) -> int:
    """The delivery count from which redeliveries are throttled: half the limit, rounded up."""
    return max(MIN_THROTTLE_DELIVERY_COUNT, -(-delivery_count_limit // 2))


def archive_skipped(records: InFlightRecords, fetch_offset: int, first_fetched: int) -> None:
    """Archive AVAILABLE records between the fetch offset and the first batch the log returned."""
    if fetch_offset >= first_fetched:
        return
    for batch in records.batches_between(fetch_offset, first_fetched - 1):
        _archive_available(batch, fetch_offset, first_fetched - 1, lambda run: True)


def acquire_in_flight(records: InFlightRecords, lo: int, hi: int, acquisition: Acquisition) -> None:
    """Acquire the AVAILABLE records of ``lo``..``hi`` (all in flight), batch by batch."""
    for batch in records.batches_between(lo, hi):
        if acquisition.full:
            return
        _acquire_from_batch(batch, max(lo, batch.first), min(hi, batch.last), acquisition)


def acquire_new(
    records: InFlightRecords,
    first: int,
    last: int,
    fetched: Sequence[tuple[int, int]],
    batch_size: int,
    acquisition: Acquisition,
) -> None:
    """Put the new records ``first``..``last`` (past the end offset) in flight, acquired."""
    if first > records.end:
        if records.batches:
            # The log has nothing between the end offset and the first record it returned.
            records.append(first - 1, [Run(records.end, first - 1, RecordState.ARCHIVED, 0)])
        else:
            records.move_start(first)
    remaining = acquisition.limit - acquisition.count
    if remaining < last - first + 1:
        last = _end_of_log_batch(fetched, first + remaining - 1)
    member, deadline = acquisition.member_id, acquisition.deadline_ms
    if acquisition.record_limit:
        taken_last = min(last, first + remaining - 1)
        runs = [Run(first, taken_last, RecordState.ACQUIRED, 1, member, deadline)]
        if taken_last < last:
            runs.append(Run(taken_last + 1, last, RecordState.AVAILABLE, 0))
        records.append(last, runs)
        acquisition.acquired.append(AcquiredRecords(first, taken_last, 1))
        acquisition.count += taken_last - first + 1
        return
    for unit_first, unit_last in _units(fetched, first, last, batch_size):
        records.append(unit_last, [Run(unit_first, unit_last, RecordState.ACQUIRED, 1, member, deadline)])
        acquisition.acquired.append(AcquiredRecords(unit_first, unit_last, 1))
    acquisition.count += last - first + 1


def _acquire_from_batch(batch: InFlightBatch, lo: int, hi: int, acquisition: Acquisition) -> None:
    limit = acquisition.delivery_count_limit
    _archive_available(batch, lo, hi, lambda run: run.delivery_count >= limit)
    available = [run for run in batch.overlapping(lo, hi) if run.state is RecordState.AVAILABLE]
    if not available:
        return
    threshold = throttle_delivery_count(limit)
    throttled = max(run.delivery_count for run in available) >= threshold
    if throttled and acquisition.count > 0:
        # Deliver the throttled batch alone, in a later fetch.
        acquisition.stopped = True
        return
    remaining = acquisition.limit - acquisition.count
    plan: list[tuple[int, int, int]] = []
    taken = 0
    cap: int | None = None
    for run in available:
        first, last, count = max(run.first, lo), min(run.last, hi), run.delivery_count
        last_attempt = limit > 2 and count == limit - 1
        if last_attempt and taken > 0:
            break
        if count >= threshold and cap is None:
            cap = max(1, batch.size >> (count - threshold + 1))
        size = 1 if last_attempt else last - first + 1
        if acquisition.record_limit:
            size = min(size, remaining - taken)
        if cap is not None and taken < cap:
            size = min(size, cap - taken)
        plan.append((first, first + size - 1, count))
        taken += size
        if last_attempt or (acquisition.record_limit and taken == remaining) or taken == cap:
            break
    # Kafka reports the records of one batch as ranges of equal delivery count (its
    # accumulateAcquiredRecords), never joined across batches.
    ranges: list[AcquiredRecords] = []
    for first, last, count in plan:
        for run in batch.split(first, last):
            run.state = RecordState.ACQUIRED
            run.delivery_count = count + 1
            run.member_id = acquisition.member_id
            run.deadline_ms = acquisition.deadline_ms
        previous = ranges[-1] if ranges else None
        if (
            previous is not None
            and previous.last_offset + 1 == first
            and previous.delivery_count == count + 1
        ):
            ranges[-1] = AcquiredRecords(previous.first_offset, last, count + 1)
        else:
            ranges.append(AcquiredRecords(first, last, count + 1))
    batch.merge()
    acquisition.acquired.extend(ranges)
    acquisition.count += taken
    acquisition.stopped = throttled


def _archive_available(batch: InFlightBatch, lo: int, hi: int, select: Callable[[Run], bool]) -> None:
    if not any(run.state is RecordState.AVAILABLE and select(run) for run in batch.overlapping(lo, hi)):
        return
    for run in batch.split(lo, hi):
        if run.state is RecordState.AVAILABLE and select(run):
            run.state = RecordState.ARCHIVED
    batch.merge()


def _end_of_log_batch(fetched: Sequence[tuple[int, int]], offset: int) -> int:
    """The last offset of the log batch holding ``offset`` (``offset`` itself in a gap)."""
    end = offset
    for base, last in fetched:
        if base > offset:
            break
        end = max(last, offset)
    return end


def _units(
    fetched: Sequence[tuple[int, int]], first: int, last: int, batch_size: int
) -> list[tuple[int, int]]:
    """Cut ``first``..``last`` at log-batch boundaries into batches of ``batch_size`` records or more.

    Kafka does not check the client's BatchSize; below 1 it would produce empty ranges, so it
    is taken as 1 here (each log batch its own in-flight batch).
    """
    size = max(batch_size, 1)
    units: list[tuple[int, int]] = []
    current = first
    if last - first + 1 > size:
        for base, _ in fetched:
            if base > last:
                break
            if base - current >= size:
                units.append((current, base - 1))
                current = base
    units.append((current, last))
    return units
