"""OffsetCommit / OffsetFetch / OffsetDelete and offset retention."""

from __future__ import annotations

from coordinator.config import CoordinatorConfig
from tests.coordinator.conftest import Harness, subscription
from wire.error_codes import ErrorCode as E

DAY_MS = 24 * 60 * 60 * 1000


def test_a_simple_consumer_commits_without_joining(h: Harness) -> None:
    assert h.commit("g", {("orders", 0): 42, ("orders", 5): 7}) == {
        ("orders", 0): E.NONE,
        ("orders", 5): E.NONE,
    }
    assert h.state("g") == "Empty"
    assert h.committed("g", {"orders": [0, 1, 5]}) == {("orders", 0): 42, ("orders", 1): -1, ("orders", 5): 7}
    assert h.committed("g") == {("orders", 0): 42, ("orders", 5): 7}


def test_fetch_for_an_unknown_group_returns_no_offsets(h: Harness) -> None:
    assert h.committed("nobody", {"orders": [0]}) == {("orders", 0): -1}
    assert h.committed("nobody") == {}


def test_commits_to_unknown_topics_or_partitions_are_refused_per_partition(h: Harness) -> None:
    errors = h.commit("g", {("orders", 0): 1, ("orders", 6): 1, ("nope", 0): 1, ("payments", -1): 1})
    assert errors == {
        ("orders", 0): E.NONE,
        ("orders", 6): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): E.UNKNOWN_TOPIC_OR_PARTITION,
        ("payments", -1): E.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert h.committed("g") == {("orders", 0): 1}


def test_members_commit_with_their_generation(h: Harness) -> None:
    generation, members = h.stable_group("g", "a")
    a = members["a"]
    assert h.commit("g", {("orders", 0): 10}, generation=generation, member_id=a) == {("orders", 0): E.NONE}
    assert h.commit("g", {("orders", 0): 11}, generation=generation + 1, member_id=a) == {
        ("orders", 0): E.ILLEGAL_GENERATION
    }
    assert h.commit("g", {("orders", 0): 12}, generation=generation, member_id="x") == {
        ("orders", 0): E.UNKNOWN_MEMBER_ID
    }
    # Committing as a simple consumer while members own the partitions is refused.
    assert h.commit("g", {("orders", 0): 13}) == {("orders", 0): E.UNKNOWN_MEMBER_ID}
    assert h.committed("g") == {("orders", 0): 10}


def test_commits_during_completing_rebalance_are_refused(h: Harness) -> None:
    a, reply = h.join_new("g", client_id="a")
    h.wait_for(reply)
    errors = h.commit("g", {("orders", 0): 1}, generation=reply.body["generation_id"], member_id=a)
    assert errors == {("orders", 0): E.REBALANCE_IN_PROGRESS}


def test_commit_to_a_missing_group_with_a_generation(h: Harness) -> None:
    assert h.commit("g", {("orders", 0): 1}, generation=3, member_id="m", version=8) == {
        ("orders", 0): E.ILLEGAL_GENERATION
    }
    assert h.commit("g", {("orders", 0): 1}, generation=3, member_id="m", version=9) == {
        ("orders", 0): E.GROUP_ID_NOT_FOUND
    }


def test_commit_metadata_size_limit() -> None:
    h = Harness(CoordinatorConfig(offset_metadata_max_bytes=5))
    assert h.commit("g", {("orders", 0): 1}, metadata="12345") == {("orders", 0): E.NONE}
    assert h.commit("g", {("orders", 1): 1}, metadata="123456") == {
        ("orders", 1): E.OFFSET_METADATA_TOO_LARGE
    }
    result = h.coordinator.fetch_offsets("g", [{"name": "orders", "partition_indexes": [0]}])
    assert result["topics"][0]["partitions"][0]["metadata"] == "12345"


def test_a_commit_counts_as_a_heartbeat(h: Harness) -> None:
    generation, members = h.stable_group("g", "a", session_ms=10_000)
    for _ in range(5):
        h.advance(6000)
        assert h.commit("g", {("orders", 0): 1}, generation=generation, member_id=members["a"]) == {
            ("orders", 0): E.NONE
        }
    assert h.heartbeat("g", generation, members["a"]) == E.NONE


def test_failed_appends_are_reported_and_not_applied(h: Harness) -> None:
    h.commit("g", {("orders", 0): 1})
    h.storage.fail = True
    assert h.commit("g", {("orders", 0): 2}) == {("orders", 0): E.NOT_COORDINATOR}
    h.storage.fail = False
    assert h.committed("g") == {("orders", 0): 1}


def test_offset_delete(h: Harness) -> None:
    h.commit("g", {("orders", 0): 1, ("payments", 0): 2})
    error, topics = h.coordinator.delete_offsets(
        "g",
        [
            {"name": "orders", "partitions": [{"partition_index": 0}]},
            {"name": "nope", "partitions": [{"partition_index": 0}]},
        ],
    )
    assert error == E.NONE
    assert {t["name"]: t["partitions"][0]["error_code"] for t in topics} == {
        "orders": E.NONE,
        "nope": E.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert h.committed("g") == {("payments", 0): 2}
    assert h.coordinator.delete_offsets("missing", [])[0] == E.GROUP_ID_NOT_FOUND
    assert h.coordinator.delete_offsets("", [])[0] == E.INVALID_GROUP_ID


def test_offsets_of_subscribed_topics_cannot_be_deleted(h: Harness) -> None:
    generation, members = h.stable_group("g", "a", protocols=[("range", subscription("orders"))])
    h.commit("g", {("orders", 0): 1, ("payments", 0): 1}, generation=generation, member_id=members["a"])
    error, topics = h.coordinator.delete_offsets(
        "g",
        [
            {"name": "orders", "partitions": [{"partition_index": 0}]},
            {"name": "payments", "partitions": [{"partition_index": 0}]},
        ],
    )
    assert {t["name"]: t["partitions"][0]["error_code"] for t in topics} == {
        "orders": E.GROUP_SUBSCRIBED_TO_TOPIC,
        "payments": E.NONE,
    }


def test_offsets_of_a_non_consumer_group_with_members_cannot_be_deleted(h: Harness) -> None:
    h.stable_group("g", "a", protocol_type="connect")
    assert h.coordinator.delete_offsets("g", [])[0] == E.NON_EMPTY_GROUP


def test_offsets_of_an_empty_group_expire_after_retention_and_the_group_goes() -> None:
    h = Harness(
        CoordinatorConfig(offsets_retention_ms=7 * DAY_MS, offsets_retention_check_interval_ms=60_000)
    )
    generation, members = h.stable_group("g", "a")
    h.commit("g", {("orders", 0): 5}, generation=generation, member_id=members["a"])
    h.advance(3 * DAY_MS)  # session long gone: the group is Empty since then
    assert h.state("g") == "Empty"
    assert h.committed("g") == {("orders", 0): 5}
    h.advance(4 * DAY_MS + 120_000)  # retention counts from when the group became Empty
    assert h.committed("g") == {}
    assert h.state("g") == "Dead"
    assert h.coordinator.list_groups([], [])[1] == []


def test_offsets_of_a_stable_group_are_kept_while_subscribed() -> None:
    h = Harness(CoordinatorConfig(offsets_retention_ms=DAY_MS, offsets_retention_check_interval_ms=60_000))
    generation, members = h.stable_group(
        "g", "a", session_ms=1_800_000, protocols=[("range", subscription("orders"))]
    )
    h.commit("g", {("orders", 0): 5, ("payments", 0): 9}, generation=generation, member_id=members["a"])
    for _ in range(75):
        h.advance(20 * 60_000)
        assert h.heartbeat("g", generation, members["a"]) == E.NONE
    # payments is not subscribed: its commit aged out; orders stays.
    assert h.committed("g") == {("orders", 0): 5}


def test_simple_group_offsets_age_from_their_commit() -> None:
    h = Harness(CoordinatorConfig(offsets_retention_ms=DAY_MS, offsets_retention_check_interval_ms=60_000))
    h.commit("g", {("orders", 0): 1})
    h.advance(DAY_MS // 2)
    h.commit("g", {("orders", 1): 1})
    h.advance(DAY_MS // 2 + 60_000)
    assert h.committed("g") == {("orders", 1): 1}


def test_old_clients_retention_time_is_honoured() -> None:
    h = Harness(
        CoordinatorConfig(offsets_retention_ms=7 * DAY_MS, offsets_retention_check_interval_ms=60_000)
    )
    h.commit("g", {("orders", 0): 1}, version=2, retention_ms=120_000)
    h.advance(180_000)
    assert h.committed("g") == {}
