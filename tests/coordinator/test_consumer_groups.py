"""KIP-848 consumer groups: ConsumerGroupHeartbeat, reconciliation, fencing, describe."""

from __future__ import annotations

from coordinator.config import CoordinatorConfig
from tests.coordinator.conftest import Harness
from wire.error_codes import ErrorCode as E


def describe(h: Harness, group: str) -> dict:
    [described] = h.coordinator.consumer_group_describe([group])
    return described


def owners(h: Harness, group: str) -> list[tuple[str, int]]:
    """Every (topic, partition) a member holds (assigned or being revoked), repeats if shared."""
    owned = []
    for member in h.coordinator.consumer.group(group).members.values():
        for assignment in (member.assigned, member.pending_revocation):
            for topic_id, partitions in assignment.items():
                owned += [(h.topics.by_id(topic_id).name, p) for p in partitions]
    return sorted(owned)


def test_a_lone_member_gets_every_partition(h: Harness) -> None:
    response = h.cg_heartbeat("g", "m1", 0)
    assert response["error_code"] == E.NONE
    assert response["member_id"] == "m1"
    assert response["member_epoch"] == 1
    assert response["heartbeat_interval_ms"] == 5000
    assert h.assigned(response) == {"orders": [0, 1, 2, 3, 4, 5]}
    assert describe(h, "g")["group_state"] == "Stable"
    # A heartbeat with nothing new carries no assignment.
    assert h.cg_heartbeat("g", "m1", 1)["assignment"] is None


def test_the_coordinator_picks_a_member_id_when_none_is_given(h: Harness) -> None:
    response = h.cg_heartbeat("g", "", 0)
    assert len(response["member_id"]) >= 22


def test_a_second_member_gets_partitions_only_once_the_first_releases_them(h: Harness) -> None:
    h.cg_heartbeat("g", "m1", 0)
    joined = h.cg_heartbeat("g", "m2", 0)
    assert joined["member_epoch"] == 2
    assert h.assigned(joined) == {}  # its partitions are still m1's
    assert describe(h, "g")["group_state"] == "Reconciling"
    revoke = h.cg_heartbeat("g", "m1", 1, owned={"orders": [0, 1, 2, 3, 4, 5]})
    assert revoke["member_epoch"] == 1  # must give up partitions before moving on
    kept = h.assigned(revoke)["orders"]
    assert len(kept) == 3
    assert owners(h, "g") == [("orders", p) for p in range(6)]
    done = h.cg_heartbeat("g", "m1", 1, owned={"orders": kept})
    assert done["member_epoch"] == 2
    second = h.cg_heartbeat("g", "m2", 2, owned={"orders": []})
    assert second["member_epoch"] == 2
    assert sorted(kept + h.assigned(second)["orders"]) == list(range(6))
    assert describe(h, "g")["group_state"] == "Stable"
    assert owners(h, "g") == [("orders", p) for p in range(6)]


def test_a_leaving_member_hands_its_partitions_over(h: Harness) -> None:
    h.cg_heartbeat("g", "m1", 0)
    h.cg_heartbeat("g", "m2", 0)
    kept = h.assigned(h.cg_heartbeat("g", "m1", 1, owned={"orders": list(range(6))}))["orders"]
    h.cg_heartbeat("g", "m1", 1, owned={"orders": kept})
    h.cg_heartbeat("g", "m2", 2, owned={"orders": []})
    left = h.cg_heartbeat("g", "m2", -1)
    assert (left["error_code"], left["member_epoch"]) == (E.NONE, -1)
    back = h.cg_heartbeat("g", "m1", 2, owned={"orders": kept})
    assert back["member_epoch"] == 3
    assert h.assigned(back) == {"orders": list(range(6))}


def test_a_silent_member_is_fenced_after_its_session_timeout(h: Harness) -> None:
    response = h.cg_heartbeat("g", "m1", 0)
    epoch, owned = response["member_epoch"], h.assigned(response)
    h.cg_heartbeat("g", "m2", 0)
    for _ in range(10):
        h.advance(5000)
        response = h.cg_heartbeat("g", "m1", epoch, owned=owned)
        epoch = response["member_epoch"]
        if response["assignment"] is not None:
            owned = h.assigned(response)
    # m2 never heartbeat again: fenced after 45 s; m1 ends up with everything again.
    assert [m["member_id"] for m in describe(h, "g")["members"]] == ["m1"]
    assert owned == {"orders": list(range(6))}
    assert h.cg_heartbeat("g", "m2", 2)["error_code"] == E.UNKNOWN_MEMBER_ID


def test_a_group_config_sets_its_session_timeout_and_heartbeat_interval(h: Harness) -> None:
    """GROUP config resources (KIP-848): the group's own values win over the broker's."""
    h.coordinator.consumer.group_configs["tuned"] = {
        "consumer.session.timeout.ms": 50_000,
        "consumer.heartbeat.interval.ms": 6000,
    }
    assert h.cg_heartbeat("tuned", "m1", 0)["heartbeat_interval_ms"] == 6000
    assert h.cg_heartbeat("plain", "m1", 0)["heartbeat_interval_ms"] == 5000
    h.advance(47_000)  # past the broker's 45 s: only the plain group's member is gone
    assert [m["member_id"] for m in describe(h, "tuned")["members"]] == ["m1"]
    assert describe(h, "plain")["members"] == []
    h.advance(4000)
    assert describe(h, "tuned")["members"] == []


def test_a_member_that_does_not_revoke_in_time_is_fenced() -> None:
    h = Harness(CoordinatorConfig(consumer_session_timeout_ms=120_000))
    h.cg_heartbeat("g", "m1", 0, rebalance_ms=10_000)
    h.cg_heartbeat("g", "m2", 0)
    h.cg_heartbeat("g", "m1", 1, owned={"orders": list(range(6))})  # told to revoke
    for _ in range(3):
        h.advance(4000)
        h.cg_heartbeat("g", "m1", 1, owned={"orders": list(range(6))})  # but keeps everything
    assert h.cg_heartbeat("g", "m1", 1)["error_code"] == E.UNKNOWN_MEMBER_ID
    assert h.assigned(h.cg_heartbeat("g", "m2", 2, owned={"orders": []})) == {"orders": list(range(6))}


def test_member_epoch_checks(h: Harness) -> None:
    h.cg_heartbeat("g", "m1", 0)
    assert h.cg_heartbeat("g", "m1", 5)["error_code"] == E.FENCED_MEMBER_EPOCH
    h.cg_heartbeat("g", "m2", 0)
    kept = h.assigned(h.cg_heartbeat("g", "m1", 1, owned={"orders": list(range(6))}))["orders"]
    h.cg_heartbeat("g", "m1", 1, owned={"orders": kept})  # now epoch 2, previous 1
    # The response with epoch 2 may have been lost: epoch 1 with a subset is still fine.
    assert h.cg_heartbeat("g", "m1", 1, owned={"orders": kept})["error_code"] == E.NONE
    assert (
        h.cg_heartbeat("g", "m1", 1, owned={"orders": list(range(6))})["error_code"] == E.FENCED_MEMBER_EPOCH
    )
    # Rejoining with epoch 0 is always allowed (KAFKA-19233).
    assert h.cg_heartbeat("g", "m1", 0)["error_code"] == E.NONE


def test_a_static_member_can_leave_for_a_restart_and_come_back_with_its_partitions(h: Harness) -> None:
    first = h.cg_heartbeat("g", "m1", 0, instance="i-1")
    epoch = first["member_epoch"]
    assert h.cg_heartbeat("g", "m1", -2, instance="i-1")["member_epoch"] == -2
    back = h.cg_heartbeat("g", "m1-again", 0, instance="i-1")
    assert back["error_code"] == E.NONE
    assert back["member_epoch"] == epoch  # no rebalance
    assert h.assigned(back) == {"orders": list(range(6))}
    assert h.cg_heartbeat("g", "impostor", 0, instance="i-1")["error_code"] == E.UNRELEASED_INSTANCE_ID
    assert h.cg_heartbeat("g", "m1", epoch, instance="i-1")["error_code"] == E.FENCED_INSTANCE_ID


def test_request_validation(h: Harness) -> None:
    assert h.cg_heartbeat("", "m", 0)["error_code"] == E.INVALID_REQUEST
    assert h.cg_heartbeat("g", "", 3)["error_code"] == E.INVALID_REQUEST
    assert h.cg_heartbeat("g", "m", -5)["error_code"] == E.INVALID_REQUEST
    assert h.cg_heartbeat("g", "m", 0, owned={"orders": [1]})["error_code"] == E.INVALID_REQUEST
    assert h.cg_heartbeat("g", "m", 0, assignor="sticky")["error_code"] == E.UNSUPPORTED_ASSIGNOR
    assert h.cg_heartbeat("g", "m", 0, regex="(")["error_code"] == E.INVALID_REGULAR_EXPRESSION
    assert h.cg_heartbeat("g", "m", 0, instance="")["error_code"] == E.INVALID_REQUEST


def test_group_max_size() -> None:
    h = Harness(CoordinatorConfig(consumer_max_size=1))
    h.cg_heartbeat("g", "m1", 0)
    assert h.cg_heartbeat("g", "m2", 0)["error_code"] == E.GROUP_MAX_SIZE_REACHED


def test_regex_subscriptions_and_the_range_assignor(h: Harness) -> None:
    a = h.cg_heartbeat("g", "a", 0, regex="ord.*|pay.*", assignor="range", topics=None)
    assert h.assigned(a) == {"orders": list(range(6)), "payments": [0, 1, 2]}
    assert describe(h, "g")["assignor_name"] == "range"


def test_new_partitions_trigger_a_new_assignment(h: Harness) -> None:
    h.cg_heartbeat("g", "m1", 0)
    h.topics.topics["orders"].partitions = 8
    response = h.cg_heartbeat("g", "m1", 1)
    assert response["member_epoch"] == 2
    assert h.assigned(response) == {"orders": list(range(8))}


def test_an_unknown_group_makes_members_rejoin(h: Harness) -> None:
    """After a restart the group is unknown (membership is not persisted): rejoin, not fail."""
    assert h.cg_heartbeat("g", "m1", 7)["error_code"] == E.UNKNOWN_MEMBER_ID


def test_offsets_of_consumer_group_members(h: Harness) -> None:
    epoch = h.cg_heartbeat("g", "m1", 0)["member_epoch"]
    assert h.commit("g", {("orders", 0): 3}, generation=epoch, member_id="m1", version=9) == {
        ("orders", 0): E.NONE
    }
    assert h.commit("g", {("orders", 0): 4}, generation=epoch, member_id="m1", version=8) == {
        ("orders", 0): E.UNSUPPORTED_VERSION
    }
    assert h.commit("g", {("orders", 0): 4}, generation=epoch + 1, member_id="m1", version=9) == {
        ("orders", 0): E.STALE_MEMBER_EPOCH
    }
    assert h.commit("g", {("orders", 0): 4}) == {("orders", 0): E.UNKNOWN_MEMBER_ID}
    fetched = h.coordinator.fetch_offsets("g", None, "m1", epoch + 1)
    assert fetched["error_code"] == E.STALE_MEMBER_EPOCH
    assert (
        h.coordinator.fetch_offsets("g", None, "m1", epoch)["topics"][0]["partitions"][0]["committed_offset"]
        == 3
    )
    assert h.committed("g") == {("orders", 0): 3}  # admin tools: no member id


def test_describe_and_list(h: Harness) -> None:
    h.cg_heartbeat("g", "m1", 0)
    h.stable_group("classic", "a")
    described = describe(h, "g")
    assert described["group_state"] == "Stable"
    assert described["assignor_name"] == "uniform"
    [member] = described["members"]
    assert member["member_type"] == 1
    assert member["subscribed_topic_names"] == ["orders"]
    assert member["target_assignment"] == member["assignment"]
    assert describe(h, "classic")["error_code"] == E.GROUP_ID_NOT_FOUND
    listed = {
        g["group_id"]: (g["group_type"], g["group_state"]) for g in h.coordinator.list_groups([], [])[1]
    }
    assert listed == {"g": ("consumer", "Stable"), "classic": ("classic", "Stable")}
    assert [g["group_id"] for g in h.coordinator.list_groups([], ["consumer"])[1]] == ["g"]


def test_protocols_take_over_each_others_empty_groups_and_keep_offsets(h: Harness) -> None:
    h.commit("g", {("orders", 0): 9})  # an Empty (simple) classic group
    assert h.cg_heartbeat("g", "m1", 0)["error_code"] == E.NONE
    assert h.committed("g") == {("orders", 0): 9}
    assert h.join("g").error == E.INCONSISTENT_GROUP_PROTOCOL  # a classic member in a live consumer group
    h.cg_heartbeat("g", "m1", -1)
    assert h.join("g").error == E.MEMBER_ID_REQUIRED  # the Empty consumer group gives way
    assert h.committed("g") == {("orders", 0): 9}


def test_deleting_an_empty_consumer_group(h: Harness) -> None:
    h.cg_heartbeat("g", "m1", 0)
    h.commit("g", {("orders", 1): 1}, generation=1, member_id="m1", version=9)
    assert h.coordinator.delete_groups(["g"])[0]["error_code"] == E.NON_EMPTY_GROUP
    h.cg_heartbeat("g", "m1", -1)
    assert h.coordinator.delete_groups(["g"])[0]["error_code"] == E.NONE
    assert h.committed("g") == {}
    assert describe(h, "g")["error_code"] == E.GROUP_ID_NOT_FOUND
