"""KIP-392's replica choice (Kafka's RackAwareReplicaSelector over caught-up replicas)."""

from __future__ import annotations

from broker.services.replication.leader_state import LeaderState
from broker.services.replication.read_replica import preferred_read_replica

RACKS = {1: "a", 2: "b", 3: "b", 4: None}
LAG_MS = 30_000


def _state(ends: dict[int, int], now_ms: int = 1_000) -> LeaderState:
    """Node 1 leads, its log ending at 100; each follower fetched at ``ends[follower]``."""
    state = LeaderState(1, 0, 0, [1, *ends], [1, *ends], 0, 0, now_ms)
    for follower, end in ends.items():
        state.follower_fetched(follower, end, 100, now_ms)
    return state


def choose(state: LeaderState, rack: str, offset: int = 50, now_ms: int = 1_000) -> int:
    return preferred_read_replica(state, rack, offset, 100, now_ms, LAG_MS, RACKS.get)


def test_a_client_without_a_rack_or_in_the_leaders_rack_reads_from_the_leader() -> None:
    state = _state({2: 100, 3: 100})
    assert choose(state, "") == 1
    assert choose(state, "a") == 1


def test_a_client_in_a_followers_rack_reads_from_the_most_advanced_follower_there() -> None:
    assert choose(_state({2: 90, 3: 100}), "b") == 3
    assert choose(_state({2: 100, 3: 90}), "b") == 2


def test_followers_behind_the_fetch_offset_or_out_of_sync_are_not_chosen() -> None:
    state = _state({2: 40, 3: 40})
    assert choose(state, "b", offset=50) == 1  # neither holds offset 50
    assert choose(_state({2: 90}), "b", now_ms=1_000 + LAG_MS + 1) == 1  # lagging too long
    assert choose(_state({2: 100, 3: 100}), "c") == 1  # no replica in that rack
