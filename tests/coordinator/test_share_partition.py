"""The share-partition state machine (KIP-932): acquisition, acknowledgement, locks, persistence."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import cast

import pytest

from coordinator.share.model import (
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    RecordState,
    SharePartitionConfig,
    ShareStateError,
    StateBatch,
)
from coordinator.share.persistence import auto_offset_reset_start
from coordinator.share.share_partition import SharePartition
from wire.error_codes import ErrorCode

AVAILABLE, ACQUIRED = RecordState.AVAILABLE, RecordState.ACQUIRED
ACKNOWLEDGED, ARCHIVED = RecordState.ACKNOWLEDGED, RecordState.ARCHIVED
ACCEPT, RELEASE, REJECT, RENEW, GAP = (
    AcknowledgeType.ACCEPT,
    AcknowledgeType.RELEASE,
    AcknowledgeType.REJECT,
    AcknowledgeType.RENEW,
    AcknowledgeType.GAP,
)
LOCK_MS = 30_000


def tens(first: int, last: int, size: int = 10) -> list[tuple[int, int]]:
    """Log batches of ``size`` (ten) records covering ``first``..``last``."""
    return [(base, min(base + size - 1, last)) for base in range(first, last + 1, size)]


def fives(first: int, last: int) -> list[tuple[int, int]]:
    return tens(first, last, 5)


def fetch(
    partition: SharePartition,
    member: str,
    log: Sequence[tuple[int, int]],
    *,
    now_ms: int = 0,
    max_records: int = 500,
    batch_size: int = 500,
    record_limit: bool = False,
) -> list[tuple[int, int, int]]:
    """A ShareFetch: read the log batches from the next fetch offset on and acquire."""
    offset = partition.next_fetch_offset()
    read = [batch for batch in log if batch[1] >= offset]
    acquired = partition.acquire(
        member,
        offset,
        read,
        max_records=max_records,
        batch_size=batch_size,
        now_ms=now_ms,
        record_limit=record_limit,
    )
    return [(a.first_offset, a.last_offset, a.delivery_count) for a in acquired]


def ack(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, list(types))


def states(partition: SharePartition) -> list[tuple[int, int, RecordState, int]]:
    return [(r.first_offset, r.last_offset, r.state, r.delivery_count) for r in partition.in_flight()]


def refused(code: ErrorCode, call: Callable[[], object]) -> None:
    with pytest.raises(ShareStateError) as raised:
        call()
    assert raised.value.error_code == code


# Acquisition


def test_a_fetch_acquires_whole_log_batches_under_a_lock() -> None:
    partition = SharePartition(0)
    assert fetch(partition, "m1", tens(0, 29), now_ms=1_000) == [(0, 29, 1)]
    assert partition.in_flight()[0].member_id == "m1"
    assert partition.in_flight()[0].lock_deadline_ms == 1_000 + LOCK_MS
    assert (partition.start_offset, partition.end_offset, partition.next_fetch_offset()) == (0, 30, 30)
    assert partition.next_lock_deadline() == 1_000 + LOCK_MS


def test_new_records_are_cut_into_batches_of_batch_size_at_log_batch_boundaries() -> None:
    partition = SharePartition(0)
    assert fetch(partition, "m1", tens(0, 49), batch_size=20) == [(0, 19, 1), (20, 39, 1), (40, 49, 1)]
    partition = SharePartition(0)
    # Below 1 (Kafka does not check BatchSize) every log batch is its own batch.
    assert fetch(partition, "m1", tens(0, 19), batch_size=0) == [(0, 9, 1), (10, 19, 1)]


def test_max_records_is_soft_up_to_the_end_of_the_log_batch() -> None:
    partition = SharePartition(0)
    assert fetch(partition, "m1", tens(0, 49), max_records=15) == [(0, 19, 1)]
    assert partition.end_offset == 20


def test_record_limit_mode_acquires_exactly_max_records_and_leaves_the_rest_available() -> None:
    partition = SharePartition(0)
    assert fetch(partition, "m1", tens(0, 9), max_records=4, record_limit=True) == [(0, 3, 1)]
    assert states(partition) == [(0, 3, ACQUIRED, 1), (4, 9, AVAILABLE, 0)]
    assert partition.next_fetch_offset() == 4
    assert fetch(partition, "m2", tens(0, 9), max_records=4, record_limit=True) == [(4, 7, 1)]
    assert fetch(partition, "m3", tens(0, 9), max_records=4, record_limit=True) == [(8, 9, 1)]


def test_a_second_member_gets_only_what_is_available() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", tens(0, 9), batch_size=5)
    partition.acknowledge("m1", [ack(0, 4, RELEASE)], now_ms=0)
    assert fetch(partition, "m2", tens(0, 19)) == [(0, 4, 2), (10, 19, 1)]
    assert [r.member_id for r in partition.in_flight()] == ["m2", "m1", "m2"]


def test_the_record_lock_limit_stops_new_records_but_not_redeliveries() -> None:
    partition = SharePartition(0, config=SharePartitionConfig(max_in_flight_records=20))
    assert fetch(partition, "m1", tens(0, 49), max_records=100) == [(0, 19, 1)]
    assert not partition.can_acquire()
    assert fetch(partition, "m1", tens(0, 49)) == []
    partition.acknowledge("m1", [ack(0, 19, *([ACCEPT] * 5 + [RELEASE] + [ACCEPT] * 14))], now_ms=0)
    # Offset 5 is released and 0-4 are done: the start moved to 5, so 15 records are in flight.
    assert partition.can_acquire()
    assert fetch(partition, "m2", tens(0, 49), max_records=100) == [(5, 5, 2), (20, 29, 1)]


def test_at_the_lock_limit_only_offsets_inside_the_in_flight_range_are_acquired() -> None:
    partition = SharePartition(0, config=SharePartitionConfig(max_in_flight_records=20))
    fetch(partition, "m1", tens(0, 19), batch_size=10)
    partition.acknowledge("m1", [ack(10, 19, RELEASE)], now_ms=0)
    assert partition.in_flight_count == 20
    assert fetch(partition, "m2", tens(0, 49)) == [(10, 19, 2)]
    assert partition.end_offset == 20


def test_offsets_the_log_no_longer_has_are_archived_and_skipped() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", tens(0, 9), batch_size=5)
    partition.acknowledge("m1", [ack(0, 9, RELEASE)], now_ms=0)
    # Compaction removed 0-5: the fetch from 0 returns a first batch at 6.
    assert partition.acquire("m2", 0, [(6, 9)], max_records=500, batch_size=500, now_ms=0) == [
        AcquiredRecords(6, 9, 2)
    ]
    assert partition.start_offset == 6


def test_a_fetch_starting_past_the_end_leaves_no_hole() -> None:
    partition = SharePartition(0)
    # Nothing in flight: the start follows the first record the log has.
    assert fetch(partition, "m1", [(100, 109)]) == [(100, 109, 1)]
    assert partition.start_offset == 100
    # Records in flight: the offsets the log skipped are archived.
    assert partition.acquire("m1", 110, [(120, 129)], max_records=500, batch_size=500, now_ms=0) == [
        AcquiredRecords(120, 129, 1)
    ]
    assert states(partition) == [(100, 109, ACQUIRED, 1), (110, 119, ARCHIVED, 0), (120, 129, ACQUIRED, 1)]


def test_acquiring_needs_a_member_and_a_positive_max_records() -> None:
    partition = SharePartition(0)
    refused(ErrorCode.INVALID_REQUEST, lambda: fetch(partition, "", tens(0, 9)))
    assert fetch(partition, "m1", tens(0, 9), max_records=0) == []
    assert fetch(partition, "m1", tens(0, 9), max_records=-5) == []
    assert partition.acquire("m1", 0, [], max_records=10, batch_size=10, now_ms=0) == []
    with pytest.raises(ValueError):
        partition.acquire("m1", 0, [(5, 9), (0, 4)], max_records=10, batch_size=10, now_ms=0)
    # Past the end offset the offsets in between would look missing from the log.
    with pytest.raises(ValueError):
        partition.acquire("m1", 5, [(5, 9)], max_records=10, batch_size=10, now_ms=0)
    assert partition.in_flight() == []


# Acknowledgement


def test_accepting_everything_moves_the_start_offset_to_the_end() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", tens(0, 29), batch_size=10)
    changed = partition.acknowledge("m1", [ack(0, 29, ACCEPT)], now_ms=0)
    assert changed == [StateBatch(0, 29, ACKNOWLEDGED, 1)]
    assert (partition.start_offset, partition.end_offset, partition.in_flight()) == (30, 30, [])
    assert fetch(partition, "m1", tens(0, 39)) == [(30, 39, 1)]


def test_mixed_acknowledgements_split_the_batch_and_only_released_records_come_back() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", tens(0, 9))
    types = [ACCEPT, ACCEPT, RELEASE, REJECT, ACCEPT, GAP, RELEASE, RELEASE, ACCEPT, ACCEPT]
    changed = partition.acknowledge("m1", [ack(0, 9, *types)], now_ms=0)
    assert changed == [
        StateBatch(0, 1, ACKNOWLEDGED, 1),
        StateBatch(2, 2, AVAILABLE, 1),
        StateBatch(3, 3, ARCHIVED, 1),
        StateBatch(4, 4, ACKNOWLEDGED, 1),
        StateBatch(5, 5, ARCHIVED, 1),
        StateBatch(6, 7, AVAILABLE, 1),
        StateBatch(8, 9, ACKNOWLEDGED, 1),
    ]
    assert partition.start_offset == 2
    assert states(partition) == [
        (2, 2, AVAILABLE, 1),
        (3, 3, ARCHIVED, 1),
        (4, 4, ACKNOWLEDGED, 1),
        (5, 5, ARCHIVED, 1),
        (6, 7, AVAILABLE, 1),
        (8, 9, ACKNOWLEDGED, 1),
    ]
    assert fetch(partition, "m2", tens(0, 9)) == [(2, 2, 2), (6, 7, 2)]
    partition.acknowledge("m2", [ack(2, 2, ACCEPT), ack(6, 7, ACCEPT)], now_ms=0)
    assert (partition.start_offset, partition.in_flight()) == (10, [])


def test_part_of_a_batch_can_be_acknowledged_with_one_type() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", tens(0, 9))
    partition.acknowledge("m1", [ack(3, 5, RELEASE)], now_ms=0)
    assert states(partition) == [(0, 2, ACQUIRED, 1), (3, 5, AVAILABLE, 1), (6, 9, ACQUIRED, 1)]
    partition.acknowledge("m1", [ack(0, 2, ACCEPT), ack(6, 9, ACCEPT)], now_ms=0)
    assert (partition.start_offset, partition.next_fetch_offset()) == (3, 3)


def test_acknowledging_records_the_member_does_not_hold_is_invalid_record_state() -> None:
    partition = SharePartition(0)
    refused(ErrorCode.INVALID_RECORD_STATE, lambda: partition.acknowledge("m1", [ack(0, 0, ACCEPT)], 0))
    fetch(partition, "m1", tens(0, 9), batch_size=5)
    refused(ErrorCode.INVALID_RECORD_STATE, lambda: partition.acknowledge("m2", [ack(0, 4, ACCEPT)], 0))
    partition.acknowledge("m1", [ack(5, 9, RELEASE)], now_ms=0)
    # Released: AVAILABLE, held by nobody.
    refused(ErrorCode.INVALID_RECORD_STATE, lambda: partition.acknowledge("m1", [ack(5, 5, ACCEPT)], 0))
    # Accepted: ACKNOWLEDGED, still in flight behind the records 0-4 that m1 holds.
    fetch(partition, "m2", tens(5, 9))
    partition.acknowledge("m2", [ack(5, 9, ACCEPT)], now_ms=0)
    refused(ErrorCode.INVALID_RECORD_STATE, lambda: partition.acknowledge("m2", [ack(5, 9, ACCEPT)], 0))
    assert states(partition)[0] == (0, 4, ACQUIRED, 1)


def test_acknowledging_past_the_acquired_records_is_invalid_request() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", tens(0, 9))
    refused(ErrorCode.INVALID_REQUEST, lambda: partition.acknowledge("m1", [ack(5, 10, ACCEPT)], 0))
    refused(ErrorCode.INVALID_REQUEST, lambda: partition.acknowledge("m1", [ack(20, 25, ACCEPT)], 0))
    assert states(partition) == [(0, 9, ACQUIRED, 1)]


def test_acknowledgements_are_all_or_nothing() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", fives(0, 9), batch_size=5)
    fetch(partition, "m2", tens(0, 19))
    batches = [ack(0, 4, ACCEPT), ack(10, 12, ACCEPT)]
    refused(ErrorCode.INVALID_RECORD_STATE, lambda: partition.acknowledge("m1", batches, 0))
    assert states(partition) == [(0, 4, ACQUIRED, 1), (5, 9, ACQUIRED, 1), (10, 19, ACQUIRED, 1)]
    assert partition.start_offset == 0


def test_offsets_below_the_start_offset_are_skipped() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", tens(0, 19), batch_size=10)
    partition.acknowledge("m1", [ack(0, 9, ACCEPT)], now_ms=0)
    assert partition.acknowledge("m1", [ack(0, 9, ACCEPT)], now_ms=0) == []
    assert partition.acknowledge("m1", [ack(5, 14, ACCEPT)], now_ms=0) == [
        StateBatch(10, 14, ACKNOWLEDGED, 1)
    ]
    assert partition.start_offset == 15


@pytest.mark.parametrize(
    "batches",
    [
        [ack(5, 4, ACCEPT)],  # last before first
        [ack(-1, 4, ACCEPT)],  # negative offset
        [ack(0, 4, ACCEPT), ack(4, 6, ACCEPT)],  # overlapping
        [ack(5, 6, ACCEPT), ack(0, 1, ACCEPT)],  # out of order
        [AcknowledgementBatch(0, 4, [])],  # no type
        [ack(0, 4, ACCEPT, ACCEPT)],  # neither one type nor one per offset
        [ack(0, 1, ACCEPT, 5)],  # unknown type
        [ack(0, 0, -1)],
    ],
)
def test_malformed_acknowledgements_are_invalid_request(batches: list[AcknowledgementBatch]) -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", tens(0, 9))
    refused(ErrorCode.INVALID_REQUEST, lambda: partition.acknowledge("m1", batches, 0))
    assert states(partition) == [(0, 9, ACQUIRED, 1)]


def test_a_huge_acknowledgement_range_below_the_start_costs_only_what_is_in_flight() -> None:
    partition = SharePartition(10**12)
    fetch(partition, "m1", [(10**12, 10**12 + 9)])
    # One type for a range of a trillion offsets: one range to apply, nothing per offset.
    assert partition.acknowledge("m1", [ack(0, 10**12 + 9, ACCEPT)], now_ms=0) == [
        StateBatch(10**12, 10**12 + 9, ACKNOWLEDGED, 1)
    ]


# Locks, delivery counts and the delivery limit


def test_an_expired_lock_makes_records_available_again_with_their_delivery_count() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", tens(0, 9), now_ms=0)
    assert partition.expire_locks(LOCK_MS - 1) == []
    assert partition.expire_locks(LOCK_MS) == [StateBatch(0, 9, AVAILABLE, 1)]
    assert partition.next_lock_deadline() is None
    refused(ErrorCode.INVALID_RECORD_STATE, lambda: partition.acknowledge("m1", [ack(0, 9, ACCEPT)], LOCK_MS))
    assert fetch(partition, "m2", tens(0, 9), now_ms=LOCK_MS) == [(0, 9, 2)]


def test_a_record_delivered_delivery_limit_times_is_archived_instead_of_released() -> None:
    partition = SharePartition(0, config=SharePartitionConfig(delivery_count_limit=2))
    now = 0
    for delivery in (1, 2):
        assert fetch(partition, "m1", tens(0, 9), now_ms=now) == [(0, 9, delivery)]
        now += LOCK_MS
        changed = partition.expire_locks(now)
    assert changed == [StateBatch(0, 9, ARCHIVED, 2)]
    assert (partition.start_offset, partition.in_flight()) == (10, [])
    assert fetch(partition, "m1", tens(0, 9), now_ms=now) == []


def test_a_release_at_the_delivery_limit_archives() -> None:
    partition = SharePartition(0, config=SharePartitionConfig(delivery_count_limit=2))
    fetch(partition, "m1", tens(0, 9))
    partition.acknowledge("m1", [ack(0, 9, RELEASE)], now_ms=0)
    fetch(partition, "m1", tens(0, 9))
    assert partition.acknowledge("m1", [ack(0, 9, RELEASE)], now_ms=0) == [StateBatch(0, 9, ARCHIVED, 2)]
    assert partition.start_offset == 10


def test_redeliveries_of_a_failing_batch_are_throttled_down_to_single_records() -> None:
    # Limit 10: from the sixth delivery (count 5 = half the limit) a batch of 100 is acquired
    # in halves (100 >> 1, >> 2, ...), and a record on its tenth and last attempt goes alone.
    partition = SharePartition(0, config=SharePartitionConfig(delivery_count_limit=10))
    acquired = []
    for _ in range(9):
        acquired.append(fetch(partition, "m1", tens(0, 99)))
        (first, last, _count), *_ = acquired[-1]
        partition.acknowledge("m1", [ack(first, last, RELEASE)], now_ms=0)
    assert acquired == [[(0, 99, n)] for n in range(1, 6)] + [
        [(0, 49, 6)],
        [(0, 24, 7)],
        [(0, 11, 8)],
        [(0, 5, 9)],
    ]
    assert fetch(partition, "m1", tens(0, 99)) == [(0, 0, 10)]
    partition.acknowledge("m1", [ack(0, 0, RELEASE)], now_ms=0)
    assert (partition.start_offset, states(partition)[0]) == (1, (1, 5, AVAILABLE, 9))
    assert fetch(partition, "m1", tens(0, 99)) == [(1, 1, 10)]


def test_a_throttled_batch_is_not_delivered_with_other_records() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", fives(0, 9), batch_size=5)
    for _ in range(2):
        partition.acknowledge("m1", [ack(5, 9, RELEASE)], now_ms=0)
        fetch(partition, "m1", fives(0, 9))
    partition.acknowledge("m1", [ack(0, 9, RELEASE)], now_ms=0)
    # 0-4 were delivered once, 5-9 three times: the fetch stops before the throttled batch,
    # which the next fetch acquires alone, halved (5 >> 1).
    assert fetch(partition, "m2", fives(0, 19)) == [(0, 4, 2)]
    assert fetch(partition, "m3", fives(0, 19)) == [(5, 6, 4)]


def test_an_available_record_already_at_a_lowered_limit_is_archived_not_delivered() -> None:
    partition = SharePartition.restore(
        start_offset=0,
        state_epoch=1,
        state_batches=[StateBatch(0, 4, AVAILABLE, 3), StateBatch(5, 9, AVAILABLE, 1)],
    )
    partition.config = SharePartitionConfig(delivery_count_limit=3)
    assert fetch(partition, "m1", tens(0, 9)) == [(5, 9, 2)]
    assert partition.start_offset == 5


def test_renew_restarts_the_lock_without_changing_the_state() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", tens(0, 9), now_ms=0)
    assert partition.acknowledge("m1", [ack(0, 4, RENEW)], now_ms=20_000) == []
    assert partition.expire_locks(LOCK_MS) == [StateBatch(5, 9, AVAILABLE, 1)]
    assert states(partition)[0] == (0, 4, ACQUIRED, 1)
    assert partition.next_lock_deadline() == 20_000 + LOCK_MS
    partition.acknowledge("m1", [ack(0, 4, ACCEPT)], now_ms=40_000)
    assert partition.start_offset == 5


def test_renew_needs_the_lock_and_the_group_config() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", tens(0, 9))
    refused(ErrorCode.INVALID_RECORD_STATE, lambda: partition.acknowledge("m2", [ack(0, 9, RENEW)], 1))
    partition.config = SharePartitionConfig(renew_acknowledge_enabled=False)
    refused(ErrorCode.INVALID_RECORD_STATE, lambda: partition.acknowledge("m1", [ack(0, 9, RENEW)], 1))
    # Per offset: renewing some records and accepting others in one batch.
    partition.config = SharePartitionConfig()
    types = [RENEW] * 5 + [ACCEPT] * 5
    assert partition.acknowledge("m1", [ack(0, 9, *types)], now_ms=1) == [StateBatch(5, 9, ACKNOWLEDGED, 1)]
    assert partition.next_lock_deadline() == 1 + LOCK_MS


def test_a_leaving_member_releases_only_its_own_records() -> None:
    partition = SharePartition(0, config=SharePartitionConfig(delivery_count_limit=2))
    fetch(partition, "m1", tens(0, 9))
    partition.acknowledge("m1", [ack(0, 9, RELEASE)], now_ms=0)
    fetch(partition, "m1", tens(0, 4))
    fetch(partition, "m2", tens(0, 19))
    assert partition.release_member("m1") == [StateBatch(0, 4, ARCHIVED, 2)]
    assert states(partition) == [(5, 9, ACQUIRED, 2), (10, 19, ACQUIRED, 1)]
    assert partition.release_member("m1") == []
    assert partition.release_member("m2") == [StateBatch(5, 9, ARCHIVED, 2), StateBatch(10, 19, AVAILABLE, 1)]
    assert partition.next_fetch_offset() == 10


# The log start offset


def test_the_log_start_moving_past_the_start_offset_forgets_what_it_removed() -> None:
    partition = SharePartition(0)
    fetch(partition, "m1", tens(0, 29), batch_size=10)
    partition.acknowledge("m1", [ack(10, 19, RELEASE)], now_ms=0)
    assert not partition.advance_log_start(0)
    assert partition.advance_log_start(15)
    assert states(partition) == [(15, 19, AVAILABLE, 1), (20, 29, ACQUIRED, 1)]
    # Acknowledging what the log lost is skipped, as Kafka skips offsets below the start offset.
    assert partition.acknowledge("m1", [ack(0, 9, ACCEPT)], now_ms=0) == []
    assert partition.advance_log_start(100)
    assert (partition.start_offset, partition.end_offset, partition.in_flight()) == (100, 100, [])


# Persistence


def test_acquired_records_persist_as_available_with_the_delivery_before() -> None:
    partition = SharePartition(0, state_epoch=3)
    fetch(partition, "m1", tens(0, 29), batch_size=10)
    partition.acknowledge("m1", [ack(10, 19, RELEASE)], now_ms=0)
    fetch(partition, "m2", tens(10, 19))
    partition.acknowledge("m1", [ack(20, 29, ACCEPT)], now_ms=0)
    # 0-9: first delivery in flight (not written); 10-19: second delivery in flight.
    assert partition.state_batches() == [
        StateBatch(10, 19, AVAILABLE, 1),
        StateBatch(20, 29, ACKNOWLEDGED, 1),
    ]


def test_a_restored_partition_redelivers_only_what_was_not_acknowledged() -> None:
    partition = SharePartition(0, state_epoch=7)
    fetch(partition, "m1", tens(0, 39), batch_size=10)
    types = [ACCEPT] * 3 + [RELEASE] * 2 + [REJECT] * 5
    partition.acknowledge("m1", [ack(0, 9, *types), ack(20, 29, ACCEPT)], now_ms=0)
    fetch(partition, "m2", tens(3, 9))

    restored = SharePartition.restore(
        start_offset=partition.start_offset,
        state_epoch=partition.state_epoch,
        state_batches=partition.state_batches(),
    )
    assert (restored.start_offset, restored.state_epoch) == (3, 7)
    assert restored.state_batches() == partition.state_batches()
    # 3-4 were released once (the second delivery died with the leader), 10-19 and 30-39
    # were never acknowledged (gaps: AVAILABLE, no delivery yet), 5-9 and 20-29 are done.
    assert states(restored) == [
        (3, 4, AVAILABLE, 1),
        (5, 9, ARCHIVED, 1),
        (10, 19, AVAILABLE, 0),
        (20, 29, ACKNOWLEDGED, 1),
    ]
    assert restored.end_offset == 30
    assert fetch(restored, "m3", tens(0, 49)) == [(3, 4, 2), (10, 19, 1), (30, 49, 1)]
    restored.acknowledge("m3", [ack(3, 4, ACCEPT), ack(10, 19, ACCEPT), ack(30, 49, ACCEPT)], now_ms=0)
    assert (restored.start_offset, restored.state_batches()) == (50, [])


def test_restoring_an_acknowledged_prefix_moves_the_start_offset() -> None:
    restored = SharePartition.restore(
        start_offset=0,
        state_epoch=1,
        state_batches=[StateBatch(0, 9, ACKNOWLEDGED, 1), StateBatch(10, 14, ARCHIVED, 5)],
    )
    assert (restored.start_offset, restored.end_offset, restored.in_flight()) == (15, 15, [])


@pytest.mark.parametrize(
    "batches",
    [
        [StateBatch(3, 9, ACKNOWLEDGED, 1)],  # below the start offset
        [StateBatch(12, 11, ACKNOWLEDGED, 1)],  # last before first
        [StateBatch(10, 19, ACKNOWLEDGED, 1), StateBatch(15, 25, ARCHIVED, 1)],  # overlapping
        [StateBatch(10, 19, ACQUIRED, 1)],  # never persisted
        [StateBatch(10, 19, cast(RecordState, 3), 1)],  # ARCHIVING (KIP-1191), unused by Kafka 4.3
        [StateBatch(10, 19, AVAILABLE, -1)],
        [StateBatch(10, 19, AVAILABLE, 2**15)],
    ],
)
def test_corrupt_persisted_state_is_refused(batches: list[StateBatch]) -> None:
    with pytest.raises(ValueError):
        SharePartition.restore(start_offset=5, state_epoch=0, state_batches=batches)


def test_a_huge_persisted_gap_costs_no_memory_per_offset() -> None:
    restored = SharePartition.restore(
        start_offset=0, state_epoch=0, state_batches=[StateBatch(10**12, 10**12, ACKNOWLEDGED, 1)]
    )
    assert restored.end_offset == 10**12 + 1
    assert restored.acquire("m1", 0, [(0, 9)], max_records=10, batch_size=10, now_ms=0) == [
        AcquiredRecords(0, 9, 1)
    ]
    assert restored.acquire("m1", 500, [(500, 509)], max_records=10, batch_size=10, now_ms=0) == [
        AcquiredRecords(500, 509, 1)
    ]
    assert [(r.first_offset, r.last_offset, r.state) for r in restored.in_flight()] == [
        (0, 9, ACQUIRED),
        (10, 499, AVAILABLE),
        (500, 509, ACQUIRED),
        (510, 10**12 - 1, AVAILABLE),
        (10**12, 10**12, ACKNOWLEDGED),
    ]
    assert restored.next_fetch_offset() == 10


def test_auto_offset_reset_picks_the_log_start_or_the_high_watermark() -> None:
    assert auto_offset_reset_start("earliest", log_start_offset=4, high_watermark=90) == 4
    assert auto_offset_reset_start("LATEST", log_start_offset=4, high_watermark=90) == 90
    with pytest.raises(ValueError):
        auto_offset_reset_start("by_duration:PT1H", log_start_offset=4, high_watermark=90)


@pytest.mark.parametrize(
    "make",
    [
        lambda: SharePartitionConfig(max_in_flight_records=0),
        lambda: SharePartitionConfig(delivery_count_limit=1),
        lambda: SharePartitionConfig(record_lock_duration_ms=0),
        lambda: SharePartition(-1),
    ],
)
def test_limits_below_kafkas_minimums_are_refused(make: Callable[[], object]) -> None:
    with pytest.raises(ValueError):
        make()
