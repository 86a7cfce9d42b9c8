"""Transactional offset commits (TxnOffsetCommit): pending until the transaction's marker."""

from __future__ import annotations

from tests.coordinator.conftest import Harness
from wire.error_codes import ErrorCode as E

PRODUCER = (42, 3)


def fetch_stable(h: Harness, group: str) -> dict[tuple[str, int], tuple[int, int]]:
    result = h.coordinator.fetch_offsets(
        group, [{"name": "orders", "partition_indexes": [0]}], require_stable=True
    )
    return {
        (t["name"], p["partition_index"]): (p["committed_offset"], p["error_code"])
        for t in result["topics"]
        for p in t["partitions"]
    }


def test_commit_marker_applies_pending_offsets(h: Harness) -> None:
    h.commit("g", {("orders", 0): 5})
    assert h.commit("g", {("orders", 0): 9}, producer=PRODUCER) == {("orders", 0): E.NONE}
    assert h.committed("g") == {("orders", 0): 5}
    assert fetch_stable(h, "g") == {("orders", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    h.coordinator.complete_transaction(h.coordinator.partition_for("g"), PRODUCER, commit=True)
    assert h.committed("g") == {("orders", 0): 9}
    assert fetch_stable(h, "g") == {("orders", 0): (9, E.NONE)}


def test_abort_marker_drops_pending_offsets(h: Harness) -> None:
    h.commit("g", {("orders", 0): 5})
    h.commit("g", {("orders", 0): 9}, producer=PRODUCER)
    h.coordinator.complete_transaction(h.coordinator.partition_for("g"), PRODUCER, commit=False)
    assert fetch_stable(h, "g") == {("orders", 0): (5, E.NONE)}


def test_replay_keeps_undecided_offsets_pending_and_applies_decided_ones(h: Harness) -> None:
    h.commit("g", {("orders", 0): 9}, producer=PRODUCER)
    restarted = h.restart()
    assert fetch_stable(restarted, "g") == {("orders", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    restarted.coordinator.complete_transaction(
        restarted.coordinator.partition_for("g"), PRODUCER, commit=True
    )
    assert restarted.restart().committed("g") == {("orders", 0): 9}


def test_a_marker_only_decides_groups_of_its_own_partition(h: Harness) -> None:
    h.commit("g", {("orders", 0): 9}, producer=PRODUCER)
    other = (h.coordinator.partition_for("g") + 1) % h.coordinator.partitions
    h.coordinator.complete_transaction(other, PRODUCER, commit=True)
    assert fetch_stable(h, "g") == {("orders", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}


def test_a_transactional_commit_names_a_member_only_if_its_producer_knows_one(h: Harness) -> None:
    """Kafka validates TxnOffsetCommit's member fields only when they are given: a producer
    without the consumer's group metadata (generation -1, no member) may commit for a group
    that has members; one that names a member is checked as OffsetCommit is."""
    generation, members = h.stable_group("g", "a")
    assert h.commit("g", {("orders", 0): 3}, producer=PRODUCER) == {("orders", 0): E.NONE}
    assert h.commit("g", {("orders", 0): 3}) == {("orders", 0): E.UNKNOWN_MEMBER_ID}
    assert h.commit(
        "g", {("orders", 0): 4}, generation=generation, member_id=members["a"], producer=PRODUCER
    ) == {("orders", 0): E.NONE}
    assert h.commit(
        "g", {("orders", 0): 4}, generation=generation + 1, member_id=members["a"], producer=PRODUCER
    ) == {("orders", 0): E.ILLEGAL_GENERATION}


def test_a_transactional_commit_is_not_refused_while_a_rebalance_completes(h: Harness) -> None:
    member, reply = h.join_new("g")
    h.advance(3000)  # the initial rebalance delay: the join completes, the sync is awaited
    assert h.state("g") == "CompletingRebalance"
    generation = reply.body["generation_id"]
    plain = h.commit("g", {("orders", 0): 1}, generation=generation, member_id=member)
    assert plain == {("orders", 0): E.REBALANCE_IN_PROGRESS}
    transactional = h.commit(
        "g", {("orders", 0): 1}, generation=generation, member_id=member, producer=PRODUCER
    )
    assert transactional == {("orders", 0): E.NONE}


def test_a_consumer_group_member_commits_transactionally_under_its_epoch(h: Harness) -> None:
    """KIP-848 members: TxnOffsetCommit of any version carries the member epoch as generation;
    a wrong one is ILLEGAL_GENERATION (not STALE_MEMBER_EPOCH, which OffsetCommit answers)."""
    joined = h.cg_heartbeat("cg", "member-1", 0)
    epoch = joined["member_epoch"]
    good = h.commit(
        "cg", {("orders", 0): 2}, generation=epoch, member_id="member-1", version=3, producer=PRODUCER
    )
    assert good == {("orders", 0): E.NONE}
    stale = h.commit(
        "cg", {("orders", 0): 2}, generation=epoch - 1, member_id="member-1", version=3, producer=PRODUCER
    )
    assert stale == {("orders", 0): E.ILLEGAL_GENERATION}
    assert h.commit("cg", {("orders", 0): 2}, generation=epoch - 1, member_id="member-1", version=9) == {
        ("orders", 0): E.STALE_MEMBER_EPOCH
    }
