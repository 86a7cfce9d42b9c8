"""JoinGroup/SyncGroup/Heartbeat of dynamic members on a fake clock."""

from __future__ import annotations

from coordinator.config import CoordinatorConfig
from tests.coordinator.conftest import Harness, subscription
from wire.error_codes import ErrorCode as E


def test_first_join_asks_for_a_member_id_then_waits_for_the_initial_delay(h: Harness) -> None:
    first = h.join("g")
    assert first.error == E.MEMBER_ID_REQUIRED
    member_id = first.body["member_id"]
    assert member_id.startswith("client-")
    assert h.state("g") == "Empty"

    second = h.join("g", member_id)
    assert second.body is None  # parked
    assert h.state("g") == "PreparingRebalance"
    h.advance(2999)
    assert second.body is None
    h.advance(1)
    body = second.body
    assert body["error_code"] == E.NONE
    assert body["generation_id"] == 1
    assert body["member_id"] == body["leader"] == member_id
    assert body["protocol_type"] == "consumer"
    assert body["protocol_name"] == "range"
    assert body["members"] == [
        {"member_id": member_id, "group_instance_id": None, "metadata": subscription("orders")}
    ]
    assert h.state("g") == "CompletingRebalance"


def test_old_clients_join_without_the_member_id_round_trip(h: Harness) -> None:
    reply = h.join("g", version=3)
    h.advance(3000)
    assert reply.error == E.NONE
    assert reply.body["generation_id"] == 1


def test_initial_delay_is_extended_while_members_keep_arriving(h: Harness) -> None:
    a, reply_a = h.join_new("g", client_id="a", rebalance_ms=10_000)
    h.advance(2000)
    b, reply_b = h.join_new("g", client_id="b", rebalance_ms=10_000)
    h.advance(1000)  # the first delay ends, but b arrived during it: wait another delay
    assert reply_a.body is None and reply_b.body is None
    h.advance(3000)
    assert reply_a.error == reply_b.error == E.NONE
    assert reply_a.body["generation_id"] == reply_b.body["generation_id"] == 1
    leader = reply_a.body["leader"]
    assert leader == a
    assert {m["member_id"] for m in reply_a.body["members"]} == {a, b}
    assert reply_b.body["members"] == []


def test_initial_delay_never_exceeds_the_rebalance_timeout(h: Harness) -> None:
    replies = []
    for i in range(10):
        replies.append(h.join_new("g", client_id=f"c{i}", rebalance_ms=5000)[1])
        h.advance(1000)
    # 5 s rebalance timeout: the delay is extended at most until then.
    assert all(r.body is not None for r in replies[:5])


def test_sync_hands_every_member_the_leaders_assignment(h: Harness) -> None:
    a, reply_a = h.join_new("g", client_id="a")
    b, reply_b = h.join_new("g", client_id="b")
    h.advance(3000)
    assert reply_a.body is None  # b joined during the initial delay, which starts over
    h.advance(3000)
    generation = reply_a.body["generation_id"]
    follower_sync = h.sync("g", generation, b)
    assert follower_sync.body is None  # waits for the leader
    leader_sync = h.sync("g", generation, a, {a: b"for-a", b: b"for-b"})
    assert leader_sync.body == {
        "error_code": E.NONE,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignment": b"for-a",
    }
    assert follower_sync.body["assignment"] == b"for-b"
    assert h.state("g") == "Stable"
    # A repeated SyncGroup in Stable returns the same assignment.
    assert h.sync("g", generation, b).body["assignment"] == b"for-b"


def test_members_missing_from_the_assignment_get_an_empty_one(h: Harness) -> None:
    a, reply_a = h.join_new("g", client_id="a")
    b, _ = h.join_new("g", client_id="b")
    h.wait_for(reply_a)
    generation = reply_a.body["generation_id"]
    follower = h.sync("g", generation, b)
    h.sync("g", generation, a, {a: b"x"})
    assert follower.body["assignment"] == b""


def test_protocol_selection_prefers_what_most_members_rank_first(h: Harness) -> None:
    _, r1 = h.join_new("g", client_id="a", protocols=[("range", b"1"), ("roundrobin", b"2")])
    h.join_new("g", client_id="b", protocols=[("roundrobin", b"3"), ("range", b"4")])
    h.join_new("g", client_id="c", protocols=[("roundrobin", b"5"), ("sticky", b"6")])
    h.wait_for(r1)
    assert r1.body["protocol_name"] == "roundrobin"  # the only protocol all three support
    assert sorted(m["metadata"] for m in r1.body["members"]) == [b"2", b"3", b"5"]


def test_join_without_a_common_protocol_is_inconsistent(h: Harness) -> None:
    h.join_new("g", client_id="a", protocols=[("range", b"")])
    assert (
        h.join("g", client_id="b", protocols=[("cooperative-sticky", b"")]).error
        == E.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.join("g", client_id="c", protocol_type="connect", protocols=[("range", b"")]).error == (
        E.INCONSISTENT_GROUP_PROTOCOL
    )
    assert h.join("other", protocols=[]).error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join("other2", protocol_type="").error == E.INCONSISTENT_GROUP_PROTOCOL


def test_request_validation(h: Harness) -> None:
    assert h.join("").error == E.INVALID_GROUP_ID
    assert h.join("g", session_ms=5999).error == E.INVALID_SESSION_TIMEOUT
    assert h.join("g", session_ms=1_800_001).error == E.INVALID_SESSION_TIMEOUT
    assert h.join("missing", "some-member").error == E.UNKNOWN_MEMBER_ID


def test_a_new_member_triggers_a_rebalance_of_a_stable_group(h: Harness) -> None:
    generation, members = h.stable_group("g", "a", "b")
    c, reply_c = h.join_new("g", client_id="c")
    assert h.state("g") == "PreparingRebalance"
    assert h.heartbeat("g", generation, members["a"]) == E.REBALANCE_IN_PROGRESS
    assert h.sync("g", generation, members["a"]).error == E.REBALANCE_IN_PROGRESS
    reply_a = h.join("g", members["a"], client_id="a")
    assert reply_a.body is None
    reply_b = h.join("g", members["b"], client_id="b")  # the last one completes the join phase
    for reply in (reply_a, reply_b, reply_c):
        assert reply.error == E.NONE
        assert reply.body["generation_id"] == generation + 1
    assert h.state("g") == "CompletingRebalance"


def test_members_that_do_not_rejoin_within_the_rebalance_timeout_are_dropped(h: Harness) -> None:
    generation, members = h.stable_group("g", "a", "b", rebalance_ms=20_000)
    c, reply_c = h.join_new("g", client_id="c", rebalance_ms=20_000)
    reply_a = h.join("g", members["a"], client_id="a", rebalance_ms=20_000)
    h.advance(5000)
    assert h.heartbeat("g", generation, members["b"]) == E.REBALANCE_IN_PROGRESS  # b is alive but slow
    h.advance(15_000)
    assert reply_a.error == reply_c.error == E.NONE
    assert {m["member_id"] for m in reply_a.body["members"]} == {members["a"], c}
    assert h.heartbeat("g", generation, members["b"]) == E.UNKNOWN_MEMBER_ID


def test_a_member_whose_session_expires_is_removed_and_the_group_rebalances(h: Harness) -> None:
    generation, members = h.stable_group("g", "a", "b", session_ms=10_000)
    h.advance(6000)
    assert h.heartbeat("g", generation, members["a"]) == E.NONE
    h.advance(6000)  # b never heartbeat: its session expired 10 s after the sync
    assert h.heartbeat("g", generation, members["a"]) == E.REBALANCE_IN_PROGRESS
    assert h.heartbeat("g", generation, members["b"]) == E.UNKNOWN_MEMBER_ID
    reply = h.join("g", members["a"], client_id="a")
    assert reply.error == E.NONE
    assert reply.body["generation_id"] == generation + 1
    assert [m["member_id"] for m in reply.body["members"]] == [members["a"]]


def test_a_pending_member_that_never_rejoins_expires(h: Harness) -> None:
    first = h.join("g", session_ms=10_000)
    pending = first.body["member_id"]
    h.advance(10_000)
    assert h.join("g", pending).error == E.UNKNOWN_MEMBER_ID


def test_a_member_that_never_syncs_is_removed_after_the_rebalance_timeout(h: Harness) -> None:
    a, reply_a = h.join_new("g", client_id="a", rebalance_ms=20_000, session_ms=30_000)
    b, reply_b = h.join_new("g", client_id="b", rebalance_ms=20_000, session_ms=30_000)
    h.wait_for(reply_a)
    generation = reply_a.body["generation_id"]
    leader_sync = h.sync("g", generation, a, {a: b"x", b: b"y"})
    assert leader_sync.error == E.NONE
    assert h.heartbeat("g", generation, b) == E.NONE  # b heartbeats but never syncs
    h.advance(20_000)
    assert h.heartbeat("g", generation, b) == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("g", generation, a) == E.REBALANCE_IN_PROGRESS


def test_sync_validation(h: Harness) -> None:
    generation, members = h.stable_group("g", "a")
    a = members["a"]
    assert h.sync("g", generation, "stranger").error == E.UNKNOWN_MEMBER_ID
    assert h.sync("g", generation + 1, a).error == E.ILLEGAL_GENERATION
    assert h.sync("missing", 1, a).error == E.UNKNOWN_MEMBER_ID
    assert (
        h.sync("g", generation, a, version=5, protocol_type="consumer").error == E.INCONSISTENT_GROUP_PROTOCOL
    )
    assert (
        h.sync("g", generation, a, version=5, protocol_type="consumer", protocol_name="roundrobin").error
        == E.INCONSISTENT_GROUP_PROTOCOL
    )
    ok = h.sync("g", generation, a, version=5, protocol_type="consumer", protocol_name="range")
    assert ok.error == E.NONE


def test_heartbeat_validation(h: Harness) -> None:
    generation, members = h.stable_group("g", "a")
    assert h.heartbeat("missing", generation, members["a"]) == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("g", generation, "stranger") == E.UNKNOWN_MEMBER_ID
    assert h.heartbeat("g", generation + 7, members["a"]) == E.ILLEGAL_GENERATION
    assert h.heartbeat("", generation, members["a"]) == E.INVALID_GROUP_ID


def test_followers_rejoining_with_the_same_metadata_do_not_rebalance(h: Harness) -> None:
    generation, members = h.stable_group("g", "a", "b")
    leader = h.coordinator.classic.group("g").leader_id
    follower = next(m for m in members.values() if m != leader)
    reply = h.join("g", follower, client_id="b")
    assert reply.error == E.NONE and reply.body["generation_id"] == generation
    assert h.state("g") == "Stable"
    h.join("g", leader, client_id="a")
    assert h.state("g") == "PreparingRebalance"


def test_changed_metadata_triggers_a_rebalance(h: Harness) -> None:
    generation, members = h.stable_group("g", "a")
    reply = h.join(
        "g", members["a"], client_id="a", protocols=[("range", subscription("orders", "payments"))]
    )
    assert reply.error == E.NONE
    assert reply.body["generation_id"] == generation + 1


def test_leave_group_removes_members_and_rebalances(h: Harness) -> None:
    generation, members = h.stable_group("g", "a", "b", "c")
    error, results = h.coordinator.leave_group(
        "g", [(members["a"], None), ("stranger", None), (members["b"], None)]
    )
    assert error == E.NONE
    assert [r["error_code"] for r in results] == [E.NONE, E.UNKNOWN_MEMBER_ID, E.NONE]
    assert h.state("g") == "PreparingRebalance"
    reply = h.join("g", members["c"], client_id="c")
    assert reply.body["generation_id"] == generation + 1
    assert [m["member_id"] for m in reply.body["members"]] == [members["c"]]
    _, results = h.coordinator.leave_group("missing", [("x", None)])
    assert results[0]["error_code"] == E.UNKNOWN_MEMBER_ID


def test_when_the_last_member_leaves_the_group_becomes_empty(h: Harness) -> None:
    generation, members = h.stable_group("g", "a")
    h.coordinator.leave_group("g", [(members["a"], None)])
    assert h.state("g") == "Empty"
    assert h.coordinator.classic.group("g").generation_id == generation + 1


def test_leaving_while_parked_releases_the_parked_join(h: Harness) -> None:
    generation, members = h.stable_group("g", "a", "b")
    parked = h.join("g", members["a"], client_id="a")
    h.coordinator.leave_group("g", [(members["a"], None)])
    assert parked.error == E.UNKNOWN_MEMBER_ID


def test_group_max_size() -> None:
    h = Harness(CoordinatorConfig(group_max_size=2))
    h.stable_group("g", "a", "b")
    assert h.join("g", client_id="c").error == E.GROUP_MAX_SIZE_REACHED


def test_a_retried_join_releases_the_first_one(h: Harness) -> None:
    a, first = h.join_new("g", client_id="a")
    second = h.join("g", a, client_id="a")
    assert first.error == E.REBALANCE_IN_PROGRESS
    h.advance(3000)
    assert second.error == E.NONE


def test_not_started_coordinator_is_not_available(config: CoordinatorConfig) -> None:
    h = Harness(config, load=False)
    assert h.join("g").error == E.COORDINATOR_NOT_AVAILABLE
    assert h.heartbeat("g", 1, "m") == E.COORDINATOR_NOT_AVAILABLE
