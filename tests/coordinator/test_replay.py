"""Restart: everything the coordinator knows comes back from ``__consumer_offsets``."""

from __future__ import annotations

from coordinator.classic_protocol import JoinRequest
from coordinator.config import CoordinatorConfig
from coordinator.coordinator import GroupCoordinator, StoredRecord
from coordinator.records import MemberIdentity
from tests.coordinator.conftest import FakeClock, Harness, MemoryStorage, Topics
from wire.error_codes import ErrorCode as E


def test_committed_offsets_survive_a_restart(h: Harness) -> None:
    h.commit("g", {("orders", 0): 42, ("orders", 1): 7})
    h.commit("g", {("orders", 0): 43}, metadata="note")
    after = h.restart()
    assert after.committed("g") == {("orders", 0): 43, ("orders", 1): 7}
    assert after.state("g") == "Empty"


def test_a_stable_group_resumes_after_a_restart_without_rebalancing(h: Harness) -> None:
    generation, members = h.stable_group("g", "a", "b", session_ms=10_000)
    after = h.restart()
    assert after.state("g") == "Stable"
    # Members keep heartbeating with the same generation and get the same assignment.
    assert after.heartbeat("g", generation, members["a"]) == E.NONE
    assert after.sync("g", generation, members["b"]).body["assignment"] == b"assignment-of-b"
    # A member that does not come back is expired by its session timeout.
    for _ in range(3):
        after.advance(6000)
        assert after.heartbeat("g", generation, members["a"]) in (E.NONE, E.REBALANCE_IN_PROGRESS)
    assert after.heartbeat("g", generation, members["b"]) == E.UNKNOWN_MEMBER_ID


def test_generations_continue_after_a_restart(h: Harness) -> None:
    generation, members = h.stable_group("g", "a")
    h.coordinator.leave_group("g", [(members["a"], None)])
    after = h.restart()
    _, reply = after.join_new("g", client_id="a")
    after.wait_for(reply)
    assert reply.body["generation_id"] == generation + 2


def test_static_members_survive_a_restart(h: Harness) -> None:
    rx = h.join("st", instance="i-x", client_id="x")
    h.wait_for(rx)
    x, gen = rx.body["member_id"], rx.body["generation_id"]
    h.sync("st", gen, x, {x: b"px"}, instance="i-x")
    after = h.restart()
    rejoin = after.join("st", instance="i-x", client_id="x")
    assert rejoin.error == E.NONE
    assert rejoin.body["generation_id"] == gen
    assert after.sync("st", gen, rejoin.body["member_id"], instance="i-x").body["assignment"] == b"px"


def test_requests_before_and_during_loading() -> None:
    storage = MemoryStorage()
    coordinator = GroupCoordinator(CoordinatorConfig(), storage, Topics(orders=1), FakeClock())
    assert coordinator.fetch_offsets("g", None)["error_code"] == E.COORDINATOR_NOT_AVAILABLE
    partition = coordinator.partition_for("g")
    other = (partition + 1) % coordinator.config.offsets_topic_partitions
    coordinator.load_partition(other)
    assert coordinator.fetch_offsets("g", None)["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
    assert coordinator.heartbeat("g", 1, "m", None) == E.NONE  # answered blindly while loading
    replies: list = []
    request = JoinRequest(
        "g", MemberIdentity("", None, "c", "h", 10_000, 10_000), "consumer", [("r", b"")], 5
    )
    coordinator.join_group(request, replies.append)
    assert replies[0]["error_code"] == E.COORDINATOR_LOAD_IN_PROGRESS
    assert coordinator.list_groups([], [])[0] == E.COORDINATOR_LOAD_IN_PROGRESS
    coordinator.load_partition(partition)
    assert coordinator.fetch_offsets("g", None)["error_code"] == E.NONE


def test_undecodable_records_are_skipped(h: Harness) -> None:
    h.commit("g", {("orders", 0): 1})
    partition = h.coordinator.partition_for("g")
    h.storage.partitions[partition].insert(0, StoredRecord(b"\x00\x63garbage", b"x"))
    assert h.restart().committed("g") == {("orders", 0): 1}


def test_offsets_of_a_group_that_switched_protocol_survive_a_restart(h: Harness) -> None:
    h.commit("g", {("orders", 0): 9})
    h.cg_heartbeat("g", "m1", 0)  # a consumer group takes over the Empty classic group
    h.commit("g", {("orders", 0): 10}, generation=1, member_id="m1", version=9)
    after = h.restart()
    assert after.committed("g") == {("orders", 0): 10}
    assert after.state("g") == "Empty"


def test_a_cluster_member_leading_no_offsets_partition_lists_no_group() -> None:
    """A broker of a cluster that leads none of __consumer_offsets' partitions answers ListGroups
    with an empty list, as Kafka's does, and NOT_COORDINATOR for a group's own requests."""
    coordinator = GroupCoordinator(CoordinatorConfig(), MemoryStorage(), Topics(orders=1), FakeClock())
    coordinator.own_claimed_partitions_only()
    assert coordinator.list_groups([], []) == (E.NONE, [])
    assert coordinator.fetch_offsets("g", None)["error_code"] == E.NOT_COORDINATOR
