"""Share groups' membership (KIP-932): ShareGroupHeartbeat, the simple assignor, describe."""

from __future__ import annotations

from typing import Any

import pytest

from coordinator.config import CoordinatorConfig
from coordinator.share.group import ShareHeartbeat, simple_assignment
from tests.coordinator.conftest import Harness
from wire.error_codes import ErrorCode as E


def heartbeat(
    h: Harness, group: str, member: str, epoch: int, topics: list[str] | None = None
) -> dict[str, Any]:
    return h.coordinator.share_group_heartbeat(
        ShareHeartbeat(group, member, epoch, None, topics, "client", "/127.0.0.1")
    )


def describe(h: Harness, group: str) -> dict[str, Any]:
    [described] = h.coordinator.share_group_describe([group])
    return described


def test_a_lone_member_gets_every_partition_and_the_group_epoch(h: Harness) -> None:
    joined = heartbeat(h, "g", "m1", 0, ["orders"])
    assert joined["error_code"] == E.NONE
    assert (joined["member_id"], joined["member_epoch"], joined["heartbeat_interval_ms"]) == ("m1", 1, 5000)
    assert h.assigned(joined) == {"orders": [0, 1, 2, 3, 4, 5]}
    # Nothing changed: no assignment in the answer, the same epoch.
    again = heartbeat(h, "g", "m1", 1)
    assert (again["member_epoch"], again["assignment"]) == (1, None)
    described = describe(h, "g")
    assert (described["group_state"], described["assignor_name"], described["group_epoch"]) == (
        "Stable",
        "simple",
        1,
    )
    assert described["members"][0]["assignment"]["topic_partitions"][0]["topic_name"] == "orders"


def test_members_share_a_partition_when_they_outnumber_the_partitions(h: Harness) -> None:
    for member in ["a", "b", "c", "d"]:
        heartbeat(h, "g", member, 0, ["payments"])
    # Each member's next heartbeat takes the latest target at once (no revocation step).
    assigned = {m: h.assigned(heartbeat(h, "g", m, 0, ["payments"])) for m in ["a", "b", "c", "d"]}
    assert all(len(a["payments"]) == 1 for a in assigned.values())
    assert sorted(a["payments"][0] for a in assigned.values()) == [0, 0, 1, 2]


def test_a_new_member_changes_the_others_assignment_on_their_next_heartbeat(h: Harness) -> None:
    first = heartbeat(h, "g", "m1", 0, ["orders"])
    second = heartbeat(h, "g", "m2", 0, ["orders"])
    assert second["member_epoch"] == 2 and len(h.assigned(second)["orders"]) == 3
    moved = heartbeat(h, "g", "m1", first["member_epoch"])
    assert moved["member_epoch"] == 2
    assert sorted(h.assigned(moved)["orders"] + h.assigned(second)["orders"]) == list(range(6))


def test_wrong_epochs_unknown_members_and_invalid_requests_are_refused_as_kafka_does(h: Harness) -> None:
    heartbeat(h, "g", "m1", 0, ["orders"])
    assert heartbeat(h, "g", "m1", 7)["error_code"] == E.FENCED_MEMBER_EPOCH
    assert heartbeat(h, "g", "stranger", 1)["error_code"] == E.UNKNOWN_MEMBER_ID
    assert heartbeat(h, "g", "", 0, ["orders"])["error_code"] == E.INVALID_REQUEST
    assert heartbeat(h, "g", "m2", 0, [])["error_code"] == E.INVALID_REQUEST
    assert heartbeat(h, "g", "m2", -2)["error_code"] == E.INVALID_REQUEST
    assert heartbeat(h, "", "m2", 0, ["orders"])["error_code"] == E.INVALID_REQUEST


def test_a_consumer_group_id_is_not_a_share_group(h: Harness) -> None:
    h.cg_heartbeat("taken", "c1", 0)
    assert heartbeat(h, "taken", "m1", 0, ["orders"])["error_code"] == E.GROUP_ID_NOT_FOUND
    assert describe(h, "taken")["error_code"] == E.GROUP_ID_NOT_FOUND
    assert h.coordinator.consumer_group_describe(["taken"])[0]["error_code"] == E.NONE


@pytest.mark.parametrize("config", [CoordinatorConfig(share_max_size=2)])
def test_the_group_size_is_bounded(h: Harness) -> None:
    heartbeat(h, "g", "m1", 0, ["orders"])
    heartbeat(h, "g", "m2", 0, ["orders"])
    assert heartbeat(h, "g", "m3", 0, ["orders"])["error_code"] == E.GROUP_MAX_SIZE_REACHED
    assert heartbeat(h, "g", "m2", 0, ["orders"])["error_code"] == E.NONE  # a member rejoining is not new


def test_leaving_and_timing_out_remove_members_and_listing_shows_the_type(h: Harness) -> None:
    heartbeat(h, "g", "m1", 0, ["orders"])
    heartbeat(h, "g", "m2", 0, ["orders"])
    left = heartbeat(h, "g", "m1", -1)
    assert (left["error_code"], left["member_epoch"]) == (E.NONE, -1)
    h.advance(45_001)  # m2's session timeout
    assert describe(h, "g")["group_state"] == "Empty"
    _error, listed = h.coordinator.list_groups([], ["share"])
    assert [(g["group_id"], g["group_type"], g["protocol_type"], g["group_state"]) for g in listed] == [
        ("g", "share", "share", "Empty")
    ]
    assert h.coordinator.delete_groups(["g"])[0]["error_code"] == E.NONE


def test_a_share_group_has_no_committed_offsets(h: Harness) -> None:
    heartbeat(h, "g", "m1", 0, ["orders"])
    fetched = h.coordinator.fetch_offsets("g", None)
    assert fetched["error_code"] == E.GROUP_ID_NOT_FOUND
    assert h.coordinator.delete_groups(["g"])[0]["error_code"] == E.NON_EMPTY_GROUP


def test_simple_assignment_covers_every_partition_and_every_member() -> None:
    topic = b"t" * 16
    many = simple_assignment(["a", "b"], {topic: 5})
    assert sorted(p for a in many.values() for p in a[topic]) == [0, 1, 2, 3, 4]
    assert sorted(len(a[topic]) for a in many.values()) == [2, 3]
    crowd = simple_assignment([f"m{i}" for i in range(7)], {topic: 3})
    assert all(len(a[topic]) == 1 for a in crowd.values())
    assert sorted(next(iter(a[topic])) for a in crowd.values()) == [0, 0, 0, 1, 1, 2, 2]
    assert simple_assignment(["a"], {}) == {"a": {}}
