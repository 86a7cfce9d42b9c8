"""DescribeGroups, ListGroups and DeleteGroups."""

from __future__ import annotations

from tests.coordinator.conftest import Harness, subscription
from wire.error_codes import ErrorCode as E


def test_describe_a_stable_group(h: Harness) -> None:
    generation, members = h.stable_group("g", "a", "b")
    [described] = h.coordinator.describe_groups(["g"])
    assert described["error_code"] == E.NONE
    assert described["group_state"] == "Stable"
    assert described["protocol_type"] == "consumer"
    assert described["protocol_data"] == "range"
    by_client = {m["client_id"]: m for m in described["members"]}
    assert by_client["a"]["member_id"] == members["a"]
    assert by_client["a"]["member_metadata"] == subscription("orders")
    assert by_client["b"]["member_assignment"] == b"assignment-of-b"
    assert by_client["a"]["client_host"] == "/127.0.0.1"


def test_describe_a_rebalancing_group_hides_member_metadata(h: Harness) -> None:
    _, reply = h.join_new("g", client_id="a")
    [described] = h.coordinator.describe_groups(["g"])
    assert described["group_state"] == "PreparingRebalance"
    assert described["protocol_data"] == ""
    assert described["members"][0]["member_metadata"] == b""


def test_describe_an_unknown_group_says_dead(h: Harness) -> None:
    [described] = h.coordinator.describe_groups(["nobody"])
    assert described["error_code"] == E.NONE
    assert described["group_state"] == "Dead"
    assert described["members"] == []


def test_describe_groups_v6_says_an_unknown_group_is_not_found(h: Harness) -> None:
    [described] = h.coordinator.describe_groups(["nobody"], missing_is_error=True)
    assert (described["error_code"], described["error_message"]) == (
        E.GROUP_ID_NOT_FOUND,
        "Group nobody not found.",
    )


def test_list_groups_with_state_and_type_filters(h: Harness) -> None:
    h.stable_group("busy", "a")
    h.commit("idle", {("orders", 0): 1})
    error, groups = h.coordinator.list_groups([], [])
    assert error == E.NONE
    assert sorted((g["group_id"], g["group_state"], g["protocol_type"], g["group_type"]) for g in groups) == [
        ("busy", "Stable", "consumer", "classic"),
        ("idle", "Empty", "", "classic"),
    ]
    assert [g["group_id"] for g in h.coordinator.list_groups(["stable"], [])[1]] == ["busy"]
    assert [g["group_id"] for g in h.coordinator.list_groups(["EMPTY", "Dead"], [])[1]] == ["idle"]
    assert h.coordinator.list_groups([], ["consumer"])[1] == []
    assert len(h.coordinator.list_groups([], ["Classic"])[1]) == 2


def test_delete_groups(h: Harness) -> None:
    h.stable_group("busy", "a")
    h.commit("idle", {("orders", 0): 1, ("payments", 2): 3})
    results = h.coordinator.delete_groups(["idle", "busy", "nobody"])
    assert [(r["group_id"], r["error_code"]) for r in results] == [
        ("idle", E.NONE),
        ("busy", E.NON_EMPTY_GROUP),
        ("nobody", E.GROUP_ID_NOT_FOUND),
    ]
    assert h.committed("idle") == {}
    assert h.state("idle") == "Dead"
    # The deletion is durable.
    assert h.restart().committed("idle") == {}
