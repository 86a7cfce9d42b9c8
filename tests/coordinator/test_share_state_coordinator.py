"""The share coordinator: share-partition state on ``__share_group_state``, its epochs and replay."""

from __future__ import annotations

import pytest

from coordinator.share.model import RecordState as S
from coordinator.share.model import StateBatch
from coordinator.share.persistence import (
    auto_offset_reset_start,
    check_auto_offset_reset,
    overlay_state_batches,
    parse_duration_ms,
)
from coordinator.share.state_coordinator import ShareCoordinator, ShareStateError, coordinator_key
from tests.coordinator.conftest import FakeClock, MemoryStorage
from wire.error_codes import ErrorCode as E

TOPIC = bytes(range(16))
KEY = ("group", TOPIC, 3)


def loaded(storage: MemoryStorage) -> ShareCoordinator:
    coordinator = ShareCoordinator(4, storage, FakeClock())
    for partition in range(4):
        coordinator.load_partition(partition)
    return coordinator


def test_writes_fold_into_the_state_and_survive_a_replay() -> None:
    storage = MemoryStorage()
    coordinator = loaded(storage)
    assert coordinator.read(KEY, 0) is None
    coordinator.initialize(KEY, 0, 10)
    coordinator.write(KEY, 0, 0, 10, [StateBatch(10, 19, S.AVAILABLE, 1)])
    coordinator.write(
        KEY, 0, 0, 12, [StateBatch(12, 13, S.ACKNOWLEDGED, 1), StateBatch(15, 15, S.ARCHIVED, 5)]
    )
    expected = [
        StateBatch(12, 13, S.ACKNOWLEDGED, 1),
        StateBatch(14, 14, S.AVAILABLE, 1),
        StateBatch(15, 15, S.ARCHIVED, 5),
        StateBatch(16, 19, S.AVAILABLE, 1),
    ]
    state = coordinator.read(KEY, 0)
    assert state is not None and (state.start_offset, state.batches) == (12, expected)
    assert coordinator.summary(KEY) == (0, 0, 12, 3)
    # Another broker (or a restart) replays the topic to the same state.
    again = loaded(storage).read(KEY, 0)
    assert again is not None and (again.start_offset, again.state_epoch, again.batches) == (12, 0, expected)


def test_older_epochs_are_fenced() -> None:
    coordinator = loaded(MemoryStorage())
    coordinator.initialize(KEY, 2, 0)
    coordinator.read(KEY, 5)  # a new leader's read raises the leader epoch
    with pytest.raises(ShareStateError) as stale_state:
        coordinator.write(KEY, 1, 5, 0, [])
    assert stale_state.value.code == E.FENCED_STATE_EPOCH
    with pytest.raises(ShareStateError) as stale_leader:
        coordinator.write(KEY, 2, 4, 0, [])
    assert stale_leader.value.code == E.FENCED_LEADER_EPOCH
    with pytest.raises(ShareStateError) as old_init:
        coordinator.initialize(KEY, 1, 0)
    assert old_init.value.code == E.FENCED_STATE_EPOCH


def test_delete_leaves_a_tombstone_and_a_failed_append_is_an_error() -> None:
    storage = MemoryStorage()
    coordinator = loaded(storage)
    coordinator.initialize(KEY, 0, 7)
    coordinator.delete(KEY)
    assert coordinator.read(KEY, 0) is None
    assert loaded(storage).read(KEY, 0) is None
    storage.fail = True
    with pytest.raises(ShareStateError) as failed:
        coordinator.initialize(KEY, 0, 7)
    assert failed.value.code == E.NOT_COORDINATOR
    assert coordinator.read(KEY, 0) is None  # nothing changed


def test_keys_are_served_only_where_their_partition_is_owned() -> None:
    coordinator = ShareCoordinator(4, MemoryStorage(), FakeClock())
    coordinator.own_claimed_partitions_only()
    coordinator.claim(coordinator.key_partition(KEY))
    other = next(
        k
        for k in (("g", TOPIC, i) for i in range(50))
        if coordinator.key_partition(k) != coordinator.key_partition(KEY)
    )
    coordinator.initialize(KEY, 0, 0)
    with pytest.raises(ShareStateError) as elsewhere:
        coordinator.initialize(other, 0, 0)
    assert elsewhere.value.code == E.NOT_COORDINATOR
    # Kafka's coordinator key: the topic id as Kafka prints a Uuid.
    assert coordinator_key(KEY) == "group:AAECAwQFBgcICQoLDA0ODw:3"


def test_overlay_cuts_older_batches_and_drops_what_is_below_the_start() -> None:
    base = [StateBatch(0, 9, S.AVAILABLE, 1)]
    changed = overlay_state_batches(base, [StateBatch(3, 4, S.ACKNOWLEDGED, 1)], 2)
    assert changed == [
        StateBatch(2, 2, S.AVAILABLE, 1),
        StateBatch(3, 4, S.ACKNOWLEDGED, 1),
        StateBatch(5, 9, S.AVAILABLE, 1),
    ]
    assert overlay_state_batches(changed, [StateBatch(2, 2, S.AVAILABLE, 1)], 5) == [
        StateBatch(5, 9, S.AVAILABLE, 1)
    ]


def test_auto_offset_reset_by_duration_starts_at_the_first_record_that_recent() -> None:
    times = {100: 5, 200: 9}  # a record written at t=100 ms is at offset 5, at 200 at 9

    def offset_for(timestamp: int) -> int | None:
        return next((offset for at, offset in sorted(times.items()) if at >= timestamp), None)

    def start(strategy: str, now_ms: int) -> int:
        return auto_offset_reset_start(
            strategy, log_start_offset=2, high_watermark=12, now_ms=now_ms, offset_for_timestamp=offset_for
        )

    assert start("by_duration:PT0.15S", 250) == 5  # records since t=100
    assert start("BY_DURATION:PT0.04S", 250) == 12  # none since t=210: the high watermark
    assert (start("earliest", 0), start("latest", 0)) == (2, 12)
    assert parse_duration_ms("P1DT2H30M") == 95_400_000
    for refused in ("P", "PT", "1H", "PT-1H", "P1DT", "by_duration:", "soonest"):
        with pytest.raises(ValueError):
            check_auto_offset_reset(
                refused if refused.startswith(("by_", "soon")) else f"by_duration:{refused}"
            )
    check_auto_offset_reset("by_duration:PT1H")
