"""Static members (group.instance.id, KIP-345): restarts without rebalances, fencing."""

from __future__ import annotations

from tests.coordinator.conftest import Harness, subscription
from wire.error_codes import ErrorCode as E


def test_a_static_member_rejoining_within_its_session_keeps_its_assignment(h: Harness) -> None:
    rx = h.join("st", instance="i-x", client_id="x", session_ms=30_000)
    ry = h.join("st", instance="i-y", client_id="y", session_ms=30_000)
    h.wait_for(rx, ry)
    x, y = rx.body["member_id"], ry.body["member_id"]
    assert x.startswith("i-x-") and y.startswith("i-y-")
    gen = rx.body["generation_id"]
    h.sync("st", gen, x, {x: b"px", y: b"py"}, instance="i-x")
    h.sync("st", gen, y, instance="i-y")
    assert h.state("st") == "Stable"

    # y restarts: it lost its member id and joins as unknown with the same instance id.
    h.advance(10_000)
    rejoin = h.join("st", instance="i-y", client_id="y", session_ms=30_000)
    assert rejoin.error == E.NONE
    new_y = rejoin.body["member_id"]
    assert new_y != y
    assert rejoin.body["generation_id"] == gen  # no rebalance
    assert h.state("st") == "Stable"
    assert h.sync("st", gen, new_y, instance="i-y").body["assignment"] == b"py"
    # The old incarnation is fenced.
    assert h.heartbeat("st", gen, y, "i-y") == E.FENCED_INSTANCE_ID
    assert h.heartbeat("st", gen, new_y, "i-y") == E.NONE
    assert h.heartbeat("st", gen, x, "i-x") == E.NONE


def test_a_static_leader_rejoining_with_join_v9_is_told_to_skip_the_assignment(h: Harness) -> None:
    rx = h.join("st", instance="i-x", client_id="x", version=9)
    h.wait_for(rx)
    x, gen = rx.body["member_id"], rx.body["generation_id"]
    h.sync(
        "st", gen, x, {x: b"px"}, instance="i-x", version=5, protocol_type="consumer", protocol_name="range"
    )
    rejoin = h.join("st", instance="i-x", client_id="x", version=9)
    assert rejoin.body["skip_assignment"] is True
    assert rejoin.body["leader"] == rejoin.body["member_id"]
    assert [m["group_instance_id"] for m in rejoin.body["members"]] == ["i-x"]


def test_a_static_member_that_changes_the_group_protocol_triggers_a_rebalance(h: Harness) -> None:
    rx = h.join("st", instance="i-x", client_id="x")
    h.wait_for(rx)
    h.sync("st", rx.body["generation_id"], rx.body["member_id"], {}, instance="i-x")
    rejoin = h.join(
        "st",
        instance="i-x",
        client_id="x",
        protocols=[("roundrobin", subscription("orders")), ("range", b"")],
    )
    assert rejoin.error == E.NONE
    assert rejoin.body["generation_id"] == rx.body["generation_id"] + 1
    assert rejoin.body["protocol_name"] == "roundrobin"


def test_static_members_are_not_dropped_for_missing_a_rebalance_only_for_their_session(h: Harness) -> None:
    rx = h.join("st", instance="i-x", client_id="x", session_ms=60_000, rebalance_ms=10_000)
    ry = h.join("st", instance="i-y", client_id="y", session_ms=60_000, rebalance_ms=10_000)
    h.wait_for(rx, ry)
    x, y, gen = rx.body["member_id"], ry.body["member_id"], rx.body["generation_id"]
    h.sync("st", gen, x, {x: b"px", y: b"py"}, instance="i-x")
    h.sync("st", gen, y, instance="i-y")
    # A dynamic member joins; x rejoins, y (static) does not within the rebalance timeout.
    _, rz = h.join_new("st", client_id="z", session_ms=60_000, rebalance_ms=10_000)
    h.join("st", x, instance="i-x", client_id="x", session_ms=60_000, rebalance_ms=10_000)
    h.advance(10_000)
    assert rz.error == E.NONE
    assert {m["group_instance_id"] for m in h.coordinator.describe_groups(["st"])[0]["members"]} >= {"i-y"}
    h.advance(60_000)  # y's session runs out
    described = h.coordinator.describe_groups(["st"])[0]
    assert "i-y" not in {m["group_instance_id"] for m in described["members"]}


def test_leave_group_by_instance_id_only(h: Harness) -> None:
    rx = h.join("st", instance="i-x", client_id="x")
    h.wait_for(rx)
    h.sync("st", rx.body["generation_id"], rx.body["member_id"], {}, instance="i-x")
    error, results = h.coordinator.leave_group("st", [("", "i-x"), ("", "i-unknown")])
    assert [r["error_code"] for r in results] == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert h.state("st") == "Empty"


def test_wrong_member_id_for_an_instance_is_fenced(h: Harness) -> None:
    rx = h.join("st", instance="i-x", client_id="x")
    h.wait_for(rx)
    gen = rx.body["generation_id"]
    assert h.sync("st", gen, "impostor", instance="i-x").error == E.FENCED_INSTANCE_ID
    assert h.join("st", "impostor", instance="i-x").error == E.FENCED_INSTANCE_ID
    assert h.heartbeat("st", gen, rx.body["member_id"], "i-other") == E.UNKNOWN_MEMBER_ID
