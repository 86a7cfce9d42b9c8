"""The pure parts of replication: where a follower truncates (against a real leader-epoch
cache) and how a leader's high watermark and ISR follow its followers' fetches."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.services.replication.leader_state import LeaderState
from broker.services.replication.truncation import Truncation, truncation_point
from log.leader_epochs import EpochEntry, LeaderEpochCache


def epochs(tmp_path: Path, *entries: tuple[int, int]) -> LeaderEpochCache:
    return LeaderEpochCache(str(tmp_path), [EpochEntry(epoch, start) for epoch, start in entries])


@pytest.mark.parametrize(
    ("leader_answer", "own", "log_end", "high_watermark", "expected"),
    [
        # The leader does not know the epoch: keep only what was committed.
        ((-1, -1), [(0, 0), (1, 10)], 20, 12, Truncation(12, True)),
        # Same epoch on both sides: the shorter end wins.
        ((1, 15), [(0, 0), (1, 10)], 20, 12, Truncation(15, True)),
        ((1, 25), [(0, 0), (1, 10), (2, 18)], 20, 12, Truncation(18, True)),
        # KIP-279: the follower never had the leader's epoch 1: cut to the end of its epoch 0
        # and ask again.
        ((1, 15), [(0, 0), (2, 10)], 20, 5, Truncation(10, False)),
        # The follower's log ends before the leader's answer: nothing to cut.
        ((1, 50), [(0, 0), (1, 10)], 20, 12, Truncation(20, True)),
    ],
)
def test_truncation_point_follows_kafkas_rules(
    tmp_path: Path,
    leader_answer: tuple[int, int],
    own: list[tuple[int, int]],
    log_end: int,
    high_watermark: int,
    expected: Truncation,
) -> None:
    cut = truncation_point(*leader_answer, epochs(tmp_path, *own), log_end, high_watermark)
    assert cut == expected


def leader(isr: list[int], high_watermark: int = 0) -> LeaderState:
    return LeaderState(
        1, 5, 0, [1, 2, 3], isr, epoch_start_offset=10, high_watermark=high_watermark, now_ms=0
    )


def test_high_watermark_is_the_smallest_log_end_in_the_isr_and_never_goes_back() -> None:
    state = leader([1, 2, 3])
    assert not state.advance_high_watermark(30)  # followers' positions unknown yet
    state.follower_fetched(2, 20, 30, now_ms=1)
    state.follower_fetched(3, 25, 30, now_ms=1)
    assert state.advance_high_watermark(30) and state.high_watermark == 20
    state.follower_fetched(2, 12, 30, now_ms=2)  # a follower that truncated
    assert not state.advance_high_watermark(30) and state.high_watermark == 20
    assert not state.follower_fetched(9, 30, 30, now_ms=3)  # not a replica: ignored


def test_a_pending_expansion_holds_the_high_watermark() -> None:
    state = leader([1, 2])
    state.follower_fetched(2, 30, 30, now_ms=1)
    state.follower_fetched(3, 20, 30, now_ms=1)
    state.pending_isr = [1, 2, 3]
    assert state.advance_high_watermark(30) and state.high_watermark == 20


def test_out_of_sync_followers_and_those_ready_to_join() -> None:
    state = leader([1, 2, 3], high_watermark=10)
    state.follower_fetched(2, 30, 30, now_ms=0)  # caught up
    state.follower_fetched(3, 25, 30, now_ms=0)  # behind since the start
    assert state.out_of_sync(30, now_ms=500, max_lag_ms=1000) == []
    assert state.out_of_sync(30, now_ms=1001, max_lag_ms=1000) == [3]
    # A follower at the leader's end is in sync however long ago it last caught up.
    assert state.out_of_sync(30, now_ms=5000, max_lag_ms=1000) == [3]
    state.isr = [1, 2]
    assert state.ready_to_join() == [3]  # at or past the high watermark and the epoch's start
    state.follower_fetched(3, 9, 30, now_ms=6000)
    assert state.ready_to_join() == []


def test_new_metadata_in_the_same_epoch_keeps_known_followers() -> None:
    state = leader([1, 2, 3])
    state.follower_fetched(2, 20, 30, now_ms=1)
    state.update_assignment(1, [1, 2, 4], [1, 2], now_ms=5)
    assert (state.replicas, state.isr, state.partition_epoch) == ([1, 2, 4], [1, 2], 1)
    assert state.followers[2].log_end_offset == 20
    assert state.followers[4].log_end_offset == -1 and 3 not in state.followers


def test_only_a_moved_log_end_or_a_follower_outside_the_isr_asks_for_isr_work() -> None:
    state = leader([1, 2])
    assert state.follower_fetched(2, 20, 30, now_ms=1)  # first fetch: its log end is news
    assert not state.follower_fetched(2, 20, 30, now_ms=2)  # in sync, not moved: nothing to do
    assert state.follower_fetched(2, 25, 30, now_ms=3)
    assert state.follower_fetched(3, 20, 30, now_ms=3) and state.follower_fetched(3, 20, 30, now_ms=4)
    assert state.followers[2].last_fetch_ms == 3  # every fetch is still recorded
