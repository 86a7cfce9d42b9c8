"""Streams groups in ``__consumer_offsets`` (KIP-1071's records): a coordinator restarted over the
same storage serves the group where it was, and a deleted group leaves only tombstones."""

from __future__ import annotations

from typing import Any

from coordinator.coordinator import StoredRecord
from coordinator.streams.records import STREAMS_RECORD_TYPES
from tests.coordinator.conftest import Harness
from tests.coordinator.test_streams_groups import create_internal_topics, heartbeat, tasks
from wire import stored_records
from wire.error_codes import ErrorCode as E


def streams_records(h: Harness) -> list[StoredRecord]:
    return [
        r
        for records in h.storage.partitions.values()
        for r in records
        if isinstance(r, StoredRecord) and stored_records.read_prefix(r.key) in STREAMS_RECORD_TYPES
    ]


def stable_pair(h: Harness) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two members that share the word count's twelve tasks, each reconciled (Stable)."""
    create_internal_topics(h)
    a = heartbeat(h, "a", 0, client_tags=(("zone", "z1"),), user_endpoint=("host-a", 7001))
    b = heartbeat(h, "b", 0)
    for _ in range(3):  # give up what moves, then take the rest
        a = heartbeat(h, "a", a["member_epoch"], tasks(a) if a["active_tasks"] is not None else None)
        b = heartbeat(h, "b", b["member_epoch"], tasks(b) if b["active_tasks"] is not None else None)
    [described] = h.coordinator.streams_group_describe(["app"])
    assert described["group_state"] == "Stable"
    return a, b


def test_a_restarted_coordinator_serves_the_group_where_it_was(h: Harness) -> None:
    stable_pair(h)
    [before] = h.coordinator.streams_group_describe(["app"])

    restarted = h.restart()
    [after] = restarted.coordinator.streams_group_describe(["app"])
    assert after == before  # epochs, topology, members with their tasks, targets, process ids
    member_a = next(m for m in after["members"] if m["member_id"] == "a")
    assert member_a["client_tags"] == [{"key": "zone", "value": "z1"}]
    assert member_a["user_endpoint"] == {"host": "host-a", "port": 7001}

    # The members go on with their epochs: no rejoin, no task moves.
    for member in after["members"]:
        active = {t["subtopology_id"]: t["partitions"] for t in member["assignment"]["active_tasks"]}
        answer = heartbeat(restarted, member["member_id"], member["member_epoch"], active)
        assert answer["error_code"] == E.NONE
        assert answer["member_epoch"] == member["member_epoch"]


def test_a_member_that_does_not_come_back_is_fenced_and_that_is_written(h: Harness) -> None:
    stable_pair(h)
    restarted = h.restart()
    restarted.advance(restarted.coordinator.config.streams_session_timeout_ms + 1)
    [described] = restarted.coordinator.streams_group_describe(["app"])
    assert described["group_state"] == "Empty"

    again = restarted.restart()
    [reloaded] = again.coordinator.streams_group_describe(["app"])
    assert reloaded["members"] == [] and reloaded["group_epoch"] == described["group_epoch"]


def test_a_heartbeat_that_changes_nothing_writes_nothing(h: Harness) -> None:
    a, b = stable_pair(h)
    written = len(streams_records(h))
    heartbeat(h, "a", a["member_epoch"], tasks(a) if a["active_tasks"] else None)
    assert len(streams_records(h)) == written


def test_a_deleted_group_leaves_only_tombstones(h: Harness) -> None:
    stable_pair(h)
    for member in ("a", "b"):
        heartbeat(h, member, -1)
    [result] = h.coordinator.delete_groups(["app"])
    assert result["error_code"] == E.NONE

    restarted = h.restart()
    assert not restarted.coordinator.has_group("app")
    last: dict[bytes, bytes | None] = {}
    for record in streams_records(h):
        last[record.key] = record.value
    assert last and all(value is None for value in last.values())


def test_a_storage_failure_fails_the_heartbeat_and_is_written_by_the_next(h: Harness) -> None:
    create_internal_topics(h)
    h.storage.fail = True
    refused = heartbeat(h, "a", 0)
    assert refused["error_code"] == E.NOT_COORDINATOR
    h.storage.fail = False
    joined = heartbeat(h, "a", 0)
    assert joined["error_code"] == E.NONE
    [described] = h.restart().coordinator.streams_group_describe(["app"])
    assert [m["member_id"] for m in described["members"]] == ["a"]
