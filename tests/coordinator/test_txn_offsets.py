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
